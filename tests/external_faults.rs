//! Faulty external plugins, as real processes: each fault skips that plugin's hook with its note,
//! the plugins after it still run, and the plugin serves later calls (SPEC P1.4).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use hookline::actors::Pipeline;
use hookline::host::loading::LiveState;
use hookline::messages::hook::OnToolCall;
use hookline::messages::session::SessionId;
use serde_json::json;
use support::{faulty, load_user, texts, tool_call, two_tool_calls};

/// Runs two calls through `a-first` (ok), `m-faulty` (MODE), `z-last` (ok); returns the
/// tool names and notes of both.
async fn two_calls(
    mode: &str,
    extra: serde_json::Value,
) -> (Vec<String>, Vec<String>, tempfile::TempDir) {
    let root = tempfile::tempdir().unwrap();
    faulty(root.path(), "a-first", "ok", json!({}));
    faulty(root.path(), "m-faulty", mode, extra);
    faulty(root.path(), "z-last", "ok", json!({}));
    let report = load_user(root.path()).await;
    assert_eq!(report.plugins.len(), 3, "{:?}", texts(&report.notes));
    let (names, notes) = two_tool_calls(&report).await;
    report.shutdown().await;
    (names, notes, root)
}

const SKIPPED: &str = "t-a-first-z-last";
const ALL_RAN: &str = "t-a-first-m-faulty-z-last";

async fn assert_first_call_skipped(mode: &str, reason: &str) {
    let (names, notes, _root) = two_calls(mode, json!({})).await;
    assert_eq!(names, [SKIPPED, ALL_RAN], "mode {mode}");
    assert_eq!(
        notes,
        [format!(
            "Plugin hook 'm-faulty' tool-call was skipped: {reason}"
        )]
    );
}

#[actix_rt::test]
async fn output_that_is_not_the_protocol_is_skipped_with_note() {
    assert_first_call_skipped("garbage", "it wrote output that is not the protocol.").await;
}

#[actix_rt::test]
async fn a_line_over_the_cap_is_dropped_and_skipped_with_note() {
    assert_first_call_skipped("oversize", "it wrote a line longer than 1048576 bytes.").await;
}

#[actix_rt::test]
async fn a_reply_with_an_unknown_id_is_skipped_with_note() {
    assert_first_call_skipped("unknown-id", "it replied with an id it was never given.").await;
}

#[actix_rt::test]
async fn a_plugin_error_message_becomes_the_note() {
    assert_first_call_skipped("error", "the faulty plugin refuses.").await;
}

/// Runs two calls through `a-first`, `m-faulty` (MODE), `z-last`; returns the tool names, the
/// call notes and the faults pinned on `m-faulty` afterwards.
async fn two_calls_and_faults(mode: &str) -> (Vec<String>, Vec<String>, Vec<String>) {
    let root = tempfile::tempdir().unwrap();
    faulty(root.path(), "a-first", "ok", json!({}));
    faulty(root.path(), "m-faulty", mode, json!({}));
    faulty(root.path(), "z-last", "ok", json!({}));
    let report = load_user(root.path()).await;
    assert_eq!(report.plugins.len(), 3, "{:?}", texts(&report.notes));
    let (names, notes) = two_tool_calls(&report).await;
    // The reader handles lines in order: the duplicate came before call 2's reply.
    let faults = texts(&report.plugins[1].as_external().unwrap().take_faults());
    report.shutdown().await;
    (names, notes, faults)
}

const TWICE: &str = "Plugin 'm-faulty' broke the protocol: it replied twice with the same id.";

// Issue 15 defect 3: a duplicate reply is pinned on the plugin; the innocent call in flight runs.
#[actix_rt::test]
async fn a_repeated_reply_id_is_noted_and_the_call_in_flight_still_runs() {
    let (names, notes, faults) = two_calls_and_faults("repeat-id").await;
    assert_eq!(names, [ALL_RAN, ALL_RAN]);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(faults, [TWICE]);
}

// Issue 15 defect 3: with nothing else in flight the duplicate is still noted (docs/protocol.md).
#[actix_rt::test]
async fn a_reply_sent_twice_with_nothing_in_flight_is_noted() {
    let (names, notes, faults) = two_calls_and_faults("reply-twice").await;
    assert_eq!(names, [ALL_RAN, ALL_RAN]);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(faults, [TWICE]);
}

