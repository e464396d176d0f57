//! Hook latency and throughput through the pipeline, each beside the direct-call loop measured in
//! the same run (the workload of `../shared/PERFORMANCE-NOTES.md`: 8 plugins appending a few bytes
//! to a ~64-byte text). Run with `cargo bench --bench pipeline`.
#![allow(missing_docs)] // criterion's macros generate undocumented items

/// The allocator the `hookline` binary ships with (`src/main.rs`), so figures match it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::hint::black_box;
use std::sync::Arc;

use async_trait::async_trait;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use hookline::actors::plugin::{Plugin, PluginRegistration};
use hookline::actors::Pipeline;
use hookline::host::bench::{appender_plugins, drive_calls, Appender, DirectAppender, PAYLOAD};
use hookline::messages::hook::{HookKind, HookSet};
use hookline::messages::user::UserMessage;

const PLUGINS: usize = 8;

fn direct_chain() -> Vec<Box<dyn DirectAppender>> {
    (0..PLUGINS)
        .map(|i| Box::new(Appender::new(i)) as Box<dyn DirectAppender>)
        .collect()
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
        b.iter_custom(|iters| system.block_on(drive_calls(&plain, 1, iters)))
    });
    group.bench_function("8_appenders_and_8_bystanders", |b| {
        b.iter_custom(|iters| system.block_on(drive_calls(&crowded, 1, iters)))
    });
    group.finish();
}

criterion_group!(benches, one_call, throughput, bystanders);
criterion_main!(benches);
