//! `hookline load --stub-url` (issue 47 item 4): after the served turns, the driver asks the
//! model stub the server calls directly, as many requests at the same concurrency, and reports
//! what a served turn adds over it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hookline::cli::load::{run as drive, LoadOptions, LoadReport};
use hookline::host::gateway::{Gateway, GatewayLimits};
use hookline::host::Host;
use hookline::providers::{OpenAiConfig, OpenAiProvider};
use hookline::server::{start, ServeConfig};

const ANSWER: &str = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":1}}"#;

/// The same answer streamed, in two parts.
const STREAMED: &str = concat!(
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"o\"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"k\"},\"finish_reason\":\"stop\"}]}\n\n",
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":1}}\n\n",
    "data: [DONE]\n\n",
);

/// A stub model on a thread of its own, counting the requests it answers.
fn stub(count: Arc<AtomicU64>) -> String {
    stub_seeing(count, Arc::default())
}

/// A stub model on a thread of its own, counting the requests it answers and keeping each
/// request's messages' roles.
fn stub_seeing(count: Arc<AtomicU64>, seen: Arc<Mutex<Vec<Vec<String>>>>) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let app = axum::Router::new().route(
                "/v1/chat/completions",
                axum::routing::post(move |body: axum::body::Bytes| {
                    count.fetch_add(1, Ordering::Relaxed);
                    let request: serde_json::Value = serde_json::from_slice(&body).unwrap();
                    let roles = request["messages"].as_array().unwrap().iter();
                    let roles = roles.map(|m| m["role"].as_str().unwrap().to_owned());
                    seen.lock().unwrap().push(roles.collect());
                    // Streamed when asked, as `scripts/stub-model.py` answers.
                    let answer = if request["stream"] == true {
                        ("text/event-stream", STREAMED)
                    } else {
                        ("application/json", ANSWER)
                    };
                    async move { ([("content-type", answer.0)], answer.1) }
                }),
            );
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    format!("http://{}/v1", rx.recv().unwrap())
}

/// A gateway whose model is the stub at `stub_url`, on `arbiters` (none: the shards' own).
fn gateway(stub_url: &str, dir: &std::path::Path, arbiters: Vec<actix::ArbiterHandle>) -> Gateway {
    let provider = OpenAiProvider::new(OpenAiConfig::new(stub_url, "stub")).unwrap();
    Host::builder()
        .provider(Arc::new(provider))
        .workspace(dir)
        .start_gateway(GatewayLimits {
            arbiters,
            ..GatewayLimits::default()
        })
        .unwrap()
}

/// `hookline load` over HTTP against `addr`: `sessions` x `turns`, the stub at `stub_url` asked
/// directly after them when given.
fn load_options(
    addr: std::net::SocketAddr,
    sessions: usize,
    turns: usize,
    stub_url: Option<&str>,
) -> LoadOptions {
    LoadOptions {
        stub_url: stub_url.map(str::to_owned),
        ..LoadOptions::new(format!("http://{addr}"), sessions, turns)
    }
}

/// `hookline load` with `options`, on a thread and runtime of its own (as the command runs it),
/// so the server under test keeps this test's actix runtime to itself.
async fn load(options: LoadOptions) -> LoadReport {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _ = tx.send(runtime.block_on(drive(options, Arc::new(()))));
    });
    rx.await.unwrap().unwrap()
}

#[actix_rt::test]
async fn load_with_a_stub_url_asks_the_stub_directly_and_reports_the_overhead() {
    let answered = Arc::new(AtomicU64::new(0));
    let stub_url = stub(answered.clone());
    let dir = tempfile::tempdir().unwrap();
    let arbiter = actix::Arbiter::new();
    let gateway = gateway(&stub_url, dir.path(), vec![arbiter.handle()]);
    let (addr, handle) = start(gateway, ServeConfig::new(dir.path())).await.unwrap();
    let options = load_options(addr, 2, 3, Some(&stub_url));
    let report = load(options).await;
    handle.drain("test", None).await.unwrap();
    assert_eq!((report.turns, report.error_count()), (6, 0), "{report:?}");
    let stub = report.stub.as_ref().expect("the stub was asked");
    assert_eq!((stub.requests, stub.errors), (6, 0), "{stub:?}");
    assert_eq!(stub.url, stub_url);
    // Six model calls through the server, six straight to the stub.
    assert_eq!(answered.load(Ordering::Relaxed), 12);
    let overhead = report.overhead_p50_ms.expect("an overhead beside a stub");
    assert!(
        (overhead - (report.p50_ms - stub.p50_ms)).abs() < 1e-9,
        "{report:?}"
    );
    arbiter.stop();
}

#[actix_rt::test]
async fn the_stub_is_asked_with_each_conversation_so_far_and_timed_beside_the_turn_windows() {
    // Issue 47: the server's request to its model carries the session's history, so the stub's
    // time grows with it; the stub asked directly must be asked the same way, or the overhead
    // of a long session counts the stub's growth as the server's.
    let seen = Arc::new(Mutex::new(Vec::new()));
    let stub_url = stub_seeing(Arc::default(), seen.clone());
    let dir = tempfile::tempdir().unwrap();
    let arbiter = actix::Arbiter::new();
    let gateway = gateway(&stub_url, dir.path(), vec![arbiter.handle()]);
    let (addr, handle) = start(gateway, ServeConfig::new(dir.path())).await.unwrap();
    let turns = 100;
    let options = load_options(addr, 1, turns, Some(&stub_url));
    let report = load(options).await;
    handle.drain("test", None).await.unwrap();
    assert_eq!((report.turns, report.error_count()), (100, 0), "{report:?}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2 * turns);
    // The server's requests come first, each opening with its system text; then the driver's,
    // the conversation so far: user, then the stub's answer and the next user message.
    let (served, direct) = seen.split_at(turns);
    assert!(
        served.iter().all(|roles| roles[0] == "system"),
        "{served:?}"
    );
    for (turn, roles) in direct.iter().enumerate() {
        let expected: Vec<&str> = std::iter::once("user")
            .chain((0..turn).flat_map(|_| ["assistant", "user"]))
            .collect();
        assert_eq!(roles, &expected, "turn {turn}");
        // As long as the served request, less its system text.
        assert_eq!(roles.len(), served[turn].len() - 1, "turn {turn}");
    }
    let stub = report.stub.as_ref().unwrap();
    let (early, last) = (stub.early.as_ref().unwrap(), stub.last.as_ref().unwrap());
    assert_eq!(
        (early.first, early.last, last.first, last.last),
        (51, 100, 51, 100)
    );
    assert!(early.p50_ms > 0.0 && stub.p50_ms > 0.0, "{stub:?}");
    arbiter.stop();
}

#[actix_rt::test]
async fn a_served_turn_without_arbiters_of_its_own_runs_on_its_shard() {
    // Issue 47: `serve` no longer refuses a gateway without arbiters; each session then runs on
    // its pipeline shard's arbiter and answers like any other.
    let answered = Arc::new(AtomicU64::new(0));
    let stub_url = stub(answered.clone());
    let dir = tempfile::tempdir().unwrap();
    let gateway = gateway(&stub_url, dir.path(), Vec::new());
    let (addr, handle) = start(gateway, ServeConfig::new(dir.path())).await.unwrap();
    let options = load_options(addr, 4, 2, None);
    let report = load(options).await;
    handle.drain("test", None).await.unwrap();
    assert_eq!((report.turns, report.error_count()), (8, 0), "{report:?}");
    assert!(report.stub.is_none() && report.overhead_p50_ms.is_none());
    assert_eq!(answered.load(Ordering::Relaxed), 8);
}