#[actix_rt::test]
async fn a_crash_mid_reply_is_skipped_and_the_plugin_restarts() {
    assert_first_call_skipped("crash-once", "it exited before it replied.").await;
}

#[actix_rt::test]
async fn a_late_reply_is_dropped_after_the_timeout_and_a_cancel_is_sent() {
    let (names, notes, root) = two_calls("late", json!({"timeout_ms": 1000})).await;
    assert_eq!(names, [SKIPPED, ALL_RAN]);
    assert_eq!(
        notes,
        ["Plugin hook 'm-faulty' tool-call was skipped: it timed out after 1 s."]
    );
    let transcript = std::fs::read_to_string(root.path().join("m-faulty/transcript.log")).unwrap();
    assert!(
        transcript.contains(r#"{"type":"cancel","id":1}"#),
        "{transcript}"
    );
    assert!(transcript.contains(r#"{"type":"goodbye"}"#), "{transcript}");
}

#[actix_rt::test]
async fn a_stderr_flood_is_drained_and_calls_still_complete() {
    let (names, notes, _root) = two_calls("stderr-flood", json!({})).await;
    assert_eq!(names, [ALL_RAN, ALL_RAN]);
    assert!(notes.is_empty(), "{notes:?}");
}

#[actix_rt::test]
async fn three_crashes_disable_the_plugin_with_note() {
    let root = tempfile::tempdir().unwrap();
    faulty(root.path(), "m-faulty", "crash-always", json!({}));
    faulty(root.path(), "z-last", "ok", json!({}));
    let report = load_user(root.path()).await;
    let pipeline = Pipeline::builder()
        .plugins(report.registrations())
        .start()
        .unwrap();
    let mut notes = Vec::new();
    for session in ["s1", "s2", "s3", "s4"] {
        let outcome = pipeline
            .call::<OnToolCall>(&SessionId::new(session), tool_call("t", "c"))
            .await
            .unwrap();
        assert_eq!(outcome.value.name, "t-z-last");
        notes.extend(texts(&outcome.notes));
    }
    let crashed = "Plugin hook 'm-faulty' tool-call was skipped: it exited before it replied.";
    let disabled =
        "Plugin hook 'm-faulty' tool-call was skipped: it was disabled after 3 crashes in 5 minutes.";
    assert_eq!(notes, [crashed, crashed, crashed, disabled]);
    assert_eq!(
        report.plugins[0].as_external().unwrap().run_state(),
        hookline::host::external::RunState::Disabled
    );
    // Its live state says so, with why and since when (issue 46 item 2): suspended, not loaded.
    let live = report.plugins[0].live();
    assert_eq!(live.state, LiveState::Suspended);
    assert_eq!(
        live.reason.map(|r| r.to_string()).as_deref(),
        Some("its process exited 3 times in 5 minutes, so the runtime stopped calling it (it stays suspended until the host restarts)")
    );
    assert!(live.since <= std::time::SystemTime::now());
    assert_eq!(report.plugins[1].live().state, LiveState::Loaded);
    report.shutdown().await;
    // Shut down by the host: exited, and why.
    let live = report.plugins[1].live();
    assert_eq!(live.state, LiveState::Exited);
    assert_eq!(
        live.reason.map(|r| r.to_string()).as_deref(),
        Some("the host shut it down")
    );
    assert_eq!(report.plugins[0].live().state, LiveState::Suspended);
}

#[actix_rt::test]
async fn many_calls_are_in_flight_at_once_and_replies_match_their_ids() {
    let root = tempfile::tempdir().unwrap();
    // `batch` answers only once it holds 8 requests, and then in reverse order.
    faulty(root.path(), "batcher", "batch", json!({}));
    let report = load_user(root.path()).await;
    let pipeline = Pipeline::builder()
        .plugins(report.registrations())
        .start()
        .unwrap();
    let calls = (0..8).map(|i| {
        let pipeline = pipeline.clone();
        async move {
            let session = SessionId::new(format!("s{i}"));
            pipeline
                .call::<OnToolCall>(&session, tool_call(&format!("t{i}"), &format!("c{i}")))
                .await
        }
    });
    let outcomes = futures::future::join_all(calls).await;
    for (i, outcome) in outcomes.into_iter().enumerate() {
        let outcome = outcome.unwrap();
        assert_eq!(outcome.value.call_id, format!("c{i}"));
        assert_eq!(outcome.value.name, format!("t{i}-batcher"));
        assert!(outcome.notes.is_empty());
    }
    report.shutdown().await;
}
