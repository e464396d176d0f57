//! Gateway event fan-out (issue 7): `message:received` events from the inbound-message producer
//! (`GatewayEvents::channel().received`) through `pipeline.events()` to 8 subscribers, each
//! counting what it is handed. Run with `cargo bench --bench gateway`.
//!
//! - `delivered`: events/s, each delivered to all 8 subscribers (the clock stops when the last
//!   subscriber has seen the last event). The producer offers events as fast as the bus takes
//!   them: when the bounded queue is more than half full it yields to the worker instead of
//!   emitting into a full queue (a drop would not be a delivery), so no event is dropped; a run
//!   that drops one panics.
//! - `emit_call`: the producer's own cost per `received` call, timed around each call only: it
//!   never waits for delivery (SPEC G3.1: queued, never blocked).
#![allow(missing_docs)] // criterion's macros generate undocumented items
#![allow(clippy::expect_used)] // a bench that cannot start has nothing to measure

/// The allocator the `hookline` binary ships with (`src/main.rs`), so figures match it.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use hookline::actors::events::{Emitted, EventHandler, EventReply};
use hookline::actors::plugin::{HookResult, PluginRegistration};
use hookline::actors::Pipeline;
use hookline::host::producers::{AgentFacts, GatewayEvents, InboundMessage, MessageChannel};
use hookline::messages::event::Event;
use serde_json::json;

const SUBSCRIBERS: usize = 8;

/// Counts the events it is handed.
struct Counter(Arc<AtomicU64>);

#[async_trait]
impl EventHandler for Counter {
    fn subscriptions(&self) -> Vec<String> {
        vec!["message:received".into()]
    }

    async fn on_event(&self, _: &Event) -> HookResult<EventReply> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(EventReply::Done)
    }
}

struct Fixture {
    pipeline: Pipeline,
    channel: MessageChannel,
    seen: Arc<AtomicU64>,
}

fn fixture(system: &actix::SystemRunner) -> Fixture {
    let seen = Arc::new(AtomicU64::new(0));
    let pipeline = system
        .block_on(async {
            Pipeline::builder()
                .plugins((0..SUBSCRIBERS).map(|i| {
                    PluginRegistration::new(format!("counter-{i}"))
                        .with_events(Arc::new(Counter(seen.clone())))
                }))
                .start()
        })
        .expect("the pipeline starts");
    let facts = AgentFacts {
        agent_id: "main".into(),
        workspace_dir: "/ws".into(),
        store_path: "/store".into(),
        cfg: json!({}),
    };
    let channel = GatewayEvents::new(pipeline.events().clone(), facts).channel();
    Fixture {
        pipeline,
        channel,
        seen,
    }
}

fn inbound() -> InboundMessage {
    InboundMessage {
        from: "u1".into(),
        channel_id: "telegram".into(),
        raw_body: Some("Please refactor the parser so that it reports the line.".into()),
        ..InboundMessage::default()
    }
}

/// Emits `events` events and waits until every subscriber saw each. Returns the wall time and
/// the summed time spent inside the producer's `received` calls.
fn run(system: &actix::SystemRunner, f: &Fixture, events: u64) -> (Duration, Duration) {
    system.block_on(async {
        let bus = f.pipeline.events();
        let half = bus.queue_capacity() / 2;
        let target = f.seen.load(Ordering::Relaxed) + events * SUBSCRIBERS as u64;
        let mut emitting = Duration::ZERO;
        let started = Instant::now();
        for _ in 0..events {
            while bus.queued() > half {
                tokio::task::yield_now().await;
            }
            let message = inbound();
            let before = Instant::now();
            let emitted = f.channel.received(message);
            emitting += before.elapsed();
            assert!(matches!(emitted, Emitted::Queued), "{emitted:?}");
        }
        while f.seen.load(Ordering::Relaxed) < target {
            tokio::task::yield_now().await;
        }
        (started.elapsed(), emitting)
    })
}

fn fan_out(c: &mut Criterion) {
    let system = actix::System::new();
    let f = fixture(&system);
    let mut group = c.benchmark_group("message_received_to_8_subscribers");
    group.throughput(Throughput::Elements(1));
    group.bench_function("delivered", |b| {
        b.iter_custom(|iters| run(&system, &f, iters).0)
    });
    group.bench_function("emit_call", |b| {
        b.iter_custom(|iters| run(&system, &f, iters).1)
    });
    group.finish();
    assert_eq!(f.pipeline.events().dropped_total(), 0, "no event may drop");
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = fan_out
}
criterion_main!(benches);
