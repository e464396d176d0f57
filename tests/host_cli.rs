//! `hookline run` as a user runs it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

fn hookline(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hookline"))
        .args(args)
        // No plugins on disk: the bundled demo plugins run (not the developer's own plugins).
        .env("HOOKLINE_HOME", "/nonexistent/hookline-home")
        .output()
        .unwrap()
}

#[test]
fn run_plays_the_bundled_demo_in_human_form() {
    let out = hookline(&["run"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    for expected in [
        "== session s1 started",
        "note: Plugin 'operator-tools' registered a raw hook.",
        "note: Plugin hook 'flaky' user-message was skipped: flaky is offline.",
        "user> Please read notes.txt, my [password redacted]",
        "hook rebuild_model: changed by operator-tools",
        "hook rewrite_approval: changed by operator-tools",
        "note: Plugin images were ignored because this turn returns text only.",
        "note: Raw hook 'operator-tools' changed this model request. The failure may be related.",
        "hook rewrite_compaction: changed by operator-tools",
        "model (side)> A scripted one.",
        // SPEC G: the demo's gateway-audit plugin and the host's producers.
        "gateway event gateway:startup (awaited, 0 handler calls)",
        "note: Plugin 'gateway-audit' subscribes to 'session:compact', which the gateway never emits.",
        "bootstrap files: AGENTS.md (20 chars), SOUL.md (missing)",
        "AUDIT.md (43 chars)",
        "gateway event session:compact:before (awaited, 0 handler calls)",
        "gateway event session:compact:after (awaited, 1 handler call)",
        "gateway event command:reset (awaited, 1 handler call)",
        "gateway event session:patch (queued)",
        "gateway event message:transcribed (queued)",
        "gateway event acme:deployed (awaited, 1 handler call)",
        "-- Session s6 was reset automatically (idle).",
        "gateway event session:auto-reset (detached)",
        "gateway event command:stop (awaited, 1 handler call)",
        "gateway event gateway:shutdown (bounded)",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    // SPEC P3.13: the last line about sessions is the end of the one still open.
    let last_session_line = text.lines().rfind(|l| l.starts_with("== session")).unwrap();
    assert!(
        last_session_line.starts_with("== session s7 ended"),
        "{last_session_line}"
    );
}

#[test]
fn run_json_reports_requests_records_archive_notes_tools_and_approvals() {
    let out = hookline(&["run", "--json"]);
    assert!(out.status.success());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["requests"].as_array().unwrap().len(), 15);
    assert_eq!(report["toolExecutions"].as_array().unwrap().len(), 4);
    assert_eq!(report["approvals"].as_array().unwrap().len(), 5);
    assert_eq!(report["approvals"][2]["decision"], "deny");
    let sessions = report["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 7);
    assert!(sessions[0]["archive"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["kind"] == "compaction"));
    assert!(report["notes"].as_array().unwrap().len() >= 4);
    // Event notes are archived like other notes and reported in `notes`.
    let unknown =
        "Plugin 'gateway-audit' subscribes to 'session:compact', which the gateway never emits.";
    assert!(report["notes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n == unknown));
    assert!(sessions[0]["archive"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e.to_string().contains("session:compact")));
    let events = report["events"].as_array().unwrap();
    assert!(events
        .iter()
        .any(|e| e["event"] == "gateway-event" && e["key"] == "command:reset" && e["calls"] == 1));
}

#[test]
fn a_bad_scenario_exits_2_naming_the_file_and_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "unknown.json",
            r#"{"steps": [{"shout": "hi"}]}"#,
            "unknown field `shout`",
        ),
        ("json.json", "{ not json", "bad JSON"),
        (
            "tool.json",
            r#"{"steps": [{"user": "x", "replies": [{"toolCalls": [{"id": "1", "name": "nope"}]}]}]}"#,
            "step 1: the tool 'nope' does not exist",
        ),
        (
            "command.json",
            r#"{"steps": [{"command": "/nwe"}]}"#,
            "step 1: unknown command '/nwe'",
        ),
    ];
    for (name, body, problem) in cases {
        let file = dir.path().join(name);
        std::fs::write(&file, body).unwrap();
        let out = hookline(&["run", file.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2), "{name}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(
            err.contains(file.to_str().unwrap()) && err.contains(problem),
            "{name}: {err}"
        );
        assert!(!err.contains("panicked"));
    }
    let out = hookline(&["run", dir.path().join("missing.json").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
}

/// `run` says when it falls back to the bundled demo plugins (issue 46 item 6), in one line on
/// stderr naming where it looked; with `--no-demo-plugins` nothing is said. `--plugins DIR` is
/// the plugin directory (issue 46 item 4); `--user-dir`, its old spelling, says it is
/// deprecated.
#[test]
fn run_says_when_it_falls_back_to_the_demo_plugins() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let workspace = dir.path().to_str().unwrap();
    let out = hookline(&[
        "run",
        "--plugins",
        plugins.to_str().unwrap(),
        "--workspace",
        workspace,
    ]);
    assert!(out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        stderr,
        format!(
            "hookline run: no plugin found in {} and {}; running the bundled demo plugins \
             (--no-demo-plugins runs none).\n",
            plugins.display(),
            dir.path().join(".hookline/plugins").display()
        )
    );
    let scenario = dir.path().join("hi.json");
    std::fs::write(
        &scenario,
        r#"{"steps": [{"user": "hi", "replies": [{"text": "hello"}]}]}"#,
    )
    .unwrap();
    let quiet = hookline(&[
        "run",
        scenario.to_str().unwrap(),
        "--no-demo-plugins",
        "--workspace",
        workspace,
    ]);
    assert!(quiet.status.success(), "{quiet:?}");
    assert!(
        quiet.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&quiet.stderr)
    );
    let old = hookline(&[
        "run",
        "--user-dir",
        plugins.to_str().unwrap(),
        "--workspace",
        workspace,
    ]);
    assert!(old.status.success());
    let stderr = String::from_utf8(old.stderr).unwrap();
    assert!(
        stderr.starts_with(&format!(
            "hookline run: `--user-dir {0}` is deprecated; use `--plugins {0}`.\n",
            plugins.display()
        )),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 2, "{stderr}");
}

/// The help names every language `new plugin` takes (issue 46 item 4).
#[test]
fn new_help_names_every_language() {
    for (args, expected) in [
        (&["--help"][..], "python|node|rust|c|zig"),
        (&["new", "--help"], "(python, node, rust, c, zig)"),
        (&["new", "plugin", "--help"], "python, node, rust, c, zig"),
    ] {
        let out = hookline(args);
        let text = String::from_utf8(out.stdout).unwrap();
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains(expected), "{args:?} lacks {expected}: {text}");
    }
}
