//! External tools (issue 4 item 3, issue 8 items 2 and 4): manifests in a tools directory,
//! JSON arguments on stdin, JSON `{text, success}` on stdout, a timeout, bounded output, an
//! allowlisted environment, and bad manifests skipped with a problem naming the directory.
//! The tools are small shell scripts written into temporary directories.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hookline::host::tools::external::MAX_STDOUT_BYTES;
use hookline::host::tools::{ToolContext, ToolOutput, ToolRegistry};
use hookline::messages::approval::{Authority, Risk};
use hookline::messages::tool::ToolProvider;
use serde_json::{json, Value};

/// Writes `<tools>/<dir>/tool.json` and an executable `run.sh` holding `script`.
fn tool(tools: &Path, dir: &str, manifest: Value, script: &str) -> PathBuf {
    let dir = tools.join(dir);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("tool.json"), manifest.to_string()).unwrap();
    let script_path = dir.join("run.sh");
    fs::write(&script_path, format!("#!/bin/sh\n{script}\n")).unwrap();
    fs::set_permissions(&script_path, fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn manifest(name: &str, timeout_ms: u64) -> Value {
    json!({"name": name, "description": "A test tool.", "command": "run.sh",
           "risk": "execute", "authority": "host", "timeout_ms": timeout_ms})
}

/// Loads `tools` into a fresh registry; fails the test on any problem.
fn load(tools: &Path) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    let problems = registry.load_external(tools);
    assert!(problems.is_empty(), "{problems:?}");
    registry
}

async fn call(registry: &ToolRegistry, name: &str, arguments: Value) -> ToolOutput {
    let workspace = tempfile::tempdir().unwrap();
    let cx = ToolContext {
        workspace_root: workspace.path().to_path_buf(),
        session_id: "s1".into(),
        approval_mode: Default::default(),
    };
    registry.get(name).unwrap().run(&cx, arguments).await
}

#[tokio::test]
async fn a_tool_gets_its_arguments_on_stdin_and_answers_on_stdout() {
    let tools = tempfile::tempdir().unwrap();
    // Echoes its stdin, its working directory and two environment probes inside the answer.
    let script = r#"args=$(cat)
printf '{"text": "args=%s cwd=%s cargo=%s tool=%s", "success": true}' \
  "$(echo "$args" | sed 's/"/\\"/g')" "$(pwd)" "${CARGO_MANIFEST_DIR:-unset}" "$HOOKLINE_TOOL_NAME""#;
    let dir = tool(tools.path(), "echo", manifest("echo", 10_000), script);
    let registry = load(tools.path());

    let spec = registry.specs().next().unwrap();
    assert_eq!(
        (spec.name.as_str(), spec.provider),
        ("echo", ToolProvider::External)
    );
    assert_eq!(
        (spec.risk, spec.authority),
        (Risk::Execute, Authority::Host)
    );

    let out = call(&registry, "echo", json!({"n": 1})).await;
    assert!(out.success, "{out:?}");
    assert!(out.text.contains(r#"args={"n":1}"#), "{}", out.text);
    let cwd = fs::canonicalize(dir).unwrap();
    assert!(
        out.text.contains(&format!("cwd={}", cwd.display())),
        "{}",
        out.text
    );
    assert!(out.text.contains("tool=echo"), "{}", out.text);
    // cargo sets CARGO_MANIFEST_DIR for this test process; it is not on the allowlist.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    assert!(
        out.text.contains("cargo=unset"),
        "the host's environment leaked: {}",
        out.text
    );
}

#[tokio::test]
async fn a_tool_may_answer_failure_and_a_failed_exit_is_a_failure() {
    let tools = tempfile::tempdir().unwrap();
    tool(
        tools.path(),
        "no",
        manifest("no", 10_000),
        r#"echo '{"text": "nope", "success": false}'"#,
    );
    tool(
        tools.path(),
        "crash",
        manifest("crash", 10_000),
        "echo 'it broke' >&2; exit 3",
    );
    let registry = load(tools.path());
    let out = call(&registry, "no", json!({})).await;
    assert_eq!((out.success, out.text.as_str()), (false, "nope"));
    let out = call(&registry, "crash", json!({})).await;
    assert!(
        !out.success && out.text.contains("it broke") && out.text.contains('3'),
        "{out:?}"
    );
}

#[tokio::test]
async fn output_that_is_not_the_protocol_is_a_failure() {
    let tools = tempfile::tempdir().unwrap();
    tool(
        tools.path(),
        "bad",
        manifest("bad", 10_000),
        "echo 'this is not json'",
    );
    tool(
        tools.path(),
        "shape",
        manifest("shape", 10_000),
        r#"echo '{"text": 5}'"#,
    );
    let registry = load(tools.path());
    for name in ["bad", "shape"] {
        let out = call(&registry, name, json!({})).await;
        assert!(!out.success, "{out:?}");
        assert!(
            out.text
                .contains("not {\"text\": string, \"success\": bool}"),
            "{}",
            out.text
        );
    }
}

#[tokio::test]
async fn a_tool_past_its_timeout_is_killed_with_what_it_started() {
    let tools = tempfile::tempdir().unwrap();
    let marker = tools.path().join("still-running");
    // The background child would write the marker after 2 s if the process group survived.
    let script = format!("(sleep 2; touch '{}') & sleep 30", marker.display());
    tool(tools.path(), "slow", manifest("slow", 300), &script);
    let registry = load(tools.path());
    let started = Instant::now();
    let out = call(&registry, "slow", json!({})).await;
    assert!(
        !out.success && out.text.contains("did not answer within 300 ms"),
        "{out:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "took {:?}",
        started.elapsed()
    );
    // Not synchronisation: waiting past the moment a surviving child would have acted.
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        !marker.exists(),
        "a process the tool started outlived the timeout"
    );
}

