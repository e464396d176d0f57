//! A local stub server of both provider families for the provider tests: it answers
//! `POST /v1/chat/completions` (OpenAI-compatible) and `POST /v1/messages` (Anthropic) from one
//! queue of canned replies, on an ephemeral loopback port, and records every request it received
//! (headers and JSON body). Nothing leaves the machine.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use tokio::sync::Notify;

/// One canned reply.
#[derive(Clone, Debug)]
pub enum Canned {
    /// A whole answer: status, extra headers, body.
    Whole {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
    /// A streamed answer: each piece is sent as its own body chunk; then the body ends, or
    /// (with `hang`) stays open until the client goes away.
    Stream { pieces: Vec<String>, hang: bool },
    /// A stream that breaks the connection after its pieces (no clean end).
    Broken { pieces: Vec<String> },
    /// Echoes the request's `Authorization` (or `x-api-key`) header in a 401 error message (a
    /// careless server).
    EchoAuth,
}

impl Canned {
    /// A 200 answer with `body`.
    pub fn ok(body: serde_json::Value) -> Self {
        Self::Whole {
            status: 200,
            headers: vec![("content-type", "application/json".into())],
            body: body.to_string(),
        }
    }

    /// An error status with an API error body.
    pub fn status(status: u16, message: &str) -> Self {
        Self::Whole {
            status,
            headers: vec![("content-type", "application/json".into())],
            body: serde_json::json!({"error": {"message": message, "type": "stub"}}).to_string(),
        }
    }

    /// A streamed answer of SSE `data:` events, each event split into pieces of `split` bytes.
    pub fn sse(events: &[serde_json::Value], split: usize) -> Self {
        let mut text = String::new();
        for event in events {
            text.push_str(&format!("data: {event}\n\n"));
        }
        text.push_str("data: [DONE]\n\n");
        Self::Stream {
            pieces: pieces(&text, split),
            hang: false,
        }
    }
}

impl Canned {
    /// An Anthropic error status with its error body (`{"type":"error","error":{...}}`).
    pub fn anthropic_status(status: u16, kind: &str, message: &str) -> Self {
        Self::Whole {
            status,
            headers: vec![("content-type", "application/json".into())],
            body: serde_json::json!({"type": "error", "error": {"type": kind, "message": message}})
                .to_string(),
        }
    }

    /// An Anthropic stream: each event as `event: <type>` and `data: <json>`, split into pieces
    /// of `split` bytes (no `[DONE]`: the stream ends with `message_stop`).
    pub fn anthropic_sse(events: &[serde_json::Value], split: usize) -> Self {
        Self::Stream {
            pieces: pieces(&anthropic_events(events), split),
            hang: false,
        }
    }
}

/// The SSE text of Anthropic `events`.
pub fn anthropic_events(events: &[serde_json::Value]) -> String {
    let mut text = String::new();
    for event in events {
        let kind = event["type"].as_str().unwrap_or("message");
        text.push_str(&format!("event: {kind}\ndata: {event}\n\n"));
    }
    text
}

/// `text` in pieces of at most `split` bytes, cut at character boundaries.
pub fn pieces(text: &str, split: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for c in text.chars() {
        if current.len() + c.len_utf8() > split && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        current.push(c);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// A request the stub received.
#[derive(Clone, Debug)]
pub struct Received {
    /// The client's end of the connection the request came on.
    pub peer: SocketAddr,
    pub headers: HeaderMap,
    pub body: serde_json::Value,
}

#[derive(Default)]
struct Inner {
    replies: Mutex<VecDeque<Canned>>,
    received: Mutex<Vec<Received>>,
    /// Notified when a hanging stream's client went away.
    closed: Notify,
    /// Notified when a request arrives.
    arrived: Notify,
}

/// The running stub.
#[derive(Clone)]
pub struct Stub {
    inner: Arc<Inner>,
    /// `http://127.0.0.1:<port>/v1` (the OpenAI family's base URL)
    pub base_url: String,
    /// `http://127.0.0.1:<port>` (the Anthropic family's base URL)
    pub root_url: String,
}

impl Stub {
    /// Starts a stub on an ephemeral loopback port (on the current tokio runtime).
    pub async fn start(replies: Vec<Canned>) -> Self {
        let inner = Arc::new(Inner::default());
        inner.replies.lock().unwrap().extend(replies);
        let app = Router::new()
            .route("/v1/chat/completions", post(answer))
            .route("/v1/messages", post(answer))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let app = app.into_make_service_with_connect_info::<SocketAddr>();
            let _ = axum::serve(listener, app).await;
        });
        Self {
            inner,
            base_url: format!("http://127.0.0.1:{port}/v1"),
            root_url: format!("http://127.0.0.1:{port}"),
        }
    }

    /// Queues more replies.
    pub fn push(&self, reply: Canned) {
        self.inner.replies.lock().unwrap().push_back(reply);
    }

    /// The requests received so far.
    pub fn received(&self) -> Vec<Received> {
        self.inner.received.lock().unwrap().clone()
    }

    /// How many canned replies are left.
    pub fn left(&self) -> usize {
        self.inner.replies.lock().unwrap().len()
    }

    /// Waits (at most 10 s) until a request arrives; false if none did.
    pub async fn request_arrived(&self) -> bool {
        tokio::time::timeout(Duration::from_secs(10), self.inner.arrived.notified())
            .await
            .is_ok()
    }

    /// Waits (at most 10 s) until a hanging stream's client has gone away; false if it never did.
    pub async fn client_went_away(&self) -> bool {
        tokio::time::timeout(Duration::from_secs(10), self.inner.closed.notified())
            .await
            .is_ok()
    }
}

/// Tells the stub a hanging stream was dropped (its client closed the connection).
struct OnDrop(Arc<Inner>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        self.0.closed.notify_one();
    }
}

