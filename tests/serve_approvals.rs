//! Approvals in full (issue 24 item 4, docs/serve.md "Approvals"): a client that was not
//! listening when an approval was asked reads it whole, from `GET /v1/sessions/{id}` and from
//! `GET /v1/approvals` for the whole server (call id, tool, arguments, risk, authority,
//! summary, deadline), answers it, and then finds nothing waiting. And the answered ones: the
//! session view's `answered` on a session with more answers than it shows.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod serve_support;

use std::sync::Arc;
use std::time::Duration;

use hookline::host::gateway::Activity;
use hookline::host::provider::EchoProvider;
use hookline::messages::approval::{Authority, Classification, Risk};
use hookline::messages::record::{ApprovalRecord, ArchiveEntry, Decider, Decision};
use hookline::messages::session::SessionId;
use hookline::messages::user::StopReason;
use serde_json::json;
use serve_support::{now_ms, serve, until_activity};

const TIMEOUT: Duration = Duration::from_secs(45);

#[actix_rt::test]
async fn a_pending_approval_is_listed_in_full_for_its_session_and_the_server() {
    let served = serve(
        Arc::new(EchoProvider::new()),
        |limits| limits.approval_timeout = TIMEOUT,
        |_| {},
    )
    .await;
    let asking = served.open().await;
    let quiet = served.open().await;
    let (_, none) = served.get("/v1/approvals").await;
    assert_eq!(none, json!({ "approvals": [] }));

    let before = now_ms();
    let turn = {
        let client = served.client.clone();
        let url = served.url(&format!("/v1/sessions/{asking}/turns"));
        tokio::spawn(async move {
            let text = r#"call write_file {"path":"late.txt","content":"hi"}"#;
            client.post(url).json(&json!({ "text": text })).send().await
        })
    };
    until_activity(&served, &asking, Activity::Approval).await;
    let after = now_ms();

    let (status, shown) = served.get(&format!("/v1/sessions/{asking}")).await;
    assert_eq!(status, 200, "{shown}");
    let approvals = shown["approvals"].as_array().unwrap();
    assert_eq!(approvals.len(), 1, "{shown}");
    let approval = &approvals[0];
    let call_id = approval["callId"].as_str().unwrap().to_owned();
    assert_eq!(shown["pendingApprovals"], json!([call_id]));
    assert_eq!(approval["tool"], "write_file");
    assert_eq!(
        approval["arguments"],
        json!({ "path": "late.txt", "content": "hi" })
    );
    assert_eq!(approval["risk"], "write", "{approval}");
    assert_eq!(approval["authority"], "workspace", "{approval}");
    assert!(
        approval["summary"].as_str().unwrap().contains("late.txt"),
        "{approval}"
    );
    let timeout_ms = u64::try_from(TIMEOUT.as_millis()).unwrap();
    let deadline = approval["deadlineMs"].as_u64().unwrap();
    assert!(
        (before + timeout_ms..=after + timeout_ms).contains(&deadline),
        "deadline {deadline} not {timeout_ms} ms after the ask ({before}..={after})"
    );
    let mut fields: Vec<&str> = approval
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        [
            "arguments",
            "authority",
            "callId",
            "deadlineMs",
            "risk",
            "summary",
            "tool"
        ]
    );

    // The whole server's list: the same approval with its session; the quiet one has none.
    let (status, all) = served.get("/v1/approvals").await;
    assert_eq!(status, 200, "{all}");
    let mut expected = approval.clone();
    expected["session"] = json!(asking);
    assert_eq!(all, json!({ "approvals": [expected] }));
    let (_, quiet_shown) = served.get(&format!("/v1/sessions/{quiet}")).await;
    assert_eq!(quiet_shown["approvals"], json!([]));

    // Answered from what was read: the call runs, and nothing waits any more.
    let (status, answer) = served
        .post(
            &format!("/v1/sessions/{asking}/approvals/{call_id}"),
            json!({ "decision": "allow" }),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let finished = turn.await.unwrap().unwrap();
    assert_eq!(finished.status(), 200);
    assert_eq!(
        std::fs::read_to_string(served.dir.path().join("late.txt")).unwrap(),
        "hi"
    );
    let (_, none) = served.get("/v1/approvals").await;
    assert_eq!(none, json!({ "approvals": [] }));
    let (_, shown) = served.get(&format!("/v1/sessions/{asking}")).await;
    assert_eq!(shown["approvals"], json!([]));
    served.shutdown().await;
}

