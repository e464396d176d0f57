//! Fail-closed guards (operator opt-in): a failing `on_tool_call` or `on_approval` hook of a
//! plugin marked fail-closed denies the tool call, with a note and a `Guard` approval record;
//! unmarked, the hook is skipped with a note and the call runs (SPEC P1.4).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod host_support;
mod scripted;

use std::time::Duration;

use hookline::host::turn::UserInput;
use hookline::messages::approval::Classification;
use hookline::messages::hook::{HookKind, OnApproval, OnToolCall};
use hookline::messages::record::{ArchiveEntry, Decider, Decision, Record};
use hookline::messages::session::ApprovalMode;
use hookline::messages::tool::ToolCall;
use host_support::{call, rig, text, Rig};
use scripted::{register, replace, Act, Scripted};
use serde_json::json;

const DENIED: &str = "The call was refused; it did not run.";

/// A session where the model asks to overwrite `notes.txt` (allowed by the policy unasked).
fn run_write(registration: hookline::actors::plugin::PluginRegistration) -> Rig {
    run_paused(async move {
        let mut rig = rig(vec![registration], false, ApprovalMode::AllowWorkspace);
        rig.host.open().await.unwrap();
        rig.replies(vec![
            call(
                "c1",
                "write_file",
                json!({"path": "notes.txt", "content": "overwritten"}),
            ),
            text("done"),
        ]);
        rig.host.user_turn(UserInput::work("write")).await.unwrap();
        rig
    })
}

fn run_paused<F: std::future::Future>(test: F) -> F::Output {
    actix::System::with_tokio_rt(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap()
    })
    .block_on(test)
}

fn file(rig: &Rig) -> String {
    std::fs::read_to_string(rig.workspace().join("notes.txt")).unwrap()
}

fn approval(rig: &Rig) -> (Decision, Decider) {
    rig.archive("s1")
        .into_iter()
        .find_map(|e| match e {
            ArchiveEntry::Approval(a) => Some((a.decision, a.decided_by)),
            _ => None,
        })
        .unwrap()
}

fn notes(rig: &Rig) -> Vec<String> {
    rig.notes("s1").iter().map(ToString::to_string).collect()
}

fn assert_denied(rig: &Rig, skip: &str, hook: &str) {
    assert_eq!(file(rig), "three little words");
    assert_eq!(approval(rig), (Decision::Deny, Decider::Guard));
    assert_eq!(
        notes(rig),
        [
            skip.to_owned(),
            format!("Tool call 'c1' was denied because the fail-closed plugin hook 'guard' {hook} failed.")
        ]
    );
    assert!(rig.records("s1").iter().any(|r| matches!(
        r,
        Record::ToolResult { success: false, text, .. } if text == DENIED
    )));
}

fn tool_call_guard(act: Act<ToolCall>) -> hookline::actors::plugin::PluginRegistration {
    let plugin = Scripted::new::<OnToolCall>(act);
    register("guard", &plugin).with_timeout(HookKind::OnToolCall, Duration::from_millis(100))
}

fn approval_guard(act: Act<Classification>) -> hookline::actors::plugin::PluginRegistration {
    let plugin = Scripted::new::<OnApproval>(act);
    register("guard", &plugin).with_timeout(HookKind::OnApproval, Duration::from_millis(100))
}

#[test]
fn by_default_a_failing_tool_call_guard_is_skipped_and_the_call_runs() {
    let rig = run_write(tool_call_guard(Act::Fail("guard down".into())));
    assert_eq!(file(&rig), "overwritten");
    assert_eq!(approval(&rig), (Decision::Allow, Decider::Policy));
    assert_eq!(
        notes(&rig),
        ["Plugin hook 'guard' tool-call was skipped: guard down"]
    );
}

#[test]
fn a_fail_closed_tool_call_guard_that_errors_denies_the_call() {
    let guard = tool_call_guard(Act::Fail("guard down".into())).fail_closed(HookKind::OnToolCall);
    let rig = run_write(guard);
    assert_denied(
        &rig,
        "Plugin hook 'guard' tool-call was skipped: guard down",
        "tool-call",
    );
}

#[test]
fn a_fail_closed_tool_call_guard_that_panics_hangs_or_is_refused_denies_the_call() {
    let cases: [(Act<ToolCall>, &str); 3] = [
        (Act::Panic, "it panicked."),
        (Act::Hang, "it timed out after 100 ms."),
        (
            replace(|mut c: ToolCall| {
                c.call_id = "other".into();
                c
            }),
            "it returned a different call id.",
        ),
    ];
    for (act, why) in cases {
        let rig = run_write(tool_call_guard(act).fail_closed(HookKind::OnToolCall));
        let skip = format!("Plugin hook 'guard' tool-call was skipped: {why}");
        assert_denied(&rig, &skip, "tool-call");
    }
}

#[test]
fn a_fail_closed_approval_guard_that_fails_denies_the_call() {
    let cases: [(Act<Classification>, &str); 3] = [
        (Act::Fail("no verdict".into()), "no verdict"),
        (Act::Hang, "it timed out after 100 ms."),
        (
            replace(|mut c: Classification| {
                c.summary = "nothing to see".into();
                c
            }),
            "it changed the summary.",
        ),
    ];
    for (act, why) in cases {
        let rig = run_write(approval_guard(act).fail_closed(HookKind::OnApproval));
        let skip = format!("Plugin hook 'guard' approval was skipped: {why}");
        assert_denied(&rig, &skip, "approval");
    }
}

#[test]
fn a_fail_closed_guard_that_works_lets_the_call_run() {
    let guard = tool_call_guard(Act::Keep).fail_closed(HookKind::OnToolCall);
    let rig = run_write(guard);
    assert_eq!(file(&rig), "overwritten");
    assert!(notes(&rig).is_empty());
}

#[test]
fn a_fail_closed_mark_on_another_hook_keeps_the_skip() {
    let guard = tool_call_guard(Act::Fail("guard down".into())).fail_closed(HookKind::OnApproval);
    let rig = run_write(guard);
    assert_eq!(file(&rig), "overwritten");
}
