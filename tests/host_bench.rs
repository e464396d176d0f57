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
        let report = bench(&["--hook", hook, "--plugins", "3", "--sessions", "4"]);
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
        let report = bench(&["--source", source, "--plugins", "2", "--sessions", "8"]);
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
    let report = bench(&["--rounds", "4", "--plugins", "2"]);
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
