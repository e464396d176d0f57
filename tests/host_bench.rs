//! `hookline bench` as a user runs it: every source, hook and arbiter count produces a JSON
//! report whose calls all went through the named plugins, with the same-run baseline.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use serde_json::Value;

fn bench(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_hookline"))
        .arg("bench")
        .args(["--duration", "0.2", "--json"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn assert_ran(report: &Value, hook: &str, source: &str, plugins: u64) {
    assert_eq!(report["hook"], hook);
    assert_eq!(report["source"], source);
    assert_eq!(report["plugins"], plugins);
    assert!(report["calls"].as_u64().unwrap() > 0, "{report}");
    assert!(report["direct_ns_per_call"].as_f64().unwrap() > 0.0);
    let ratio = report["throughput_ratio"].as_f64().unwrap();
    let expected = report["calls_per_second"].as_f64().unwrap()
        / report["direct_calls_per_second"].as_f64().unwrap();
    assert!((ratio - expected).abs() < 1e-9 * expected.max(1.0));
}

#[test]
fn each_hook_runs_through_in_process_plugins() {
    for hook in ["on_user_message", "on_prompt", "on_tool_call"] {
        let report = bench(&["--hook", hook, "--plugin-count", "3", "--sessions", "4"]);
        assert_ran(&report, hook, "in-process", 3);
    }
}

#[test]
fn two_arbiters_share_the_sessions_and_sum_their_calls() {
    let report = bench(&["--arbiters", "2", "--sessions", "10"]);
    assert_ran(&report, "on_user_message", "in-process", 8);
    assert_eq!(report["arbiters"], 2);
    assert_eq!(report["sessions"], 10);
}

#[test]
fn external_rust_and_python_echo_plugins_answer_calls() {
    for source in ["external-rust", "external-python"] {
        let report = bench(&["--source", source, "--plugin-count", "2", "--sessions", "8"]);
        assert_ran(&report, "on_user_message", source, 2);
    }
}

#[test]
fn the_shipped_examples_run_as_the_plugins() {
    let report = bench(&["--source", "examples", "--hook", "on_tool_call"]);
    assert_ran(&report, "on_tool_call", "examples", 2);
}

#[test]
fn an_open_loop_reports_its_offered_rate() {
    let report = bench(&["--rate", "2000", "--sessions", "4"]);
    assert_eq!(report["offered_rate"], 2000);
    assert!(report["calls"].as_u64().unwrap() >= 300, "{report}");
}

#[test]
fn memory_reports_resident_bytes_per_idle_session() {
    let out = Command::new(env!("CARGO_BIN_EXE_hookline"))
        .args(["bench", "--memory", "--idle-sessions", "5000", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["sessions"], 5000);
    let (before, after) = (
        report["rss_before"].as_u64().unwrap(),
        report["rss_after"].as_u64().unwrap(),
    );
    assert!(before > 0 && after >= before, "{report}");
    // Bounded: far below the 10 KiB per session that 1 GiB for 100,000 sessions allows.
    assert!(
        report["bytes_per_session"].as_f64().unwrap() < 10_240.0,
        "{report}"
    );
}

#[test]
fn zero_arbiters_is_refused() {
    let out = Command::new(env!("CARGO_BIN_EXE_hookline"))
        .args(["bench", "--arbiters", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

// `--rounds`: hookline and its peers alternate, each one's rounds merged into one report line,
// so the run's wall time is shared between them round by round.
#[test]
fn rounds_alternate_hookline_with_its_peers_and_merge_each_ones_rounds() {
    let report = bench(&["--rounds", "4", "--plugin-count", "2"]);
    assert_ran(&report, "on_user_message", "in-process", 2);
    assert_eq!(report["rounds"], 4);
    let peers = report["peers"].as_array().unwrap();
    assert_eq!(peers.len(), 3, "{report}");
    for peer in peers {
        assert!(peer["calls_per_second"].as_f64().unwrap() > 0.0, "{peer}");
        let speedup = peer["p50_speedup"].as_f64().unwrap();
        let expected = peer["latency"]["p50_ns"].as_f64().unwrap()
            / report["latency"]["p50_ns"].as_f64().unwrap();
        assert!(
            (speedup - expected).abs() < 1e-9 * expected.max(1.0),
            "{peer}"
        );
    }
    // Four rounds of 0.05 s: the calls made add up to about the time given, not a quarter of it.
    let per_second = report["calls_per_second"].as_f64().unwrap();
    let calls = report["calls"].as_f64().unwrap();
    let seconds = calls / per_second;
    assert!(
        (0.15..0.6).contains(&seconds),
        "{seconds} s measured over the rounds"
    );
}

#[test]
fn rounds_outside_1_to_1000_or_with_an_open_loop_are_refused() {
    for args in [
        vec!["--rounds", "0"],
        vec!["--rounds", "1001"],
        vec!["--rounds", "2", "--rate", "1000"],
        vec!["--rounds", "2", "--at-half-load"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_hookline"))
            .arg("bench")
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

/// `hookline bench ARGS` from `cwd` (text output unless ARGS ask for JSON).
fn bench_in(cwd: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_hookline"))
        .arg("bench")
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// One flag, one meaning (issue 46 item 4): the count is `--plugin-count`; `--plugins 2`, a
/// number, still runs as the count, with a one-line deprecation; the report speaks English
/// ("1 session", not "1 sessions").
#[test]
fn the_old_numeric_plugins_flag_runs_as_the_count_with_a_deprecation_line() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--duration", "0.2", "--no-peers", "--arbiters", "1"];
    let out = bench_in(dir.path(), &[&args[..], &["--plugins", "2"]].concat());
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stderr,
        "hookline bench: `--plugins 2` is deprecated; use `--plugin-count 2` (`--plugins DIR` is a \
         plugin directory, as in every command).\n"
    );
    assert!(
        stdout.starts_with(
            "hook on_user_message through 2 in-process plugins, 1 session in flight on 1 arbiter\n"
        ),
        "{stdout}"
    );
    let out = bench_in(dir.path(), &[&args[..], &["--plugin-count", "1"]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).is_empty(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout)
            .starts_with("hook on_user_message through 1 in-process plugin, 1 session"),
        "{}",
        text(&out.stdout)
    );
    // `--help` shows the count as `--plugin-count` and `--plugins` as a directory only.
    let help = text(&bench_in(dir.path(), &["--help"]).stdout);
    assert!(help.contains("--plugin-count <N>"), "{help}");
    assert!(help.contains("--plugins <DIR>"), "{help}");
    assert!(!help.contains("--plugins-dir"), "{help}");
}

/// Bench output a newcomer can read (issue 46 item 5): for external plugins the pipe peers lead
/// and the in-process direct loop is there for scale only, with no ratio to it.
#[test]
fn external_plugins_are_judged_against_the_pipe_not_the_direct_loop() {
    let dir = tempfile::tempdir().unwrap();
    let out = bench_in(
        dir.path(),
        &[
            "--source",
            "external-rust",
            "--plugin-count",
            "1",
            "--arbiters",
            "1",
            "--duration",
            "0.3",
        ],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        stdout.starts_with("hook on_user_message through 1 external-rust plugin, 1 session"),
        "{stdout}"
    );
    assert!(!stdout.contains("x the direct loop"), "{stdout}");
    let peer = stdout.find("raw pipe echo").expect(&stdout);
    let direct = stdout.find("direct loop").expect(&stdout);
    assert!(peer < direct, "the pipe peer leads:\n{stdout}");
    assert!(stdout.contains("for scale only"), "{stdout}");
}

/// `--source examples` outside a checkout (issue 46 item 5): the examples of the checkout the
/// binary was built from are found; a directory without them is bad input naming
/// `--examples-dir`, exit 2.
#[test]
fn the_examples_are_found_outside_a_checkout_or_examples_dir_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--source", "examples", "--duration", "0.2", "--json"];
    let out = bench_in(dir.path(), &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["source"], "examples");
    assert!(report["calls"].as_u64().unwrap() > 0, "{report}");
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = bench_in(
        dir.path(),
        &[&args[..], &["--examples-dir", empty.to_str().unwrap()]].concat(),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--examples-dir") && stderr.contains(empty.to_str().unwrap()),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}
