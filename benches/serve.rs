//! `hookline serve`'s cost per turn against the in-process gateway's (issue 11 item 5), in one
//! run: the same turns (the echo model, the bundled demo plugins, the store syncing each append)
//! go through a `Gateway` driven in-process, then through `serve` on loopback driven over real
//! HTTP by the load driver (`hookline load`'s code, on a thread of its own). Each side runs
//! `ROUNDS` times, alternating; the medians and their ratio are printed. The target: serve at
//! most 2x. Run with `cargo bench --bench serve` (a plain timed driver, not criterion: one round
//! is thousands of turns over many sessions, timed by wall clock).
#![allow(missing_docs)]
#![allow(clippy::expect_used, clippy::unwrap_used)] // a bench that cannot start has nothing to measure

/// The allocator the `hookline` binary ships with (`src/main.rs`), so figures match it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use hookline::cli::load::LoadOptions;
use hookline::host::demo::{example_plugins, WordCount};
use hookline::host::gateway::{Gateway, GatewayLimits, OpenSession};
use hookline::host::provider::EchoProvider;
use hookline::host::tools::ToolRegistry;
use hookline::host::turn::UserInput;
use hookline::host::Host;
use hookline::server::{install_recorder, start, ServeConfig};
use support::{load_on_own_runtime, median};

const SESSIONS: usize = 50;
const TURNS: usize = 20;
const ROUNDS: usize = 3;

fn gateway(dir: &std::path::Path, arbiters: &[actix::Arbiter]) -> Gateway {
    Host::builder()
        .plugins(example_plugins())
        .tool(Arc::new(WordCount::new()))
        .tools(ToolRegistry::with_builtins())
        .provider(Arc::new(EchoProvider::new()))
        .workspace(dir)
        .start_gateway(GatewayLimits {
            arbiters: arbiters.iter().map(actix::Arbiter::handle).collect(),
            ..GatewayLimits::default()
        })
        .expect("the gateway starts")
}

/// Seconds for SESSIONS x TURNS turns driven in-process.
async fn in_process(arbiters: &[actix::Arbiter]) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let gateway = gateway(dir.path(), arbiters);
    let opens = (0..SESSIONS).map(|_| gateway.open(OpenSession::default()));
    let handles = futures::future::try_join_all(opens).await.unwrap();
    let started = Instant::now();
    let runs = handles.iter().enumerate().map(|(i, handle)| async move {
        for turn in 0..TURNS {
            handle
                .turn(UserInput::work(format!("load {i} turn {turn}")))
                .await
                .unwrap();
        }
    });
    futures::future::join_all(runs).await;
    let seconds = started.elapsed().as_secs_f64();
    gateway.shutdown("bench", None).await.unwrap();
    seconds
}

/// Seconds for the same turns through `serve`, driven over HTTP from another thread.
async fn served(arbiters: &[actix::Arbiter]) -> (f64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let gateway = gateway(dir.path(), arbiters);
    let (addr, handle) = start(gateway, ServeConfig::new(dir.path())).await.unwrap();
    let options = LoadOptions::new(format!("http://{addr}"), SESSIONS, TURNS);
    let report = load_on_own_runtime(options).await;
    handle.drain("bench", None).await.unwrap();
    (report.seconds, report.error_count())
}

fn main() {
    install_recorder();
    let system = actix::System::new();
    let arbiters: Vec<actix::Arbiter> = (0..std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get))
        .map(|_| actix::Arbiter::new())
        .collect();
    let turns = (SESSIONS * TURNS) as f64;
    let (mut direct, mut http) = (Vec::new(), Vec::new());
    let mut errors = 0;
    system.block_on(async {
        for _ in 0..ROUNDS {
            direct.push(in_process(&arbiters).await / turns);
            let (seconds, failed) = served(&arbiters).await;
            http.push(seconds / turns);
            errors += failed;
        }
    });
    let (direct, http) = (median(direct), median(http));
    let micros = |s: f64| Duration::from_secs_f64(s).as_secs_f64() * 1e6;
    println!("serve/turn: {SESSIONS} sessions x {TURNS} turns, {ROUNDS} rounds, medians");
    println!(
        "  in-process gateway  {:8.1} us/turn  ({:.0} turns/s)",
        micros(direct),
        1.0 / direct
    );
    println!(
        "  serve over HTTP     {:8.1} us/turn  ({:.0} turns/s)",
        micros(http),
        1.0 / http
    );
    println!(
        "  ratio serve/in-process {:.2} (target <= 2.0); errors {errors}",
        http / direct
    );
    for arbiter in arbiters {
        arbiter.stop();
    }
}