#[tokio::test]
async fn an_output_flood_is_stopped_at_the_cap() {
    let tools = tempfile::tempdir().unwrap();
    tool(
        tools.path(),
        "flood",
        manifest("flood", 30_000),
        "exec yes flood",
    );
    let registry = load(tools.path());
    let started = Instant::now();
    let out = call(&registry, "flood", json!({})).await;
    assert!(!out.success, "{out:?}");
    assert!(
        out.text
            .contains(&format!("more than {MAX_STDOUT_BYTES} bytes")),
        "{}",
        out.text
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "stopped at the cap, not the timeout"
    );
}

#[tokio::test]
async fn a_stderr_flood_neither_blocks_nor_fails_the_tool() {
    let tools = tempfile::tempdir().unwrap();
    let script = r#"head -c 3000000 /dev/zero >&2; echo '{"text": "done", "success": true}'"#;
    tool(tools.path(), "noisy", manifest("noisy", 20_000), script);
    let out = call(&load(tools.path()), "noisy", json!({})).await;
    assert_eq!((out.success, out.text.as_str()), (true, "done"));
}

#[tokio::test]
async fn a_tool_that_ignores_large_arguments_still_answers() {
    let tools = tempfile::tempdir().unwrap();
    tool(
        tools.path(),
        "deaf",
        manifest("deaf", 10_000),
        r#"echo '{"text": "ok", "success": true}'"#,
    );
    let big = "z".repeat(2_000_000);
    let out = call(&load(tools.path()), "deaf", json!({ "big": big })).await;
    assert_eq!((out.success, out.text.as_str()), (true, "ok"));
}

#[tokio::test]
async fn a_command_that_vanished_after_loading_is_a_failure() {
    let tools = tempfile::tempdir().unwrap();
    let dir = tool(tools.path(), "gone", manifest("gone", 10_000), "true");
    let registry = load(tools.path());
    fs::remove_file(dir.join("run.sh")).unwrap();
    let out = call(&registry, "gone", json!({})).await;
    assert!(
        !out.success && out.text.contains("could not start"),
        "{out:?}"
    );
}

