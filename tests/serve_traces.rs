//! OpenTelemetry traces of the real `hookline serve` binary (issue 24 item 3,
//! docs/observability.md): a local OTLP/HTTP receiver decodes what the server exports, and the
//! spans of one turn asked for with a client's `traceparent` are checked by name, parent and
//! attributes, down to the external plugin that receives the trace context on its request line;
//! a WebSocket's turns join the upgrade's trace (or the one their message names), and a model
//! provider's stub receives the model call's `traceparent` (issue 34 item 4).
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::routing::post;
use futures::{SinkExt as _, StreamExt as _};
use nix::sys::signal::{kill, Signal};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use serde_json::json;

mod cluster_support;
mod provider_stub;
mod support;
use cluster_support::Node;
use provider_stub::{Canned, Stub};
use support::faulty;

/// The client's trace and span, as its `traceparent` names them.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";
const EXIT_WITHIN: Duration = Duration::from_secs(30);

/// Every export request the receiver got: the resource's attributes and its spans.
type Received = Arc<Mutex<Vec<(Vec<KeyValue>, Span)>>>;

/// A local OTLP/HTTP receiver (`POST /v1/traces`, protobuf): its base URL and what it got.
async fn receiver() -> (String, Received) {
    let received: Received = Arc::default();
    let store = received.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        post(move |body: Bytes| {
            let store = store.clone();
            async move {
                let request = ExportTraceServiceRequest::decode(body).unwrap();
                let mut store = store.lock().unwrap();
                for resource_spans in request.resource_spans {
                    let resource = resource_spans.resource.unwrap_or_default().attributes;
                    for scope in resource_spans.scope_spans {
                        for span in scope.spans {
                            store.push((resource.clone(), span));
                        }
                    }
                }
                (
                    [("content-type", "application/x-protobuf")],
                    Vec::<u8>::new(),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), received)
}

/// An attribute's value as text.
fn attr(attributes: &[KeyValue], key: &str) -> Option<String> {
    let value = attributes.iter().find(|kv| kv.key == key)?.value.clone()?;
    match value.value? {
        Value::StringValue(text) => Some(text),
        Value::IntValue(n) => Some(n.to_string()),
        Value::BoolValue(b) => Some(b.to_string()),
        other => Some(format!("{other:?}")),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The one span named `name` whose attributes include every pair of `with`.
fn one<'a>(spans: &'a [Span], name: &str, with: &[(&str, &str)]) -> &'a Span {
    let found: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == name)
        .filter(|s| {
            with.iter()
                .all(|(k, v)| attr(&s.attributes, k).as_deref() == Some(*v))
        })
        .collect();
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        found.len(),
        1,
        "one span '{name}' with {with:?}; exported: {names:?}"
    );
    found[0]
}

fn assert_child(child: &Span, parent: &Span) {
    assert_eq!(
        hex(&child.parent_span_id),
        hex(&parent.span_id),
        "'{}' is a child of '{}'",
        child.name,
        parent.name
    );
    assert_eq!(
        hex(&child.trace_id),
        TRACE_ID,
        "'{}' is in the client's trace",
        child.name
    );
}

