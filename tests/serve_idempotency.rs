//! Issue 22 item 3: `Idempotency-Key` on `POST /v1/sessions/{id}/turns` and `.../commands`, on
//! the server inside the test process: a repeated keyed turn runs once (its turns and tool runs
//! counted) and gets the first answer, as JSON or as a stream; another body with the key is a
//! 422; a repeat while the first waits for an approval is a 409 with `Retry-After`; malformed
//! keys are 400s; a repeated `/new` opens one session; an expired key runs again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod serve_support;

use std::sync::Arc;
use std::time::Duration;

use hookline::host::gateway::Activity;
use hookline::host::provider::EchoProvider;
use serde_json::json;
use serve_support::{serve, until_activity, Served, SseReader};

const WRITE: &str = r#"call write_file {"path":"out.txt","content":"once"}"#;
/// A tool call that runs without an approval (a read).
const READ: &str = r#"call list_dir {"path":"."}"#;

/// POSTs `body` with `key` (when given); the status, the `Retry-After` and
/// `Idempotent-Replayed` headers, and the JSON answer.
async fn keyed(
    served: &Served,
    path: &str,
    key: Option<&str>,
    body: serde_json::Value,
) -> (u16, Option<String>, bool, serde_json::Value) {
    let mut request = served.client.post(served.url(path)).json(&body);
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let header = |name| {
        response
            .headers()
            .get(name)
            .map(|v: &reqwest::header::HeaderValue| v.to_str().unwrap().to_owned())
    };
    let retry = header("retry-after");
    let replayed = header("idempotent-replayed").as_deref() == Some("true");
    (status, retry, replayed, response.json().await.unwrap())
}

/// The session's turn count and its stored records of `kind`.
async fn counts(served: &Served, key: &str, kind: &str) -> (u64, usize) {
    let (status, shown) = served.get(&format!("/v1/sessions/{key}?limit=1000")).await;
    assert_eq!(status, 200, "{shown}");
    let records = shown["records"]["items"].as_array().unwrap();
    let of_kind = records.iter().filter(|r| r["kind"] == kind).count();
    (shown["session"]["turns"].as_u64().unwrap(), of_kind)
}

