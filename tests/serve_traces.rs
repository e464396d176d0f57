//! OpenTelemetry traces of the real `hookline serve` binary (issue 24 item 3,
//! docs/observability.md): a local OTLP/HTTP receiver decodes what the server exports, and the
//! spans of one turn asked for with a client's `traceparent` are checked by name, parent and
//! attributes, down to the external plugin that receives the trace context on its request line.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::routing::post;
use nix::sys::signal::{kill, Signal};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use serde_json::json;

mod cluster_support;
mod support;
use cluster_support::Node;
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

/// Starts serve with `env`, the plugins `tracer` (changes the user message) and `broken` (fails
/// its first call), runs one turn with the client's `traceparent`, drains with SIGTERM, and
/// returns the tracer's transcript.
async fn one_traced_turn(dir: &std::path::Path, env: &[(&str, &str)]) -> String {
    let plugins = dir.join("home-traced").join("plugins");
    let on_user = |mode: &str| json!({ "args": [mode, "on_user_message"] });
    let tracer = faulty(&plugins, "tracer", "ok", on_user("ok"));
    faulty(&plugins, "broken", "error", on_user("error"));
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
    let mut server = Node::spawn("traced", dir, command, &[]);
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let opened: serde_json::Value = http
        .post(format!("{}/v1/sessions", server.url))
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let key = opened["key"].as_str().unwrap();
    let answer = http
        .post(format!("{}/v1/sessions/{key}/turns", server.url))
        .header("traceparent", format!("00-{TRACE_ID}-{CLIENT_SPAN}-01"))
        // The echo model asks for this tool call, then answers with the tool's result.
        .json(&json!({ "text": r#"call list_dir {"path": "."}"# }))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());
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
    let received = received.lock().unwrap().clone();
    let (resource, _) = received.first().expect("spans were exported");
    assert_eq!(
        attr(resource, "service.name").as_deref(),
        Some("hookline-under-test")
    );
    let spans: Vec<Span> = received.into_iter().map(|(_, span)| span).collect();

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