/// Starts `hookline serve` (node `name`, its plugins home `DIR/home-NAME`) with `env` and `args`,
/// the OpenTelemetry variables the test's own environment may hold removed first.
fn traced_serve(dir: &std::path::Path, name: &str, env: &[(&str, &str)], args: &[&str]) -> Node {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hookline"));
    for name in [
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    ] {
        command.env_remove(name);
    }
    for name in [
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_SERVICE_NAME",
        "OTEL_TRACES_SAMPLER",
    ] {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    Node::spawn(name, dir, command, args)
}

/// SIGTERM, then waits (bounded) for the drain to end the process with status 0: every span is
/// flushed by then.
async fn drain(server: &mut Node) {
    kill(server.pid(), Signal::SIGTERM).unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = server.exit_status() {
            break status;
        }
        assert!(started.elapsed() < EXIT_WITHIN, "serve did not exit");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(
        status.success(),
        "serve exits 0; its log:\n{}",
        server.log_text()
    );
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// Opens a session; its key.
async fn open(http: &reqwest::Client, server: &Node) -> String {
    let opened: serde_json::Value = http
        .post(format!("{}/v1/sessions", server.url))
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    opened["key"].as_str().unwrap().to_owned()
}

/// The spans the receiver got.
fn spans_of(received: &Received) -> Vec<Span> {
    let received = received.lock().unwrap().clone();
    received.into_iter().map(|(_, span)| span).collect()
}

/// Starts serve with `env`, the plugins `tracer` (changes the user message) and `broken` (fails
/// its first call), runs one turn with the client's `traceparent`, drains with SIGTERM, and
/// returns the tracer's transcript.
async fn one_traced_turn(dir: &std::path::Path, env: &[(&str, &str)]) -> String {
    let plugins = dir.join("home-traced").join("plugins");
    let on_user = |mode: &str| json!({ "args": [mode, "on_user_message"] });
    let tracer = faulty(&plugins, "tracer", "ok", on_user("ok"));
    faulty(&plugins, "broken", "error", on_user("error"));
    let mut server = traced_serve(dir, "traced", env, &[]);
    let http = client();
    let key = open(&http, &server).await;
    let answer = http
        .post(format!("{}/v1/sessions/{key}/turns", server.url))
        .header("traceparent", format!("00-{TRACE_ID}-{CLIENT_SPAN}-01"))
        // The echo model asks for this tool call, then answers with the tool's result.
        .json(&json!({ "text": r#"call list_dir {"path": "."}"# }))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());
    drain(&mut server).await;
    std::fs::read_to_string(tracer.join("transcript.log")).unwrap()
}

#[tokio::test]
async fn a_turn_is_traced_from_the_clients_traceparent_down_to_the_plugin_process() {
    let (endpoint, received) = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_SERVICE_NAME", "hookline-under-test"),
    ];
    let transcript = one_traced_turn(dir.path(), &env).await;
    // Flushed on drain: every span is in by the time the process has exited.
    let first = received.lock().unwrap().first().cloned();
    let (resource, _) = first.expect("spans were exported");
    assert_eq!(
        attr(&resource, "service.name").as_deref(),
        Some("hookline-under-test")
    );
    let spans = spans_of(&received);

    let request = one(&spans, "POST /v1/sessions/{id}/turns", &[]);
    assert_eq!(hex(&request.trace_id), TRACE_ID);
    assert_eq!(hex(&request.parent_span_id), CLIENT_SPAN);
    assert_eq!(request.kind, 2, "a server span");
    let status = attr(&request.attributes, "http.response.status_code");
    assert_eq!(status.as_deref(), Some("200"));
    let route = attr(&request.attributes, "http.route");
    assert_eq!(route.as_deref(), Some("/v1/sessions/{id}/turns"));

    let turn = one(&spans, "turn", &[]);
    assert_child(turn, request);
    assert_eq!(
        attr(&turn.attributes, "stop_reason").as_deref(),
        Some("completed")
    );
    let models: Vec<&Span> = spans.iter().filter(|s| s.name == "model call").collect();
    assert_eq!(models.len(), 2, "one call asks for the tool, one answers");
    for model in models {
        assert_child(model, turn);
        assert_eq!(attr(&model.attributes, "purpose").as_deref(), Some("work"));
        assert_eq!(
            attr(&model.attributes, "outcome").as_deref(),
            Some("answered")
        );
    }
    let call = one(&spans, "tool call", &[("tool", "list_dir")]);
    assert_child(call, turn);
    assert_eq!(attr(&call.attributes, "decision").as_deref(), Some("allow"));
    let run = one(&spans, "tool run", &[("tool", "list_dir")]);
    assert_child(run, call);
    assert_eq!(attr(&run.attributes, "success").as_deref(), Some("true"));
    let tool_hook = one(&spans, "hook call", &[("hook", "on_tool_call")]);
    assert_child(tool_hook, call);

    let hook = one(&spans, "hook call", &[("hook", "on_user_message")]);
    assert_child(hook, turn);
    assert_eq!(
        attr(&hook.attributes, "changed_by").as_deref(),
        Some("tracer")
    );
    assert_eq!(attr(&hook.attributes, "skipped").as_deref(), Some("broken"));

    let changed = [("plugin", "tracer"), ("hook", "on_user_message")];
    let step = one(&spans, "plugin step", &changed);
    assert_child(step, hook);
    assert_eq!(
        attr(&step.attributes, "outcome").as_deref(),
        Some("changed")
    );
    let skipped = [("plugin", "broken"), ("outcome", "skipped")];
    let failed = one(&spans, "plugin step", &skipped);
    assert_child(failed, hook);
    let reason = attr(&failed.attributes, "skip_reason").unwrap_or_default();
    assert!(reason.contains("the faulty plugin refuses."), "{reason}");

    let trip = one(
        &spans,
        "plugin round trip",
        &[("plugin", "tracer"), ("request", "hook")],
    );
    assert_child(trip, step);
    assert_eq!(
        attr(&trip.attributes, "outcome").as_deref(),
        Some("replace")
    );

    // The plugin got the round trip's context on its request line: its own spans would join.
    let line = transcript
        .lines()
        .find(|l| l.contains(r#""hook":"on_user_message""#))
        .expect("the tracer got the hook call");
    let sent: serde_json::Value = serde_json::from_str(line).unwrap();
    let expected = format!("00-{TRACE_ID}-{}-01", hex(&trip.span_id));
    assert_eq!(sent["traceparent"], json!(expected));
}

/// A trace of the WebSocket tests: the upgrade's, or one a message names.
const MESSAGE_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const MESSAGE_SPAN: &str = "b7ad6b7169203331";

/// Sends a turn over `socket` and waits (bounded) for its `done`.
async fn socket_turn<S>(socket: &mut S, message: serde_json::Value)
where
    S: futures::Sink<tokio_tungstenite::tungstenite::Message>
        + futures::Stream<
            Item = Result<
                tokio_tungstenite::tungstenite::Message,
                tokio_tungstenite::tungstenite::Error,
            >,
        > + Unpin,
    <S as futures::Sink<tokio_tungstenite::tungstenite::Message>>::Error: std::fmt::Debug,
{
    use tokio_tungstenite::tungstenite::Message;
    socket
        .send(Message::Text(message.to_string().into()))
        .await
        .unwrap();
    let done = tokio::time::timeout(EXIT_WITHIN, async {
        while let Some(read) = socket.next().await {
            if let Message::Text(text) = read.unwrap() {
                let value: serde_json::Value = serde_json::from_str(text.as_str()).unwrap();
                if value["type"] == "done" || value["type"] == "error" {
                    return value;
                }
            }
        }
        panic!("the socket closed before the turn was done")
    })
    .await
    .expect("the turn was not done in time");
    assert_eq!(done["type"], "done", "{done}");
    assert_eq!(done["stopReason"], "completed", "{done}");
}

/// The one `WS turn` span in `trace` and the one `turn` under it.
fn turn_in<'a>(spans: &'a [Span], trace: &str) -> (&'a Span, &'a Span) {
    let in_trace = |name: &str| -> Vec<&'a Span> {
        spans
            .iter()
            .filter(|s| s.name == name && hex(&s.trace_id) == trace)
            .collect()
    };
    let requests = in_trace("WS turn");
    let turns = in_trace("turn");
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(requests.len(), 1, "one WS turn in trace {trace}: {names:?}");
    assert_eq!(turns.len(), 1, "one turn in trace {trace}: {names:?}");
    assert_eq!(hex(&turns[0].parent_span_id), hex(&requests[0].span_id));
    (requests[0], turns[0])
}

#[tokio::test]
async fn a_websocket_turn_joins_the_upgrades_trace_or_the_one_its_message_names() {
    let (endpoint, received) = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())];
    let mut server = traced_serve(dir.path(), "socket", &env, &[]);
    let key = open(&client(), &server).await;
    let url = format!(
        "{}/v1/sessions/{key}/ws",
        server.url.replacen("http://", "ws://", 1)
    );
    // A browser cannot set headers: the upgrade starts a trace of its own.
    let (mut socket, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
    socket_turn(&mut socket, json!({"type": "turn", "text": "hello"})).await;
    let traceparent = format!("00-{MESSAGE_TRACE}-{MESSAGE_SPAN}-01");
    let named = json!({"type": "turn", "text": "again", "traceparent": traceparent});
    socket_turn(&mut socket, named).await;
    // One that names no valid trace runs under the upgrade's, as if it named none.
    let invalid = json!({"type": "turn", "text": "more", "traceparent": "00-zz-1-01"});
    socket_turn(&mut socket, invalid).await;
    socket.close(None).await.unwrap();
    drain(&mut server).await;
    let spans = spans_of(&received);

    let upgrade = one(&spans, "GET /v1/sessions/{id}/ws", &[]);
    let upgrade_trace = hex(&upgrade.trace_id);
    let in_upgrade: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "WS turn" && hex(&s.trace_id) == upgrade_trace)
        .collect();
    assert_eq!(in_upgrade.len(), 2, "the plain and the invalid turn");
    for request in in_upgrade {
        assert_eq!(hex(&request.parent_span_id), hex(&upgrade.span_id));
        assert_eq!(
            attr(&request.attributes, "request").as_deref(),
            Some("turn")
        );
        let turn = spans
            .iter()
            .find(|s| s.name == "turn" && s.parent_span_id == request.span_id)
            .expect("the turn runs under its socket request");
        assert_eq!(hex(&turn.trace_id), upgrade_trace);
        let model = spans
            .iter()
            .find(|s| s.name == "model call" && s.parent_span_id == turn.span_id)
            .expect("the turn's model call");
        assert_eq!(hex(&model.trace_id), upgrade_trace);
    }

    let (request, turn) = turn_in(&spans, MESSAGE_TRACE);
    assert_eq!(
        hex(&request.parent_span_id),
        MESSAGE_SPAN,
        "the message's span wins"
    );
    assert_eq!(hex(&turn.trace_id), MESSAGE_TRACE);
}

#[tokio::test]
async fn a_model_provider_receives_the_model_calls_traceparent() {
    let (endpoint, received) = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    let answer = Canned::sse(
        &[
            json!({"choices": [{"index": 0, "delta": {"content": "traced"}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        ],
        64,
    );
    let stub = Stub::start(vec![answer]).await;
    let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())];
    let args = [
        "--provider",
        "openai",
        "--base-url",
        &stub.base_url,
        "--model",
        "stub-model",
    ];
    let mut server = traced_serve(dir.path(), "provider", &env, &args);
    let http = client();
    let key = open(&http, &server).await;
    let answer = http
        .post(format!("{}/v1/sessions/{key}/turns", server.url))
        .header("traceparent", format!("00-{TRACE_ID}-{CLIENT_SPAN}-01"))
        .json(&json!({ "text": "hello" }))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());
    drain(&mut server).await;
    let spans = spans_of(&received);

    let model = one(&spans, "model call", &[]);
    assert_eq!(hex(&model.trace_id), TRACE_ID, "the turn's trace");
    let sent = stub.received();
    assert_eq!(sent.len(), 1);
    let traceparent = sent[0]
        .headers
        .get("traceparent")
        .map(|v| v.to_str().unwrap());
    let expected = format!("00-{TRACE_ID}-{}-01", hex(&model.span_id));
    assert_eq!(traceparent, Some(expected.as_str()));
}

#[tokio::test]
async fn without_the_otel_variables_nothing_is_exported_and_plugins_get_no_traceparent() {
    let (endpoint, received) = receiver().await;
    let dir = tempfile::tempdir().unwrap();
    // The receiver listens, but nothing names it: no export may reach it.
    let _ = endpoint;
    let transcript = one_traced_turn(dir.path(), &[]).await;
    assert!(received.lock().unwrap().is_empty());
    assert!(transcript.contains(r#""hook":"on_user_message""#));
    assert!(!transcript.contains("traceparent"), "{transcript}");
}

#[test]
fn an_otlp_protocol_other_than_http_protobuf_is_refused_at_start_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hookline"))
        .args(["serve", "--listen", "127.0.0.1:0", "--workspace-root"])
        .arg(dir.path())
        .env("HOOKLINE_HOME", dir.path())
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "hookline: OTEL_EXPORTER_OTLP_PROTOCOL is 'grpc': hookline exports traces over OTLP \
         with http/protobuf only\n"
    );
    assert!(out.stdout.is_empty(), "it never listened");
}
