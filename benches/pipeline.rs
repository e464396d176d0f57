//! Hook latency and throughput through the pipeline, each beside its peers measured in the same
//! run: the direct-call loop, a naive actix chain (the caller awaits `send` to each of 8 actors),
//! an actix relay chain (each actor hands the value to the next) and a batched actix relay (64
//! sessions' values per message, appended in place), with the same appenders
//! (the reference workload of `docs/performance.md`: 8 plugins appending a few bytes to a
//! ~64-byte text). Run with `cargo bench --bench pipeline`.
#![allow(missing_docs)] // criterion's macros generate undocumented items

/// The allocator the `hookline` binary ships with (`src/main.rs`), so figures match it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use futures::future::join_all;
use hookline::actors::plugin::{PluginRegistration, Reply};
use hookline::actors::Pipeline;
use hookline::cli::bench::{
    appender_plugins, drive_calls, Appender, DirectAppender, Peer, PeerChain, PAYLOAD, PEER_BATCH,
};
use hookline::messages::hook::OnToolCall;
use hookline::messages::user::UserMessage;

const PLUGINS: usize = 8;

fn direct_chain() -> Vec<Box<dyn DirectAppender>> {
    (0..PLUGINS)
        .map(|i| Box::new(Appender::new(i)) as Box<dyn DirectAppender>)
        .collect()
}

/// Runs about `calls` calls through a peer chain on the current arbiter, `sessions` in flight
/// (for the batched relay: callers of up to [`PEER_BATCH`] sessions each).
async fn drive_peer(chain: &PeerChain, peer: Peer, sessions: usize, calls: u64) -> Duration {
    if peer == Peer::BatchedRelay {
        let callers = sessions.div_ceil(PEER_BATCH).max(1);
        let size = sessions.div_ceil(callers);
        let per_caller = calls.div_ceil((callers * size) as u64).max(1);
        let started = Instant::now();
        join_all((0..callers).map(|_| async {
            for _ in 0..per_caller {
                black_box(chain.call_batch(size).await.is_ok());
            }
        }))
        .await;
        let made = per_caller * (callers * size) as u64;
        return started.elapsed().mul_f64(calls as f64 / made as f64);
    }
    let per_session = calls.div_ceil(sessions as u64).max(1);
    let started = Instant::now();
    join_all((0..sessions).map(|_| async {
        for _ in 0..per_session {
            black_box(chain.call().await.is_ok());
        }
    }))
    .await;
    let made = per_session * sessions as u64;
    started.elapsed().mul_f64(calls as f64 / made as f64)
}

/// Benches the peers at `sessions` in flight in `group`.
fn peers(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    system: &actix::SystemRunner,
    sessions: usize,
) {
    for peer in Peer::ALL {
        let chain = system.block_on(async { PeerChain::start(peer, PLUGINS) });
        let name = match peer {
            Peer::Naive => "naive_actix_chain",
            Peer::Relay => "actix_relay_chain",
            Peer::BatchedRelay => "batched_actix_relay",
        };
        group.bench_with_input(BenchmarkId::new(name, sessions), &sessions, |b, &n| {
            b.iter_custom(|iters| system.block_on(drive_peer(&chain, peer, n, iters)))
        });
    }
}

fn one_call(c: &mut Criterion) {
    let mut group = c.benchmark_group("one_call_8_plugins");
    let chain = direct_chain();
    group.bench_function("direct_loop", |b| {
        b.iter(|| {
            let mut message = UserMessage::new(PAYLOAD);
            for plugin in &chain {
                message = plugin.on_user_message(message);
            }
            black_box(message)
        })
    });
    let system = actix::System::new();
    let pipeline = system.block_on(async {
        Pipeline::builder()
            .plugins(appender_plugins(PLUGINS))
            .start()
    });
    let Ok(pipeline) = pipeline else { return };
    group.bench_function("pipeline", |b| {
        b.iter_custom(|iters| system.block_on(drive_calls(&pipeline, 1, iters)))
    });
    peers(&mut group, &system, 1);
    group.finish();
}

fn throughput(c: &mut Criterion) {
    let mut group = c.benchmark_group("throughput_8_plugins");
    group.throughput(Throughput::Elements(1));
    let chain = direct_chain();
    group.bench_function("direct_loop", |b| {
        b.iter(|| {
            let mut message = UserMessage::new(PAYLOAD);
            for plugin in &chain {
                message = plugin.on_user_message(message);
            }
            black_box(message)
        })
    });
    let system = actix::System::new();
    let pipeline = system.block_on(async {
        Pipeline::builder()
            .plugins(appender_plugins(PLUGINS))
            .start()
    });
    let Ok(pipeline) = pipeline else { return };
    for sessions in [1usize, 64, 1000] {
        group.bench_with_input(
            BenchmarkId::new("pipeline", sessions),
            &sessions,
            |b, &n| b.iter_custom(|iters| system.block_on(drive_calls(&pipeline, n, iters))),
        );
    }
    // The peers run on one arbiter; the pipeline above on one shard per core.
    peers(&mut group, &system, 1000);
    group.finish();
}

/// A plugin that implements nothing the benchmark calls.
fn bystander(index: usize) -> PluginRegistration {
    PluginRegistration::new(format!("bystander-{index}")).on(OnToolCall, |_, _| Ok(Reply::Keep))
}

fn bystanders(c: &mut Criterion) {
    let mut group = c.benchmark_group("plugins_not_implementing_the_hook");
    let system = actix::System::new();
    let plain = system.block_on(async {
        Pipeline::builder()
            .plugins(appender_plugins(PLUGINS))
            .start()
    });
    let crowded = system.block_on(async {
        let bystanders = (0..PLUGINS).map(bystander);
        Pipeline::builder()
            .plugins(bystanders)
            .plugins(appender_plugins(PLUGINS))
            .start()
    });
    let (Ok(plain), Ok(crowded)) = (plain, crowded) else {
        return;
    };
    group.bench_function("8_appenders", |b| {
        b.iter_custom(|iters| system.block_on(drive_calls(&plain, 1, iters)))
    });
    group.bench_function("8_appenders_and_8_bystanders", |b| {
        b.iter_custom(|iters| system.block_on(drive_calls(&crowded, 1, iters)))
    });
    group.finish();
}

criterion_group!(benches, one_call, throughput, bystanders);
criterion_main!(benches);