#[test]
fn bad_manifests_are_skipped_with_a_problem_naming_the_directory() {
    let tools = tempfile::tempdir().unwrap();
    let t = tools.path();
    let ok = r#"echo '{"text": "", "success": true}'"#;
    tool(t, "good", manifest("good", 1000), ok);
    let mut cases: Vec<(&str, &str)> = Vec::new();
    let mut add = |dir: &'static str, manifest: Value, expect: &'static str| {
        tool(t, dir, manifest, ok);
        cases.push((dir, expect));
    };
    add(
        "missing-cmd",
        json!({"name": "m", "description": "", "command": "nope.sh", "risk": "read", "authority": "workspace"}),
        "does not exist",
    );
    add(
        "escape",
        json!({"name": "e", "description": "", "command": "../good/run.sh", "risk": "read", "authority": "workspace"}),
        "outside the tool's directory",
    );
    add(
        "absolute",
        json!({"name": "a", "description": "", "command": "/bin/sh", "risk": "read", "authority": "workspace"}),
        "absolute path",
    );
    add(
        "bad-name",
        json!({"name": "no spaces", "description": "", "command": "run.sh", "risk": "read", "authority": "workspace"}),
        "is not 1 to 64",
    );
    add(
        "bad-risk",
        json!({"name": "r", "description": "", "command": "run.sh", "risk": "low", "authority": "workspace"}),
        "not a valid manifest",
    );
    add(
        "unknown-field",
        json!({"name": "u", "description": "", "command": "run.sh", "risk": "read", "authority": "workspace", "env": {}}),
        "not a valid manifest",
    );
    add(
        "zero-timeout",
        json!({"name": "z", "description": "", "command": "run.sh", "risk": "read", "authority": "workspace", "timeout_ms": 0}),
        "timeout_ms",
    );
    add("zz-duplicate", manifest("good", 1000), "already registered");
    fs::create_dir(t.join("no-manifest")).unwrap();
    cases.push(("no-manifest", "tool.json cannot be opened"));
    fs::create_dir(t.join("not-json")).unwrap();
    fs::write(t.join("not-json/tool.json"), "{ nope").unwrap();
    cases.push(("not-json", "not a valid manifest"));
    let plain = tool(t, "not-executable", manifest("x", 1000), ok);
    fs::set_permissions(plain.join("run.sh"), fs::Permissions::from_mode(0o644)).unwrap();
    cases.push(("not-executable", "not executable"));
    fs::write(t.join("stray-file.txt"), "ignored: not a directory").unwrap();

    let mut registry = ToolRegistry::new();
    let problems = registry.load_external(t);
    let names: Vec<_> = registry.specs().map(|s| s.name.clone()).collect();
    assert_eq!(names, ["good"]);
    assert_eq!(problems.len(), cases.len(), "{problems:#?}");
    for (dir, expect) in cases {
        let dir_path = fs::canonicalize(t.join(dir)).unwrap();
        let named = |p: &&String| {
            p.contains(&dir_path.display().to_string())
                || p.contains(&t.join(dir).display().to_string())
        };
        let problem = problems
            .iter()
            .find(named)
            .unwrap_or_else(|| panic!("no problem names {dir}: {problems:#?}"));
        assert!(problem.contains(expect), "{dir}: {problem}");
        assert!(
            problem.starts_with("Skipped the external tool in ") && problem.ends_with('.'),
            "{problem}"
        );
    }
}

#[test]
fn a_missing_tools_directory_is_no_problem() {
    let mut registry = ToolRegistry::with_builtins();
    assert!(registry
        .load_external(Path::new("/nonexistent/hookline/tools"))
        .is_empty());
    assert_eq!(registry.specs().count(), 3);
}
