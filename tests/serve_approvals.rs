//! Approvals in full (issue 24 item 4, docs/serve.md "Approvals"): a client that was not
//! listening when an approval was asked reads it whole, from `GET /v1/sessions/{id}` and from
//! `GET /v1/approvals` for the whole server (call id, tool, arguments, risk, authority,
//! summary, deadline), answers it, and then finds nothing waiting.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod serve_support;

use std::sync::Arc;
use std::time::Duration;

use hookline::host::gateway::Activity;
use hookline::host::provider::EchoProvider;
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
