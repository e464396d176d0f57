//! Long conversations over `hookline serve` (issue 22 item 1): a JSON turn answers with its own
//! events only, `hook-changed` events carry an RFC 6902 JSON Patch instead of whole values (the
//! values only with `?detail=full`), so a turn's answer does not grow with the conversation.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod serve_support;

use std::sync::Arc;

use hookline::host::provider::EchoProvider;
use serde_json::{json, Value};
use serve_support::serve;

fn events(body: &Value) -> &[Value] {
    body["events"]
        .as_array()
        .expect("a turn answers with events")
}

fn of_kind<'a>(body: &'a Value, kind: &str) -> Vec<&'a Value> {
    events(body).iter().filter(|e| e["event"] == kind).collect()
}

#[actix_rt::test]
async fn a_json_turn_answers_with_its_own_events_and_patches_only() {
    let served = serve(Arc::new(EchoProvider::new()), |_| {}, |_| {}).await;
    let key = served.open().await;
    let turns = format!("/v1/sessions/{key}/turns");
    let (status, first) = served.post(&turns, json!({ "text": "alpha-first" })).await;
    assert_eq!(status, 200, "{first}");
    let (status, second) = served.post(&turns, json!({ "text": "beta-second" })).await;
    assert_eq!(status, 200, "{second}");

    // This turn's events: one user message, one end, nothing of the turn before.
    let users = of_kind(&second, "user");
    assert_eq!(users.len(), 1, "{second}");
    assert_eq!(users[0]["text"], "beta-second");
    assert_eq!(of_kind(&second, "turn-finished").len(), 1, "{second}");
    assert!(!second.to_string().contains("alpha-first"), "{second}");

    // Each change is a patch; the whole values are not sent.
    let changes = of_kind(&second, "hook-changed");
    let hooks: Vec<&str> = changes
        .iter()
        .map(|e| e["hook"].as_str().unwrap())
        .collect();
    for hook in ["on_prompt", "rebuild_model", "transform_model"] {
        assert!(hooks.contains(&hook), "{hook} missing from {hooks:?}");
    }
    for change in &changes {
        assert!(change["patch"].is_array(), "{change}");
        assert!(
            change.get("before").is_none() && change.get("after").is_none(),
            "{change}"
        );
    }
    // The demo's raw hook appends one reminder item: one `add`, at the request's end.
    let rebuild = changes
        .iter()
        .find(|e| e["hook"] == "rebuild_model")
        .unwrap();
    let ops = rebuild["patch"].as_array().unwrap();
    assert_eq!(ops.len(), 1, "{rebuild}");
    assert_eq!(ops[0]["op"], "add");
    assert_eq!(ops[0]["value"]["id"], "operator-reminder");
    // `transform_model` asks this turn's message to be brief, at its index in the request: the
    // old text is tested first, so the change can be shown from the patch alone.
    let transform = changes
        .iter()
        .find(|e| e["hook"] == "transform_model")
        .unwrap();
    let ops = transform["patch"].as_array().unwrap();
    assert_eq!(ops.len(), 2, "{transform}");
    assert_eq!(ops[0]["op"], "test");
    assert_eq!(ops[0]["value"], "beta-second");
    assert_eq!(ops[1]["op"], "replace");
    assert_eq!(ops[1]["path"], ops[0]["path"]);
    assert_eq!(ops[1]["value"], "beta-second (be brief)");
    served.shutdown().await;
}

#[actix_rt::test]
async fn detail_full_adds_the_values_and_each_patch_turns_before_into_after() {
    let served = serve(Arc::new(EchoProvider::new()), |_| {}, |_| {}).await;
    let key = served.open().await;
    let turns = format!("/v1/sessions/{key}/turns");
    served.post(&turns, json!({ "text": "one" })).await;
    let (status, body) = served
        .post(&format!("{turns}?detail=full"), json!({ "text": "two" }))
        .await;
    assert_eq!(status, 200, "{body}");
    let changes = of_kind(&body, "hook-changed");
    assert!(changes.len() >= 3, "{body}");
    for change in changes {
        let patch: json_patch::Patch = serde_json::from_value(change["patch"].clone()).unwrap();
        let mut value = change["before"].clone();
        json_patch::patch(&mut value, &patch).unwrap();
        assert_eq!(value, change["after"], "{change}");
    }
    // The detail was that request's: the next turn is back to patches only.
    let (_, next) = served.post(&turns, json!({ "text": "three" })).await;
    assert!(of_kind(&next, "hook-changed")
        .iter()
        .all(|e| e.get("before").is_none()));
    let (status, _) = served
        .post(
            &format!("{turns}?detail=everything"),
            json!({ "text": "x" }),
        )
        .await;
    assert_eq!(status, 400);
    served.shutdown().await;
}

#[actix_rt::test]
async fn a_turn_answers_no_more_at_turn_60_than_at_turn_10() {
    let served = serve(Arc::new(EchoProvider::new()), |_| {}, |_| {}).await;
    let key = served.open().await;
    let turns = format!("/v1/sessions/{key}/turns");
    let mut sizes = Vec::new();
    for turn in 0..60 {
        let (status, body) = served
            .post(&turns, json!({ "text": format!("message {turn:03}") }))
            .await;
        assert_eq!(status, 200, "{body}");
        sizes.push(body.to_string().len());
    }
    // Only the item indexes in the paths grow (a digit or two), not the conversation.
    let (early, late) = (sizes[9], sizes[59]);
    assert!(
        late <= early + 16,
        "turn 10 answered {early} bytes, turn 60 {late}"
    );
    served.shutdown().await;
}
