//! A turn's cost against the length of its conversation (issue 22 item 1): one embedded `Host`
//! with the bundled demo plugins (every hook, the raw ones included) and the echo model, a
//! session grown to 100 turns and another to 1,000; then criterion times the next turns (each
//! one's events taken and serialised, as a server answering in JSON would), a few hundred at
//! most, so each figure is about its length. Run with
//! `cargo bench --bench long_conversation`. The target: a turn at 1,000 costs at most 1.2x a turn
//! at 100. It also prints the size of one turn's events as JSON at each length.
#![allow(missing_docs)] // criterion's macros generate undocumented items
#![allow(clippy::expect_used)] // a bench that cannot start has nothing to measure

/// The allocator the `hookline` binary ships with (`src/main.rs`), so figures match it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, SamplingMode};
use hookline::host::demo::example_plugins;
use hookline::host::provider::EchoProvider;
use hookline::host::turn::UserInput;
use hookline::host::Host;

/// One turn, its events taken and serialised; returns the answer's size.
fn turn(system: &actix::SystemRunner, host: &mut Host, n: usize) -> usize {
    system
        .block_on(host.user_turn(UserInput::work(format!("load 0 turn {n}"))))
        .expect("the turn runs");
    serde_json::to_vec(&host.take_events())
        .expect("events serialise")
        .len()
}

/// A host of its own, in `dir`, with one session open.
fn start(system: &actix::SystemRunner, dir: &std::path::Path) -> Host {
    let mut host = system
        .block_on(async {
            Host::builder()
                .plugins(example_plugins())
                .provider(Arc::new(EchoProvider::new()))
                .workspace(dir)
                .spaces_root(dir)
                .start()
        })
        .expect("the host starts");
    system.block_on(host.open()).expect("a session opens");
    host.take_events();
    host
}

fn long_conversation(c: &mut Criterion) {
    let system = actix::System::new();
    let mut group = c.benchmark_group("long_conversation");
    // Every iteration adds a turn: each length gets a session of its own, and few, short
    // samples, so its figure is about that length (the turns timed are printed), not about
    // thousands of turns later.
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(20))
        .measurement_time(Duration::from_millis(60));
    for length in [100, 1_000] {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let mut host = start(&system, dir.path());
        let mut done = 0;
        while done < length {
            turn(&system, &mut host, done);
            done += 1;
        }
        let bytes = turn(&system, &mut host, done);
        done += 1;
        eprintln!("turn {done}: {bytes} bytes of events");
        let from = done;
        group.bench_function(format!("turn_at_{length}"), |b| {
            b.iter(|| {
                done += 1;
                turn(&system, &mut host, done)
            });
        });
        eprintln!("turn_at_{length} timed turns {from} to {done}");
    }
    group.finish();
}

criterion_group!(benches, long_conversation);
criterion_main!(benches);
