//! `hookline serve` over real sockets (issue 11 item 6): the server on an ephemeral loopback port
//! inside the test process, a real HTTP and WebSocket client. 100 sessions at once with their
//! records checked, approval round trips over SSE and over WebSocket, `/stop` cancelling a turn,
//! every error status, the auth refusals, the workspace fence and the drain's refusals.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod serve_support;

use std::sync::Arc;

use futures::{SinkExt as _, StreamExt as _};
use hookline::host::gateway::Activity;
use hookline::host::provider::EchoProvider;
use hookline::server::{start, ServeConfig, ServeError};
use serde_json::json;
use serve_support::{serve, until_activity, Hanging, SseReader, DEADLINE};
use tokio_tungstenite::tungstenite::Message;

const WRITE: &str = r#"call write_file {"path":"out.txt","content":"approved"}"#;

fn user_texts(records: &serde_json::Value) -> Vec<String> {
    records["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "user")
        .map(|r| r["text"].as_str().unwrap().to_owned())
        .collect()
}

#[actix_rt::test]
async fn a_hundred_sessions_run_turns_at_once_each_keeping_its_records_in_order() {
    let served = serve(Arc::new(EchoProvider::new()), |_| {}, |_| {}).await;
    let opens = (0..100).map(|_| served.open());
    let keys: Vec<String> = futures::future::join_all(opens).await;
    let runs = keys.iter().enumerate().map(|(i, key)| {
        let served = &served;
        async move {
            for turn in 0..3 {
                let (status, body) = served
                    .post(
                        &format!("/v1/sessions/{key}/turns"),
                        json!({ "text": format!("session {i} turn {turn}") }),
                    )
                    .await;
                assert_eq!(status, 200, "{body}");
                assert_eq!(body["stopReason"], "completed");
                assert!(
                    body["events"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|e| e["event"] == "user"
                            && e["text"] == format!("session {i} turn {turn}")),
                    "{body}"
                );
            }
        }
    });
    futures::future::join_all(runs).await;
    let distinct: std::collections::HashSet<&String> = keys.iter().collect();
    assert_eq!(distinct.len(), 100, "two sessions share an id");
    for (i, key) in keys.iter().enumerate() {
        let (status, body) = served.get(&format!("/v1/sessions/{key}?limit=1000")).await;
        assert_eq!(status, 200);
        let expected: Vec<String> = (0..3).map(|t| format!("session {i} turn {t}")).collect();
        assert_eq!(user_texts(&body["records"]), expected);
        assert_eq!(body["session"]["turns"], 3);
        assert_eq!(body["session"]["activity"], "idle");
    }
    let (_, list) = served.get("/v1/sessions").await;
    assert_eq!(list["sessions"].as_array().unwrap().len(), 100);
    // The metrics count them.
    let metrics = served
        .client
        .get(served.url("/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("hookline_sessions_open 100"), "{metrics}");
    assert!(metrics.contains("hookline_hook_calls_total"), "{metrics}");
    served.shutdown().await;
}

#[actix_rt::test]
async fn an_approval_round_trip_over_server_sent_events_lets_the_call_run() {
    let served = serve(Arc::new(EchoProvider::new()), |_| {}, |_| {}).await;
    let key = served.open().await;
    let response = served
        .client
        .post(served.url(&format!("/v1/sessions/{key}/turns")))
        .header("accept", "text/event-stream")
        .json(&json!({ "text": WRITE }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut events = SseReader::new(response);
    let asked = events.until("approval-requested").await;
    assert_eq!(asked["tool"], "write_file");
    let call_id = asked["callId"].as_str().unwrap().to_owned();
    let (_, shown) = served.get(&format!("/v1/sessions/{key}")).await;
    assert_eq!(shown["session"]["activity"], "approval");
    assert_eq!(shown["records"]["busy"], true);
    assert_eq!(shown["pendingApprovals"], json!([call_id]));
    let (status, answer) = served
        .post(
            &format!("/v1/sessions/{key}/approvals/{call_id}"),
            json!({ "decision": "allow" }),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer, json!({ "callId": call_id, "decision": "allow" }));
    let finished = events.until("turn-finished").await;
    assert_eq!(finished["stopReason"], "completed");
    let done = events.until("done").await;
    assert_eq!(done["stopReason"], "completed");
    assert_eq!(
        std::fs::read_to_string(served.dir.path().join("out.txt")).unwrap(),
        "approved"
    );
    // A second answer finds nothing waiting.
    let (status, again) = served
        .post(
            &format!("/v1/sessions/{key}/approvals/{call_id}"),
            json!({ "decision": "deny" }),
        )
        .await;
    assert_eq!(
        (status, again["error"]["code"].as_str()),
        (404, Some("not-waiting"))
    );
    served.shutdown().await;
}

async fn next_json<S>(socket: &mut S) -> serde_json::Value
where
    S: futures::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    loop {
        let message = tokio::time::timeout(DEADLINE, socket.next())
            .await
            .expect("nothing came on the socket")
            .expect("the socket closed")
            .unwrap();
        if let Message::Text(text) = message {
            return serde_json::from_str(text.as_str()).unwrap();
        }
    }
}

#[actix_rt::test]
async fn an_approval_round_trip_over_a_websocket_lets_the_call_run() {
    let served = serve(Arc::new(EchoProvider::new()), |_| {}, |_| {}).await;
    let key = served.open().await;
    let (mut socket, _) =
        tokio_tungstenite::connect_async(served.ws(&format!("/v1/sessions/{key}/ws")))
            .await
            .unwrap();
    socket
        .send(Message::text(
            json!({ "type": "turn", "text": WRITE }).to_string(),
        ))
        .await
        .unwrap();
    let call_id = loop {
        let message = next_json(&mut socket).await;
        if message["type"] == "event" && message["event"]["event"] == "approval-requested" {
            break message["event"]["callId"].as_str().unwrap().to_owned();
        }
    };
    socket
        .send(Message::text(
            json!({ "type": "approval", "callId": call_id, "decision": "allow" }).to_string(),
        ))
        .await
        .unwrap();
    let (mut approved, mut turn) = (None, None);
    while approved.is_none() || turn.is_none() {
        let message = next_json(&mut socket).await;
        assert_ne!(message["type"], "error", "{message}");
        if message["type"] == "done" && message["request"] == "approval" {
            approved = Some(message);
        } else if message["type"] == "done" && message["request"] == "turn" {
            turn = Some(message);
        }
    }
    assert_eq!(turn.unwrap()["stopReason"], "completed");
    assert_eq!(
        std::fs::read_to_string(served.dir.path().join("out.txt")).unwrap(),
        "approved"
    );
    // An inbound channel message for chat adapters, and a bad request answered on the socket.
    socket
        .send(Message::text(
            json!({ "type": "message", "message": { "from": "ann", "channelId": "telegram", "body": "hi" } })
                .to_string(),
        ))
        .await
        .unwrap();
    let done = next_json_of(&mut socket, "done").await;
    assert_eq!(done["request"], "message");
    socket
        .send(Message::text(r#"{"type":"turn"}"#))
        .await
        .unwrap();
    let error = next_json_of(&mut socket, "error").await;
    assert_eq!(error["error"]["code"], "bad-json", "{error}");
    socket.close(None).await.unwrap();
    served.shutdown().await;
}

async fn next_json_of<S>(socket: &mut S, kind: &str) -> serde_json::Value
where
    S: futures::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    loop {
        let message = next_json(socket).await;
        if message["type"] == kind {
            return message;
        }
    }
}

#[actix_rt::test]
async fn stop_cancels_the_turn_in_flight() {
    let served = serve(Arc::new(Hanging), |_| {}, |_| {}).await;
    let key = served.open().await;
    let turn = {
        let (client, url) = (
            served.client.clone(),
            served.url(&format!("/v1/sessions/{key}/turns")),
        );
        tokio::spawn(async move {
            let response = client
                .post(url)
                .json(&json!({ "text": "wait forever" }))
                .send()
                .await
                .unwrap();
            (
                response.status().as_u16(),
                response.json::<serde_json::Value>().await.unwrap(),
            )
        })
    };
    until_activity(&served, &key, Activity::Turn).await;
    let (status, stopped) = served
        .post(
            &format!("/v1/sessions/{key}/commands"),
            json!({ "command": "/stop" }),
        )
        .await;
    assert_eq!(status, 200, "{stopped}");
    let (status, report) = tokio::time::timeout(DEADLINE, turn)
        .await
        .expect("the turn did not stop")
        .unwrap();
    assert_eq!(status, 200);
    assert_eq!(report["stopReason"], "cancelled");
    served.shutdown().await;
}

// Issue 22 item 4: after `/stop` ends a turn that waited for an approval, the next turn's echo
// model answers the new message, not the stopped turn's refused result.
#[actix_rt::test]
async fn after_stop_ends_a_turn_waiting_for_approval_the_next_turn_is_answered() {
    let served = serve(Arc::new(EchoProvider::with_demo_call()), |_| {}, |_| {}).await;
    let key = served.open().await;
    let turn = {
        let (client, url) = (
            served.client.clone(),
            served.url(&format!("/v1/sessions/{key}/turns")),
        );
        tokio::spawn(async move {
            let response = client
                .post(url)
                .json(&json!({ "text": "first" }))
                .send()
                .await
                .unwrap();
            response.json::<serde_json::Value>().await.unwrap()
        })
    };
    until_activity(&served, &key, Activity::Approval).await;
    let (status, stopped) = served
        .post(
            &format!("/v1/sessions/{key}/commands"),
            json!({ "command": "/stop" }),
        )
        .await;
    assert_eq!(status, 200, "{stopped}");
    let report = tokio::time::timeout(DEADLINE, turn)
        .await
        .expect("the turn did not stop")
        .unwrap();
    assert_eq!(report["stopReason"], "cancelled", "{report}");
    let second = tokio::spawn({
        let (client, url) = (
            served.client.clone(),
            served.url(&format!("/v1/sessions/{key}/turns")),
        );
        async move {
            client
                .post(url)
                .json(&json!({ "text": "second" }))
                .send()
                .await
                .unwrap()
                .json::<serde_json::Value>()
                .await
                .unwrap()
        }
    });
    // The new message asks for its own demo call; refuse it so the turn ends.
    until_activity(&served, &key, Activity::Approval).await;
    let (_, status) = served.get(&format!("/v1/sessions/{key}")).await;
    let call = status["pendingApprovals"][0].as_str().unwrap().to_owned();
    let (denied, body) = served
        .post(
            &format!("/v1/sessions/{key}/approvals/{call}"),
            json!({ "decision": "deny" }),
        )
        .await;
    assert_eq!(denied, 200, "{body}");
    let answer = tokio::time::timeout(DEADLINE, second)
        .await
        .expect("the second turn did not end")
        .unwrap();
    let said: Vec<&str> = answer["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event"] == "assistant")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert!(
        said.first().is_some_and(|t| t.starts_with("echo: second")),
        "the next turn answered {said:?}"
    );
    served.shutdown().await;
}

async fn error_of(response: reqwest::Response) -> (u16, String, Option<String>) {
    let status = response.status().as_u16();
    let retry = response
        .headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().to_owned());
    let body: serde_json::Value = response.json().await.unwrap();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.ends_with('.'), "{message}");
    (
        status,
        body["error"]["code"].as_str().unwrap().to_owned(),
        retry,
    )
}

#[actix_rt::test]
async fn every_client_mistake_has_its_status_and_never_a_500() {
    let served = serve(
        Arc::new(EchoProvider::new()),
        |limits| limits.max_sessions = 1,
        |config| config.body_limit = 1024,
    )
    .await;
    let key = served.open().await;
    let client = &served.client;
    let turns = served.url(&format!("/v1/sessions/{key}/turns"));

    // Unknown session: 404.
    let response = client
        .get(served.url("/v1/sessions/nobody"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        error_of(response).await,
        (404, "unknown-session".into(), None)
    );
    // Bad JSON: 400 naming the field.
    let response = client
        .post(&turns)
        .json(&json!({ "txt": "x" }))
        .send()
        .await
        .unwrap();
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "bad-json");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("txt"),
        "{body}"
    );
    let response = client
        .post(&turns)
        .json(&json!({ "text": 5 }))
        .send()
        .await
        .unwrap();
    let body: serde_json::Value = response.json().await.unwrap();
    assert!(
        body["error"]["message"].as_str().unwrap().contains("text"),
        "{body}"
    );
    let response = client
        .post(&turns)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(error_of(response).await.0, 400);
    let response = client
        .post(&turns)
        .header("content-type", "text/plain")
        .body("hello")
        .send()
        .await
        .unwrap();
    assert_eq!(
        error_of(response).await,
        (415, "unsupported-media-type".into(), None)
    );
    let response = client
        .get(served.url("/v1/sessions/x?offset=minus"))
        .send()
        .await
        .unwrap();
    assert_eq!(error_of(response).await.0, 400);
    // Body over the cap: 413, with and without a content length.
    let big = json!({ "text": "x".repeat(4096) });
    let response = client.post(&turns).json(&big).send().await.unwrap();
    assert_eq!(
        error_of(response).await,
        (413, "body-too-large".into(), None)
    );
    let chunks = futures::stream::iter((0..8).map(|_| Ok::<_, std::io::Error>(vec![b' '; 512])));
    let response = client
        .post(&turns)
        .header("content-type", "application/json")
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    assert_eq!(error_of(response).await.0, 413);
    // Over --max-sessions: 503 with Retry-After.
    let response = client
        .post(served.url("/v1/sessions"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        error_of(response).await,
        (503, "full".into(), Some("1".into()))
    );
    // A workspace outside the root: refused, nothing made outside.
    for bad in ["../escape", "/etc"] {
        let response = client
            .post(served.url("/v1/sessions"))
            .json(&json!({ "workspace": bad }))
            .send()
            .await
            .unwrap();
        assert_eq!(error_of(response).await.1, "workspace-outside-root");
    }
    let commands = served.url(&format!("/v1/sessions/{key}/commands"));
    let response = client
        .post(&commands)
        .json(&json!({ "command": "/cd ../.." }))
        .send()
        .await
        .unwrap();
    assert_eq!(error_of(response).await.0, 403);
    let response = client
        .post(&commands)
        .json(&json!({ "command": "/warp" }))
        .send()
        .await
        .unwrap();
    assert_eq!(
        error_of(response).await,
        (400, "invalid-request".into(), None)
    );
    // Approval nobody waits for: 404; a bad decision: 400.
    let approval = served.url(&format!("/v1/sessions/{key}/approvals/call-9"));
    let response = client
        .post(&approval)
        .json(&json!({ "decision": "allow" }))
        .send()
        .await
        .unwrap();
    assert_eq!(error_of(response).await.1, "not-waiting");
    let response = client
        .post(&approval)
        .json(&json!({ "decision": "maybe" }))
        .send()
        .await
        .unwrap();
    assert_eq!(error_of(response).await.0, 400);
    // No such route, wrong method.
    let response = client.get(served.url("/v2/nothing")).send().await.unwrap();
    assert_eq!(error_of(response).await.0, 404);
    let response = client.put(served.url("/v1/sessions")).send().await.unwrap();
    assert_eq!(
        error_of(response).await,
        (405, "method-not-allowed".into(), None)
    );
    // Draining: /readyz, new sessions and turns answer 503; /healthz still 200.
    served.handle.as_ref().unwrap().begin_drain();
    let response = client.get(served.url("/readyz")).send().await.unwrap();
    assert_eq!(
        error_of(response).await,
        (503, "draining".into(), Some("1".into()))
    );
    let response = client
        .post(&turns)
        .json(&json!({ "text": "late" }))
        .send()
        .await
        .unwrap();
    assert_eq!(error_of(response).await.1, "draining");
    let response = client
        .post(served.url("/v1/sessions"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(error_of(response).await.1, "draining");
    assert_eq!(
        served.get("/healthz").await,
        (200, json!({ "status": "ok" }))
    );
    served.shutdown().await;
}

#[actix_rt::test]
async fn a_workspace_under_the_root_is_made_and_used() {
    let served = serve(Arc::new(EchoProvider::new()), |_| {}, |_| {}).await;
    let (status, body) = served
        .post(
            "/v1/sessions",
            json!({ "workspace": "team/a", "approvalMode": "allow-workspace" }),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let root = served.dir.path().canonicalize().unwrap();
    assert_eq!(body["workspace"], root.join("team/a").display().to_string());
    assert_eq!(body["approvalMode"], "allow-workspace");
    #[cfg(unix)]
    {
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), served.dir.path().join("link")).unwrap();
        let (status, body) = served
            .post("/v1/sessions", json!({ "workspace": "link/inner" }))
            .await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (403, Some("workspace-outside-root"))
        );
        assert!(!outside.path().join("inner").exists());
    }
    // DELETE ends it: its end hooks ran; then it is unknown.
    let (_, list) = served.get("/v1/sessions").await;
    let key = list["sessions"][0]["key"].as_str().unwrap().to_owned();
    let (status, closed) = served.delete(&format!("/v1/sessions/{key}")).await;
    assert_eq!(status, 200, "{closed}");
    assert!(
        closed["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["event"] == "session-ended"),
        "{closed}"
    );
    assert_eq!(served.get(&format!("/v1/sessions/{key}")).await.0, 404);
    served.shutdown().await;
}

#[actix_rt::test]
async fn without_the_token_or_with_a_wrong_one_every_route_but_healthz_is_refused() {
    let served = serve(
        Arc::new(EchoProvider::new()),
        |_| {},
        |config| {
            config.token = Some("s3cret".into());
        },
    )
    .await;
    let client = &served.client;
    assert_eq!(
        client
            .get(served.url("/healthz"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    for path in [
        "/v1/sessions",
        "/v1/plugins",
        "/metrics",
        "/readyz",
        "/v1/sessions/x/ws",
    ] {
        let response = client.get(served.url(path)).send().await.unwrap();
        assert_eq!(response.headers()["www-authenticate"], "Bearer");
        assert_eq!(
            error_of(response).await,
            (401, "unauthorized".into(), None),
            "{path}"
        );
        let response = client
            .get(served.url(path))
            .bearer_auth("wrong")
            .send()
            .await
            .unwrap();
        assert_eq!(error_of(response).await.0, 401, "{path}");
    }
    // An upgrade header does not open other routes.
    let response = client
        .get(served.url("/v1/sessions"))
        .header("upgrade", "websocket")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    let response = client
        .post(served.url("/v1/sessions"))
        .bearer_auth("s3cret")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    let key = response.json::<serde_json::Value>().await.unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    // A socket without a header must authenticate by its first message; a wrong token closes
    // it with 4401, the right one is served.
    let url = served.ws(&format!("/v1/sessions/{key}/ws"));
    let (mut socket, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
    socket
        .send(Message::text(
            json!({ "type": "auth", "token": "wrong" }).to_string(),
        ))
        .await
        .unwrap();
    let closed = tokio::time::timeout(DEADLINE, socket.next()).await.unwrap();
    match closed {
        Some(Ok(Message::Close(Some(frame)))) => assert_eq!(u16::from(frame.code), 4401),
        other => panic!("expected a close, got {other:?}"),
    }
    let (mut socket, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
    socket
        .send(Message::text(
            json!({ "type": "auth", "token": "s3cret" }).to_string(),
        ))
        .await
        .unwrap();
    socket
        .send(Message::text(
            json!({ "type": "command", "command": "/model small" }).to_string(),
        ))
        .await
        .unwrap();
    let done = next_json_of(&mut socket, "done").await;
    assert_eq!(done["session"]["model"], "small");
    socket.close(None).await.unwrap();
    served.shutdown().await;
}

#[actix_rt::test]
async fn a_non_loopback_address_without_a_token_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let arbiter = actix::Arbiter::new();
    let gateway = hookline::host::Host::builder()
        .workspace(dir.path())
        .start_gateway(hookline::host::gateway::GatewayLimits {
            arbiters: vec![arbiter.handle()],
            ..Default::default()
        })
        .unwrap();
    let config = ServeConfig {
        listen: "0.0.0.0:0".parse().unwrap(),
        ..ServeConfig::new(dir.path())
    };
    let refused = start(gateway.clone(), config).await;
    assert!(matches!(refused, Err(ServeError::NeedsToken(_))));
    gateway.shutdown("test", None).await.unwrap();
    arbiter.stop();
}

#[actix_rt::test]
async fn a_server_given_a_bound_socket_serves_on_it_and_leaves_it_open_for_its_owner() {
    // Issue 49: a replacing server accepts on the socket its predecessor (or systemd) bound.
    let dir = tempfile::tempdir().unwrap();
    let arbiter = actix::Arbiter::new();
    let gateway = hookline::host::Host::builder()
        .workspace(dir.path())
        .start_gateway(hookline::host::gateway::GatewayLimits {
            arbiters: vec![arbiter.handle()],
            ..Default::default()
        })
        .unwrap();
    let bound = Arc::new(std::net::TcpListener::bind("127.0.0.1:0").unwrap());
    let expected = bound.local_addr().unwrap();
    let config = ServeConfig {
        listener: Some(bound.clone()),
        ..ServeConfig::new(dir.path())
    };
    let (addr, handle) = start(gateway.clone(), config).await.unwrap();
    assert_eq!(addr, expected);
    let health = reqwest::get(format!("http://{addr}/healthz"))
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    handle.drain("test", None).await.unwrap();
    // The owner's socket still listens: a connection waits in its backlog, never refused.
    assert!(std::net::TcpStream::connect(expected).is_ok());
    arbiter.stop();
}

#[actix_rt::test]
async fn a_stored_session_is_resumed_by_id_and_goes_on_where_it_stopped() {
    let served = serve(Arc::new(EchoProvider::new()), |_| {}, |_| {}).await;
    let key = served.open().await;
    let (status, body) = served
        .post(
            &format!("/v1/sessions/{key}/turns"),
            json!({"text": "first"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // Open here already: the same session, at once.
    let (status, body) = served
        .post(&format!("/v1/sessions/{key}/resume"), json!({}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["key"], key.as_str());
    let (_, shown) = served.get(&format!("/v1/sessions/{key}")).await;
    let records = shown["records"]["total"].clone();
    // Closed (its lock given up), then opened again from the store by id.
    let (status, closed) = served.delete(&format!("/v1/sessions/{key}")).await;
    assert_eq!(status, 200, "{closed}");
    let (status, _) = served.get(&format!("/v1/sessions/{key}")).await;
    assert_eq!(status, 404);
    let (status, body) = served
        .post(&format!("/v1/sessions/{key}/resume"), json!({}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["key"], key.as_str());
    assert_eq!(body["records"], records, "{body}");
    let (status, body) = served
        .post(
            &format!("/v1/sessions/{key}/turns"),
            json!({"text": "second"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // Ids the store does not hold, or that no store could hold, are 404s, never 500s.
    for id in ["s-never-stored", "a%2Fb", "a%20b"] {
        let (status, body) = served
            .post(&format!("/v1/sessions/{id}/resume"), json!({}))
            .await;
        assert_eq!(status, 404, "{id}: {body}");
        assert_eq!(body["error"]["code"], "unknown-session", "{id}: {body}");
    }
    served.shutdown().await;
}
