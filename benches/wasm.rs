//! WebAssembly plugins beside in-process ones (issue 36 item 5): one `on_user_message` call
//! through [`PLUGINS`] guests of `benches/plugins/echo.wat` (a core module of the guest ABI v1,
//! run inline on the calling arbiter) and through as many in-process appenders, single calls
//! and [`IN_FLIGHT`] sessions at once, all in one run. `hookline bench --source wasm` measures
//! the same beside external Rust and Python plugins and the raw pipe. Run with
//! `cargo bench --bench wasm`.
#![allow(missing_docs)] // criterion's macros generate undocumented items
#![allow(clippy::expect_used)] // a bench whose plugins do not load has nothing to measure

/// The allocator the `hookline` binary ships with (`src/main.rs`), so figures match it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use hookline::actors::Pipeline;
use hookline::cli::bench::{drive_calls, start_plugins, Source};

/// Plugins each call goes through.
const PLUGINS: usize = 8;

/// Sessions in flight at once in the pipelined group.
const IN_FLIGHT: usize = 1000;

fn pipeline(system: &actix::SystemRunner, source: Source) -> Pipeline {
    system.block_on(async {
        let plugins = start_plugins(source, PLUGINS, Path::new("examples/plugins"))
            .await
            .expect("the plugins load");
        Pipeline::builder()
            .plugins(plugins.registrations)
            .shards(2)
            .start()
            .expect("the pipeline starts")
    })
}

fn kinds(c: &mut Criterion) {
    let system = actix::System::new();
    for (group, sessions) in [("wasm_single_call", 1), ("wasm_pipelined", IN_FLIGHT)] {
        let mut group = c.benchmark_group(group);
        group.throughput(Throughput::Elements(1));
        for (label, source) in [("wasm", Source::Wasm), ("in_process", Source::InProcess)] {
            let pipeline = pipeline(&system, source);
            group.bench_function(label, |b| {
                b.iter_custom(|iters| system.block_on(drive_calls(&pipeline, sessions, iters)))
            });
            system.block_on(pipeline.stop());
        }
        group.finish();
    }
}

criterion_group!(benches, kinds);
criterion_main!(benches);
