//! Issue 22 item 3: `Idempotency-Key` on `POST /v1/sessions/{id}/turns` and `.../commands`, on
//! the server inside the test process: a repeated keyed turn runs once (its turns and tool runs
//! counted) and gets the first answer, as JSON or as a stream; another body with the key is a
//! 422; a repeat while the first waits for an approval is a 409 with `Retry-After`; malformed
//! keys are 400s; a repeated `/new` opens one session; an expired key runs again. Issue 34
//! item 3: the same keys on the WebSocket's turns and commands (a repeat answers the stored
//! answer, `"replayed": true`, and runs nothing; a key sent over HTTP replays there too), and
//! `hookline load --idempotency` sending every turn with a key of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod serve_support;

use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt as _, StreamExt as _};
use hookline::cli::load::{run as drive, turn_text, LoadOptions, Transport};
use hookline::host::gateway::Activity;
use hookline::host::provider::EchoProvider;
use serde_json::json;
use serve_support::{serve, until_activity, Served, SseReader, DEADLINE};
use tokio_tungstenite::tungstenite::Message;

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

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// Sends `request` on the socket and returns the answer to it (`done` or `error`), skipping
/// the session's events.
async fn ask(socket: &mut Socket, request: serde_json::Value) -> serde_json::Value {
    socket
        .send(Message::text(request.to_string()))
        .await
        .unwrap();
    loop {
        let message = tokio::time::timeout(DEADLINE, socket.next())
            .await
            .expect("nothing came on the socket")
            .expect("the socket closed")
            .unwrap();
        let Message::Text(text) = message else {
            continue;
        };
        let reply: serde_json::Value = serde_json::from_str(text.as_str()).unwrap();
        if reply["type"] == "done" || reply["type"] == "error" {
            return reply;
        }
    }
}

#[actix_rt::test]
async fn a_repeated_key_over_the_websocket_runs_once_and_replays_the_answer() {
    let served = serve(Arc::new(EchoProvider::new()), |_| {}, |_| {}).await;
    let key = served.open().await;
    let (mut socket, _) =
        tokio_tungstenite::connect_async(served.ws(&format!("/v1/sessions/{key}/ws")))
            .await
            .unwrap();
    let turn = json!({ "type": "turn", "text": READ, "key": "ws-1" });
    let first = ask(&mut socket, turn.clone()).await;
    assert_eq!(first["type"], "done", "{first}");
    assert_eq!(first["request"], "turn");
    assert_eq!(first.get("replayed"), None);
    assert_eq!(counts(&served, &key, "tool-result").await, (1, 1));

    let again = ask(&mut socket, turn).await;
    assert_eq!(again["type"], "done", "{again}");
    assert_eq!(again["replayed"], true);
    assert_eq!(again["stopReason"], first["stopReason"]);
    assert_eq!(again["sessionId"], first["sessionId"]);
    // One turn, one tool run: the repeat ran nothing.
    assert_eq!(counts(&served, &key, "tool-result").await, (1, 1));

    // The same key over HTTP is the same entry: the stored answer, with the turn's events.
    let path = format!("/v1/sessions/{key}/turns");
    let (status, _, replayed, stored) =
        keyed(&served, &path, Some("ws-1"), json!({ "text": READ })).await;
    assert_eq!((status, replayed), (200, true), "{stored}");
    assert_eq!(stored["stopReason"], first["stopReason"]);
    assert!(!stored["events"].as_array().unwrap().is_empty(), "{stored}");
    assert_eq!(counts(&served, &key, "tool-result").await, (1, 1));

    // Another request with the key, a malformed key: refused, as over HTTP.
    let reused = ask(
        &mut socket,
        json!({ "type": "turn", "text": "other", "key": "ws-1" }),
    )
    .await;
    assert_eq!(reused["type"], "error", "{reused}");
    assert_eq!(reused["error"]["code"], "idempotency-key-reused");
    let bad = ask(
        &mut socket,
        json!({ "type": "turn", "text": "x", "key": "" }),
    )
    .await;
    assert_eq!(bad["error"]["code"], "bad-idempotency-key", "{bad}");

    // Commands take keys too: a repeated `/new` opens one session.
    let new = json!({ "type": "command", "command": "/new", "key": "new-1" });
    let opened = ask(&mut socket, new.clone()).await;
    assert_eq!(opened["type"], "done", "{opened}");
    let fresh = opened["session"]["sessionId"].clone();
    let repeated = ask(&mut socket, new).await;
    assert_eq!(repeated["replayed"], true, "{repeated}");
    assert_eq!(repeated["session"]["sessionId"], fresh);
    let (_, shown) = served.get(&format!("/v1/sessions/{key}")).await;
    assert_eq!(shown["session"]["sessionId"], fresh);
    served.shutdown().await;
}

#[actix_rt::test]
async fn load_with_idempotency_sends_every_turn_with_a_key_of_its_own() {
    let served = serve(Arc::new(EchoProvider::new()), |_| {}, |_| {}).await;
    for (transport, prefix) in [(Transport::Http, "http"), (Transport::Ws, "ws")] {
        let options = LoadOptions {
            transport,
            keep: true,
            idempotency: Some(prefix.into()),
            ..LoadOptions::new(served.url(""), 2, 2)
        };
        let report = drive(options.clone(), Arc::new(())).await.unwrap();
        assert_eq!((report.turns, report.error_count()), (4, 0), "{report:?}");
        let (_, listed) = served.get("/v1/sessions").await;
        let mut replays = 0;
        for session in listed["sessions"].as_array().unwrap() {
            let key = session["key"].as_str().unwrap();
            let (_, shown) = served.get(&format!("/v1/sessions/{key}?limit=10")).await;
            let items = shown["records"]["items"].as_array().unwrap();
            let first = items
                .iter()
                .find(|r| r["kind"] == "user")
                .and_then(|r| r["text"].as_str())
                .unwrap_or_default();
            // Sessions of this run only: their first turn says which session number they were.
            let Some(n) = (0..2).find(|&n| first == turn_text(n, 0)) else {
                continue;
            };
            if shown["session"]["turns"] != 2 {
                continue;
            }
            for turn in 0..2 {
                let path = format!("/v1/sessions/{key}/turns");
                let body = json!({ "text": turn_text(n, turn) });
                let key = options.turn_key(n, turn).unwrap();
                let (status, _, replayed, _) = keyed(&served, &path, Some(&key), body).await;
                assert_eq!((status, replayed), (200, true), "{prefix} {key}");
                replays += 1;
            }
            served.delete(&format!("/v1/sessions/{key}")).await;
        }
        assert_eq!(replays, 4, "{prefix}: every turn of the load was keyed");
    }
    served.shutdown().await;
}
