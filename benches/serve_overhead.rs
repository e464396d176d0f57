//! What a served turn adds over its model (issue 47 item 4): `serve` on the file store (on disk,
//! every append synced) with the OpenAI-compatible provider in front of a model stub that
//! answers at once (in this process, on a thread of its own, one write per answer), driven over
//! real HTTP by the load driver, which then asks the stub directly in the same run
//! (`LoadOptions::stub_url`). Both turn modes, durable steps (the default) and one commit per
//! turn, alternate over `ROUNDS` rounds: one session of `SEQUENTIAL` turns one after another,
//! then `CLIENTS` sessions at once. Printed: the medians of each round's p50 overhead over the
//! stub, turns/s, p99, and the load average. Run with `cargo bench --bench serve_overhead`
//! (a plain timed driver, not criterion: a round is hundreds of turns timed by wall clock).
#![allow(missing_docs)]
#![allow(clippy::expect_used, clippy::unwrap_used)] // a bench that cannot start has nothing to measure

/// The allocator the `hookline` binary ships with (`src/main.rs`), so figures match it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod support;

use std::sync::Arc;

use hookline::cli::load::{LoadOptions, LoadReport};
use hookline::host::gateway::GatewayLimits;
use hookline::host::Host;
use hookline::providers::{OpenAiConfig, OpenAiProvider};
use hookline::server::{install_recorder, start, ServeConfig};
use support::{load_average, load_on_own_runtime, median, serve_on_own_runtime};

const ROUNDS: usize = 3;
const SEQUENTIAL: usize = 300;
const CLIENTS: usize = 32;
const CLIENT_TURNS: usize = 40;

/// The stub's one answer: what `scripts/stub-model.py` answers a chat completion.
const ANSWER: &str = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":1}}"#;

/// Starts the stub on a thread of its own; returns its OpenAI base URL.
fn stub() -> String {
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(|_body: axum::body::Bytes| async {
            ([("content-type", "application/json")], ANSWER)
        }),
    );
    format!("http://{}/v1", serve_on_own_runtime(app))
}

/// One run of `serve` in `mode` (durable steps or not): the load driver's report.
async fn served(
    stub_url: &str,
    durable_steps: bool,
    sessions: usize,
    turns: usize,
    arbiters: &[actix::Arbiter],
) -> LoadReport {
    // On disk beside the build (as `--store` would be), not a tmpfs: the syncs are real.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let provider = OpenAiProvider::new(OpenAiConfig::new(stub_url, "stub")).unwrap();
    let gateway = Host::builder()
        .provider(Arc::new(provider))
        .workspace(dir.path())
        .durable_steps(durable_steps)
        .start_gateway(GatewayLimits {
            arbiters: arbiters.iter().map(actix::Arbiter::handle).collect(),
            ..GatewayLimits::default()
        })
        .expect("the gateway starts");
    let (addr, handle) = start(gateway, ServeConfig::new(dir.path())).await.unwrap();
    let options = LoadOptions {
        stub_url: Some(stub_url.to_owned()),
        ..LoadOptions::new(format!("http://{addr}"), sessions, turns)
    };
    let report = load_on_own_runtime(options).await;
    handle.drain("bench", None).await.unwrap();
    assert_eq!(report.error_count(), 0, "every turn is answered");
    report
}

#[derive(Default)]
struct Figures {
    overhead: Vec<f64>,
    clients_per_second: Vec<f64>,
    clients_p99: Vec<f64>,
    stub_p50: Vec<f64>,
}

fn main() {
    install_recorder();
    let stub_url = stub();
    let system = actix::System::new();
    let arbiters: Vec<actix::Arbiter> = (0..std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get))
        .map(|_| actix::Arbiter::new())
        .collect();
    let mut modes = [
        ("durable steps (default)", true, Figures::default()),
        ("commit per turn", false, Figures::default()),
    ];
    let before = load_average();
    system.block_on(async {
        for _ in 0..ROUNDS {
            for (_, durable, figures) in &mut modes {
                let one = served(&stub_url, *durable, 1, SEQUENTIAL, &arbiters).await;
                let stub = one.stub.as_ref().unwrap();
                figures.stub_p50.push(stub.p50_ms);
                figures.overhead.push(one.overhead_p50_ms.unwrap());
                let many = served(&stub_url, *durable, CLIENTS, CLIENT_TURNS, &arbiters).await;
                figures.clients_per_second.push(many.turns_per_second);
                figures.clients_p99.push(many.p99_ms);
            }
        }
    });
    println!(
        "serve/overhead: OpenAI provider over an in-process stub, file store on disk, \
         {ROUNDS} rounds, medians; load average {before} before, {} after",
        load_average()
    );
    for (name, _, figures) in modes {
        println!(
            "  {name:<24} 1 client: p50 {:.3} ms over the stub (stub p50 {:.3} ms); \
             {CLIENTS} clients: {:.0} turns/s, p99 {:.2} ms",
            median(figures.overhead),
            median(figures.stub_p50),
            median(figures.clients_per_second),
            median(figures.clients_p99),
        );
    }
    for arbiter in arbiters {
        arbiter.stop();
    }
}
