//! Hook latency and throughput through the pipeline, each beside the direct-call loop measured in
//! the same run (the workload of `../shared/PERFORMANCE-NOTES.md`: 8 plugins appending a few bytes
//! to a ~64-byte text). Run with `cargo bench --bench pipeline`.
#![allow(missing_docs)] // criterion's macros generate undocumented items

/// The allocator the `hookline` binary ships with (`src/main.rs`), so figures match it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use futures::future::join_all;
use hookline::actors::plugin::{Plugin, PluginRegistration};
use hookline::actors::Pipeline;
use hookline::host::bench::{appender_plugins, Appender, DirectAppender, PAYLOAD};
use hookline::messages::hook::{HookKind, HookSet, OnUserMessage};
use hookline::messages::session::SessionId;
use hookline::messages::user::UserMessage;

const PLUGINS: usize = 8;

fn direct_chain() -> Vec<Box<dyn DirectAppender>> {
    (0..PLUGINS)
        .map(|i| Box::new(Appender::new(i)) as Box<dyn DirectAppender>)
        .collect()
}

/// Runs about `calls` calls spread over `sessions` sessions in flight and returns the wall time
/// scaled to exactly `calls` calls.
fn drive(
    system: &actix::SystemRunner,
    pipeline: &Pipeline,
    sessions: usize,
    calls: u64,
) -> Duration {
    system.block_on(async {
        let per_session = calls.div_ceil(sessions as u64).max(1);
        let started = Instant::now();
        join_all((0..sessions).map(|i| {
            let session = SessionId::new(format!("s{i}"));
            async move {
                for _ in 0..per_session {
                    let outcome = pipeline
                        .call::<OnUserMessage>(&session, UserMessage::new(PAYLOAD))
                        .await;
                    black_box(outcome.is_ok());
                }
            }
        }))
        .await;
        let made = per_session * sessions as u64;
        started.elapsed().mul_f64(calls as f64 / made as f64)
    })
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
        b.iter_custom(|iters| drive(&system, &pipeline, 1, iters))
    });
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
            |b, &n| b.iter_custom(|iters| drive(&system, &pipeline, n, iters)),
        );
    }
    group.finish();
}

/// A plugin that implements nothing the benchmark calls.
struct Bystander;

#[async_trait]
impl Plugin for Bystander {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[HookKind::OnToolCall])
    }
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
        let bystanders = (0..PLUGINS).map(|i| {
            PluginRegistration::new(format!("bystander-{i}")).with_hooks(Arc::new(Bystander))
        });
        Pipeline::builder()
            .plugins(bystanders)
            .plugins(appender_plugins(PLUGINS))
            .start()
    });
    let (Ok(plain), Ok(crowded)) = (plain, crowded) else {
        return;
    };
    group.bench_function("8_appenders", |b| {
        b.iter_custom(|iters| drive(&system, &plain, 1, iters))
    });
    group.bench_function("8_appenders_and_8_bystanders", |b| {
        b.iter_custom(|iters| drive(&system, &crowded, 1, iters))
    });
    group.finish();
}

criterion_group!(benches, one_call, throughput, bystanders);
criterion_main!(benches);
