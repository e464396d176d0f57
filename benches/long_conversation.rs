//! A turn's cost against the length of its conversation (issue 22 item 1): one embedded `Host`
//! with the bundled demo plugins (every hook, the raw ones included) and the echo model, its
//! session first grown to 100, then to 1,000 turns; then criterion times one more turn (its
//! events taken and serialised, as a server answering in JSON would). Run with
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

fn long_conversation(c: &mut Criterion) {
    let system = actix::System::new();
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut host = system
        .block_on(async {
            Host::builder()
                .plugins(example_plugins())
                .provider(Arc::new(EchoProvider::new()))
                .workspace(dir.path())
                .spaces_root(dir.path())
                .start()
        })
        .expect("the host starts");
    system.block_on(host.open()).expect("a session opens");
    host.take_events();
    let mut done = 0;
    let mut group = c.benchmark_group("long_conversation");
    // Every iteration adds a turn: few, short samples, so a length's figure is about that
    // length (a few hundred turns after it), not thousands of turns later.
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_millis(300));
    for length in [100, 1_000] {
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
