//! The soak (issue 8 item 7, issue 11 item 0), tiny: 200 gateway sessions for 1 s through every
//! hook with the demo plugins, then the gateway's shutdown under that load. Its checks must all
//! pass, and its figures must show that the load really ran. Real time: the soak measures a
//! timed load, nothing here waits on it as synchronisation, and no figure is compared with a
//! time. `hookline soak` runs the full size (10,000 sessions, 10 s).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::Duration;

use hookline::cli::soak::{injected_notes, run_soak, SoakConfig, TURNS_PER_SESSION};

/// The hook calls of one soak session: `on_session_started`; per turn `on_user_message`,
/// `on_turn_started`, then for each of its two model calls `on_prompt`, `rewrite_prompt`,
/// `rebuild_model`, `transform_model`, `on_model_response`, with `on_tool_call`, `on_approval`,
/// `rewrite_approval` and `on_tool_result` between them, and `on_turn_finished` (16 per turn);
/// `/compact`'s `on_compaction` and `rewrite_compaction` for the prompt and the summary; and
/// `on_session_ended`.
const HOOK_CALLS_PER_SESSION: u64 = 1 + 16 * TURNS_PER_SESSION + 4 + 1;

fn tiny() -> SoakConfig {
    SoakConfig {
        sessions: 200,
        // Long enough for whole sessions to finish on a loaded 2-core machine (a debug build at
        // load 12-28 finished none within 0.5 s; the progress check needs at least one).
        duration: Duration::from_secs(2),
        ..SoakConfig::default()
    }
}

#[actix_rt::test]
async fn a_tiny_soak_passes_every_check_and_records_only_the_injected_notes() {
    let report = run_soak(&tiny(), &()).await.unwrap();
    assert!(report.passed(), "{report}");
    let names: Vec<_> = report.checks.iter().map(|c| c.name).collect();
    assert_eq!(
        names,
        [
            "resident memory flat after warm-up",
            "coordinator within max_pending",
            "event queue within its capacity",
            "pipeline session table within the sessions open",
            "only the injected notes, once per session",
            "no session request failed",
            "shutdown under load within its budget",
        ]
    );
    // The sessions ran real turns through the hooks. The load's turns are counted as their
    // sessions complete within it; each of the 200 slots may have had one session part way at
    // its start and at its end, so the hook calls counted over the load lie within 200
    // sessions' worth of the completed sessions'.
    assert!(report.sessions_completed >= 1, "{report}");
    let sessions = report.turns / TURNS_PER_SESSION;
    let calls = report.hook_calls.expect("the soak counts hook calls");
    assert!(
        calls + 200 * HOOK_CALLS_PER_SESSION >= sessions * HOOK_CALLS_PER_SESSION,
        "{report}"
    );
    assert!(
        calls <= (sessions + 200) * HOOK_CALLS_PER_SESSION,
        "{report}"
    );
    // Exactly the injected notes, once per completed session.
    let injected: Vec<String> = injected_notes().iter().map(|n| n.text()).collect();
    assert_eq!(report.notes.len(), injected.len(), "{report}");
    for count in &report.notes {
        assert!(injected.contains(&count.text), "{}", count.text);
        assert_eq!(count.count, report.sessions_completed, "{}", count.text);
    }
    assert!(report.shutdown.active_sessions <= 200, "{report}");
    assert!(report.queues.coordinator.peak >= 1);
    assert_eq!(report.events_dropped, 0);
}

#[test]
fn hookline_soak_prints_a_json_report_and_exits_zero_when_every_check_passes() {
    let out = Command::new(env!("CARGO_BIN_EXE_hookline"))
        .args(["soak", "--sessions", "50", "--duration", "2", "--json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let report: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["driver"], "gateway");
    assert_eq!(report["concurrent_sessions"], 50);
    let checks = report["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 7);
    assert!(checks.iter().all(|c| c["passed"] == true), "{stdout}");
}

#[test]
fn hookline_soak_exits_one_when_a_check_fails() {
    // A one-place event queue under 50 sessions drops events: the drop note fails the notes check.
    let out = Command::new(env!("CARGO_BIN_EXE_hookline"))
        .args([
            "soak",
            "--sessions",
            "50",
            "--duration",
            "0.5",
            "--event-queue",
            "1",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("FAIL  only the injected notes, once per session"),
        "{stdout}"
    );
    assert!(
        stdout.contains("events because the event queue was full."),
        "{stdout}"
    );
    assert!(stdout.ends_with("soak FAILED\n"), "{stdout}");
}