/// Approval `i` of a long session: every third one the policy's or a guard's, the others an
/// operator's answer naming who answered.
fn decided(i: usize) -> ArchiveEntry {
    let decided_by = match i % 6 {
        0 => Decider::Policy,
        3 => Decider::Guard,
        _ => Decider::Operator,
    };
    ArchiveEntry::Approval(ApprovalRecord {
        call_id: format!("call-{i}"),
        tool: "write_file".into(),
        classification: Classification {
            risk: Risk::Write,
            authority: Authority::Workspace,
            summary: format!("write_file {i}.txt"),
            requires_prompt: true,
        },
        decision: if i % 4 == 0 {
            Decision::Deny
        } else {
            Decision::Allow
        },
        decided_by,
        answered_by: (decided_by == Decider::Operator).then(|| format!("acme/p{i}")),
    })
}

/// The last 50 approvals an operator answered in `archive`, as the session view showed them when
/// it read the whole archive.
fn last_answers(archive: &[ArchiveEntry]) -> serde_json::Value {
    let all: Vec<&ApprovalRecord> = archive
        .iter()
        .filter_map(|entry| match entry {
            ArchiveEntry::Approval(record) if record.decided_by == Decider::Operator => {
                Some(record)
            }
            _ => None,
        })
        .collect();
    serde_json::to_value(&all[all.len().saturating_sub(50)..]).unwrap()
}

/// Issue 49 follow-ups: the session view's `answered` (issue 48) is read from the store without
/// holding the archive; on a session with more answers than it shows, it is still the last 50
/// operator answers, oldest first, each with who answered, as the whole archive gives them, and
/// an answer given over the API joins the end of it at once.
#[actix_rt::test]
async fn the_session_view_shows_the_last_50_answers_of_a_long_session() {
    let served = serve(
        Arc::new(EchoProvider::new()),
        |limits| limits.approval_timeout = TIMEOUT,
        |_| {},
    )
    .await;
    let key = served.open().await;
    let (status, closed) = served.delete(&format!("/v1/sessions/{key}")).await;
    assert_eq!(status, 200, "{closed}");
    // Its history written straight to the store while nobody holds it: 120 approvals asked and
    // decided over 120 turns, 80 of them an operator's answer.
    let store = served.gateway().session_store().clone();
    let id = SessionId::new(key.as_str());
    let (_, mut writer) = store.open(&id).await.unwrap().unwrap();
    let history: Vec<ArchiveEntry> = (0..120)
        .flat_map(|i| {
            [
                ArchiveEntry::UserMessage {
                    text: format!("turn {i}"),
                    original: None,
                    images: Vec::new(),
                },
                decided(i),
                ArchiveEntry::TurnFinished {
                    stop_reason: StopReason::Completed,
                },
            ]
        })
        .collect();
    writer.append(&[], &history).await.unwrap();
    writer.release().await.unwrap();
    let (status, body) = served
        .post(&format!("/v1/sessions/{key}/resume"), json!({}))
        .await;
    assert_eq!(status, 200, "{body}");

    let (status, shown) = served.get(&format!("/v1/sessions/{key}")).await;
    assert_eq!(status, 200, "{shown}");
    let expected = last_answers(&history);
    assert_eq!(expected.as_array().unwrap().len(), 50);
    assert_eq!(expected[0]["callId"], "call-46", "{expected}");
    assert_eq!(expected[49]["answeredBy"], "acme/p119");
    assert_eq!(shown["answered"], expected);
    let whole = store.read(&id).await.unwrap().unwrap().archive;
    assert_eq!(shown["answered"], last_answers(&whole));

    // One more answered over the API: the oldest shown gives way to it.
    let turn = {
        let client = served.client.clone();
        let url = served.url(&format!("/v1/sessions/{key}/turns"));
        tokio::spawn(async move {
            let text = r#"call write_file {"path":"late.txt","content":"hi"}"#;
            client.post(url).json(&json!({ "text": text })).send().await
        })
    };
    until_activity(&served, &key, Activity::Approval).await;
    let (_, asking) = served.get(&format!("/v1/sessions/{key}")).await;
    let call_id = asking["pendingApprovals"][0].as_str().unwrap().to_owned();
    let (status, answer) = served
        .post(
            &format!("/v1/sessions/{key}/approvals/{call_id}"),
            json!({ "decision": "deny" }),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(turn.await.unwrap().unwrap().status(), 200);
    let (_, shown) = served.get(&format!("/v1/sessions/{key}")).await;
    let answered = shown["answered"].as_array().unwrap();
    assert_eq!(answered.len(), 50, "{shown}");
    assert_eq!(answered[0], expected[1]);
    assert_eq!(answered[49]["callId"], call_id.as_str());
    assert_eq!(answered[49]["decision"], "deny");
    let whole = store.read(&id).await.unwrap().unwrap().archive;
    assert_eq!(shown["answered"], last_answers(&whole));
    served.shutdown().await;
}