async fn answer(
    State(inner): State<Arc<Inner>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let json = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    inner.received.lock().unwrap().push(Received {
        peer,
        headers: headers.clone(),
        body: json,
    });
    inner.arrived.notify_one();
    let reply = inner.replies.lock().unwrap().pop_front();
    let Some(reply) = reply else {
        return Response::builder()
            .status(StatusCode::GONE)
            .body(Body::from(
                "{\"error\":{\"message\":\"the stub has no reply left\"}}",
            ))
            .unwrap();
    };
    match reply {
        Canned::Whole {
            status,
            headers,
            body,
        } => {
            let mut response = Response::builder().status(status);
            for (name, value) in headers {
                response = response.header(name, value);
            }
            response.body(Body::from(body)).unwrap()
        }
        Canned::Stream { pieces, hang } => {
            let stream = futures::stream::iter(pieces.into_iter().map(Ok::<_, std::io::Error>));
            let body = if hang {
                // Keep-alive comments every 20 ms: the write that fails after the client went
                // away drops the body, and with it the guard that tells the test.
                let guard = OnDrop(inner.clone());
                let pings = futures::stream::unfold(guard, |guard| async move {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Some((Ok(": keep-alive\n\n".to_owned()), guard))
                });
                Body::from_stream(futures::StreamExt::chain(stream, pings))
            } else {
                Body::from_stream(stream)
            };
            Response::builder()
                .status(200)
                .header("content-type", "text/event-stream")
                .body(body)
                .unwrap()
        }
        Canned::Broken { pieces } => {
            // The pieces go out first (headers and all); only then does the connection break.
            let broken = futures::stream::once(async {
                tokio::time::sleep(Duration::from_millis(50)).await;
                Err(std::io::Error::other("broken"))
            });
            let stream = futures::StreamExt::chain(
                futures::stream::iter(pieces.into_iter().map(Ok::<_, std::io::Error>)),
                broken,
            );
            Response::builder()
                .status(200)
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(stream))
                .unwrap()
        }
        Canned::EchoAuth => {
            let auth = headers
                .get("authorization")
                .or_else(|| headers.get("x-api-key"))
                .and_then(|v| v.to_str().ok())
                .unwrap_or("none")
                .to_owned();
            let body = serde_json::json!({"error": {"message": format!("Incorrect API key provided: {auth}")}});
            Response::builder()
                .status(401)
                .header("content-type", "application/json")
                .body(Body::from(body.to_string()))
                .unwrap()
        }
    }
}

/// Starts `replies` on a stub served from its own thread (the test itself blocks on the
/// terminal), and a runtime for the test's own waits.
pub fn stub_on_a_thread(replies: Vec<Canned>) -> (Stub, tokio::runtime::Runtime) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            tx.send(Stub::start(replies).await).unwrap();
            std::future::pending::<()>().await;
        });
    });
    let stub = rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    (stub, runtime)
}