#[actix_rt::test]
async fn a_repeated_keyed_turn_runs_once_and_gets_the_first_answer() {
    let served = serve(Arc::new(EchoProvider::new()), |_| {}, |_| {}).await;
    let key = served.open().await;
    let path = format!("/v1/sessions/{key}/turns");
    let (status, _, replayed, first) =
        keyed(&served, &path, Some("turn-1"), json!({ "text": READ })).await;
    assert_eq!((status, replayed), (200, false), "{first}");
    assert_eq!(counts(&served, &key, "tool-result").await, (1, 1));

    let (status, _, replayed, again) =
        keyed(&served, &path, Some("turn-1"), json!({ "text": READ })).await;
    assert_eq!((status, replayed), (200, true), "{again}");
    assert_eq!(again, first);
    // One turn, one tool run: the repeat ran nothing.
    assert_eq!(counts(&served, &key, "tool-result").await, (1, 1));

    // A stream asked with the same key gets the stored answer's events, then `done`.
    let response = served
        .client
        .post(served.url(&path))
        .header("accept", "text/event-stream")
        .header("idempotency-key", "turn-1")
        .json(&json!({ "text": READ }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["idempotent-replayed"], "true");
    let mut events = SseReader::new(response);
    let mut kinds = Vec::new();
    while let Some((kind, data)) = events.next().await {
        if kind == "done" {
            assert_eq!(data["stopReason"], first["stopReason"]);
            assert_eq!(data["sessionId"], first["sessionId"]);
            break;
        }
        kinds.push(kind);
    }
    let stored: Vec<_> = first["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, stored);
    assert_eq!(counts(&served, &key, "tool-result").await, (1, 1));

    // Without a key, or with a new one, the same body runs again.
    let (status, _, replayed, _) = keyed(&served, &path, None, json!({ "text": READ })).await;
    assert_eq!((status, replayed), (200, false));
    let (status, _, replayed, _) =
        keyed(&served, &path, Some("turn-2"), json!({ "text": READ })).await;
    assert_eq!((status, replayed), (200, false));
    assert_eq!(counts(&served, &key, "tool-result").await, (3, 3));
    served.shutdown().await;
}

#[actix_rt::test]
async fn the_same_key_with_another_body_or_route_is_a_422() {
    let served = serve(Arc::new(EchoProvider::new()), |_| {}, |_| {}).await;
    let key = served.open().await;
    let turns = format!("/v1/sessions/{key}/turns");
    let (status, ..) = keyed(&served, &turns, Some("k"), json!({ "text": "hello" })).await;
    assert_eq!(status, 200);
    for (path, body) in [
        (turns.clone(), json!({ "text": "hello again" })),
        (turns.clone(), json!({ "text": "hello", "mode": "plan" })),
        (
            format!("/v1/sessions/{key}/commands"),
            json!({ "command": "/mode plan" }),
        ),
    ] {
        let (status, retry, replayed, body) = keyed(&served, &path, Some("k"), body).await;
        assert_eq!(status, 422, "{body}");
        assert_eq!(body["error"]["code"], "idempotency-key-reused");
        assert_eq!(
            body["error"]["message"],
            "Idempotency-Key 'k' was already used for another request to this session; \
             use a new key for a new request."
        );
        assert_eq!((retry, replayed), (None, false));
    }
    assert_eq!(counts(&served, &key, "user").await, (1, 1));
    served.shutdown().await;
}

#[actix_rt::test]
async fn malformed_keys_are_400s_and_nothing_runs() {
    let served = serve(Arc::new(EchoProvider::new()), |_| {}, |_| {}).await;
    let key = served.open().await;
    let path = format!("/v1/sessions/{key}/turns");
    let long = "k".repeat(256);
    for bad in ["", "  ", "\"\"", long.as_str(), "a\"b", "\"open"] {
        let (status, _, _, body) = keyed(&served, &path, Some(bad), json!({ "text": "x" })).await;
        assert_eq!(status, 400, "{bad:?}: {body}");
        assert_eq!(body["error"]["code"], "bad-idempotency-key", "{bad:?}");
    }
    // Two keys on one request.
    let response = served
        .client
        .post(served.url(&path))
        .header("idempotency-key", "a")
        .header("idempotency-key", "b")
        .json(&json!({ "text": "x" }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    assert_eq!(counts(&served, &key, "user").await, (0, 0));
    // The longest key there may be, and the IETF draft's quoted form, are keys.
    let longest = "k".repeat(255);
    for good in [longest.as_str(), "\"quoted-key\""] {
        let (status, _, _, body) = keyed(&served, &path, Some(good), json!({ "text": "x" })).await;
        assert_eq!(status, 200, "{body}");
    }
    // The quotes are not part of the key: the bare form is the same key.
    let (status, _, replayed, _) =
        keyed(&served, &path, Some("quoted-key"), json!({ "text": "x" })).await;
    assert_eq!((status, replayed), (200, true));
    served.shutdown().await;
}

#[actix_rt::test]
async fn a_repeat_while_the_first_waits_for_approval_is_a_409_with_retry_after() {
    let served = Arc::new(serve(Arc::new(EchoProvider::new()), |_| {}, |_| {}).await);
    let key = served.open().await;
    let path = format!("/v1/sessions/{key}/turns");
    let first = {
        let (served, path) = (Arc::clone(&served), path.clone());
        tokio::spawn(
            async move { keyed(&served, &path, Some("slow"), json!({ "text": WRITE })).await },
        )
    };
    until_activity(&served, &key, Activity::Approval).await;
    let (status, retry, replayed, body) =
        keyed(&served, &path, Some("slow"), json!({ "text": WRITE })).await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error"]["code"], "request-in-progress");
    assert_eq!((retry.as_deref(), replayed), (Some("1"), false));
    // A command with that key while it runs is another request: 422, not a wait.
    let (status, ..) = keyed(
        &served,
        &format!("/v1/sessions/{key}/commands"),
        Some("slow"),
        json!({ "command": "/stop" }),
    )
    .await;
    assert_eq!(status, 422);

    let (_, shown) = served.get(&format!("/v1/sessions/{key}")).await;
    let call = shown["pendingApprovals"][0].as_str().unwrap().to_owned();
    let (status, _) = served
        .post(
            &format!("/v1/sessions/{key}/approvals/{call}"),
            json!({ "decision": "allow" }),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _, replayed, answer) = first.await.unwrap();
    assert_eq!((status, replayed), (200, false), "{answer}");
    assert_eq!(answer["stopReason"], "completed");
    let (status, _, replayed, again) =
        keyed(&served, &path, Some("slow"), json!({ "text": WRITE })).await;
    assert_eq!((status, replayed), (200, true));
    assert_eq!(again, answer);
    assert_eq!(counts(&served, &key, "tool-result").await, (1, 1));
    Arc::into_inner(served).unwrap().shutdown().await;
}

#[actix_rt::test]
async fn a_repeated_keyed_new_opens_one_session() {
    let served = serve(Arc::new(EchoProvider::new()), |_| {}, |_| {}).await;
    let key = served.open().await;
    let path = format!("/v1/sessions/{key}/commands");
    let (status, _, replayed, first) =
        keyed(&served, &path, Some("new-1"), json!({ "command": "/new" })).await;
    assert_eq!((status, replayed), (200, false), "{first}");
    let fresh = first["session"]["sessionId"].clone();
    assert_ne!(fresh, json!(key));
    let (status, _, replayed, again) =
        keyed(&served, &path, Some("new-1"), json!({ "command": "/new" })).await;
    assert_eq!((status, replayed), (200, true), "{again}");
    assert_eq!(again, first);
    let (_, shown) = served.get(&format!("/v1/sessions/{key}")).await;
    assert_eq!(shown["session"]["sessionId"], fresh);
    served.shutdown().await;
}

#[actix_rt::test]
async fn an_expired_key_runs_its_request_again() {
    let ttl = Duration::from_secs(2);
    let served = serve(
        Arc::new(EchoProvider::new()),
        |_| {},
        |config| config.idempotency_ttl = ttl,
    )
    .await;
    let key = served.open().await;
    let path = format!("/v1/sessions/{key}/turns");
    let (status, _, replayed, _) = keyed(&served, &path, Some("k"), json!({ "text": "a" })).await;
    assert_eq!((status, replayed), (200, false));
    let (status, _, replayed, _) = keyed(&served, &path, Some("k"), json!({ "text": "a" })).await;
    assert_eq!((status, replayed), (200, true));
    // Waiting for the key's lifetime to pass (the store compares wall-clock times).
    tokio::time::sleep(ttl + Duration::from_millis(200)).await;
    let (status, _, replayed, _) = keyed(&served, &path, Some("k"), json!({ "text": "a" })).await;
    assert_eq!((status, replayed), (200, false));
    assert_eq!(counts(&served, &key, "user").await, (2, 2));
    served.shutdown().await;
}
