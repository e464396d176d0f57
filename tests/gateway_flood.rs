//! SPEC G3.1: message events cannot block message handling. A flood of `message:received` into
//! a slow subscriber never blocks the producer, never grows the queue past its bound, and every
//! dropped event is counted and noted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{entries, log, plugin, run_paused, Act};
use hookline::actors::events::{Emitted, EventBusConfig};
use hookline::actors::Pipeline;
use hookline::host::producers::{AgentFacts, GatewayEvents, InboundMessage};
use hookline::messages::note::Note;
use serde_json::json;
use tokio::time::Instant;

const BOUND: usize = 8;

fn events(pipeline: &Pipeline) -> GatewayEvents {
    let facts = AgentFacts {
        agent_id: "main".into(),
        workspace_dir: "/ws".into(),
        store_path: "/store".into(),
        cfg: json!({}),
    };
    GatewayEvents::new(pipeline.events().clone(), facts)
}

fn inbound(n: usize) -> InboundMessage {
    InboundMessage {
        from: "u1".into(),
        channel_id: "telegram".into(),
        raw_body: Some(format!("message {n}")),
        ..InboundMessage::default()
    }
}

#[test]
fn a_flood_into_a_slow_subscriber_never_blocks_and_drops_past_the_bound() {
    run_paused(async {
        let calls = log();
        let slow = plugin(
            "slow",
            &["message:received"],
            Act::Sleep(Duration::from_secs(1)),
            &calls,
        );
        let pipeline = Pipeline::builder()
            .plugin(slow)
            .event_bus(EventBusConfig {
                queue_capacity: BOUND,
                ..EventBusConfig::default()
            })
            .start()
            .unwrap();
        let channel = events(&pipeline).channel();
        let bus = pipeline.events().clone();
        let started = Instant::now();
        let (mut queued, mut dropped) = (0_u64, 0_u64);
        for n in 0..1000 {
            match channel.received(inbound(n)) {
                Emitted::Queued => queued += 1,
                Emitted::Dropped => dropped += 1,
                other => panic!("message:received was {other:?}"),
            }
            assert!(bus.queued() <= BOUND);
            // Let the worker run between messages, as a real channel loop would.
            tokio::task::yield_now().await;
        }
        // The producer never waited: no time passed while 1000 messages went in.
        assert_eq!(started.elapsed(), Duration::ZERO);
        assert_eq!(queued + dropped, 1000);
        assert!(dropped >= 1000 - BOUND as u64 - 1, "dropped {dropped}");
        assert_eq!(bus.dropped_total(), dropped);
        let notes = bus.take_notes().await;
        assert_eq!(notes, [Note::EventsDropped { count: dropped }]);
        // What was queued is delivered, one after another, a second each.
        tokio::time::sleep(Duration::from_secs(queued + 1)).await;
        assert_eq!(entries(&calls).len() as u64, queued);
        assert!(bus.take_notes().await.is_empty(), "each drop is noted once");
    });
}

#[test]
fn queued_events_are_all_delivered_when_the_queue_has_room() {
    run_paused(async {
        let calls = log();
        let pipeline = Pipeline::builder()
            .plugin(plugin(
                "all",
                &["message", "session:patch"],
                Act::Ok,
                &calls,
            ))
            .start()
            .unwrap();
        let channel = events(&pipeline).channel();
        for n in 0..5 {
            assert!(matches!(channel.received(inbound(n)), Emitted::Queued));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(entries(&calls), vec!["all message:received"; 5]);
        assert_eq!(pipeline.events().dropped_total(), 0);
    });
}

fn sent(n: usize) -> hookline::messages::event::MessageSentContext {
    hookline::messages::event::MessageSentContext {
        to: "u1".into(),
        content: format!("answer {n}"),
        success: true,
        channel_id: "telegram".into(),
        ..Default::default()
    }
}

/// How many entries of `log[..upto]` are `who`.
fn count(log: &[String], upto: usize, who: &str) -> usize {
    log[..upto].iter().filter(|e| *e == who).count()
}

#[test]
fn queued_events_meet_their_handlers_in_order_and_each_handler_sees_queue_order() {
    run_paused(async {
        let calls = log();
        let pipeline = Pipeline::builder()
            .plugin(plugin("w", &["message:received"], Act::Ok, &calls))
            .plugin(plugin(
                "x",
                &["message:received", "message:sent"],
                Act::Ok,
                &calls,
            ))
            .plugin(plugin("f", &["message"], Act::Ok, &calls))
            .start()
            .unwrap();
        let channel = events(&pipeline).channel();
        // Queued without yielding: the worker takes them together, in runs of equal handlers.
        let queued = [
            channel.received(inbound(0)),
            channel.sent(sent(1)),
            channel.received(inbound(2)),
            channel.received(inbound(3)),
            channel.sent(sent(4)),
        ];
        assert!(queued.iter().all(|e| matches!(e, Emitted::Queued)));
        tokio::time::sleep(Duration::from_secs(1)).await;
        let log = entries(&calls);
        assert_eq!(log.len(), 3 * 3 + 2 * 2, "{log:?}");
        // Each handler sees the events in the order they were queued.
        let seen_by = |who: &str| -> Vec<String> {
            log.iter()
                .filter_map(|e| e.strip_prefix(&format!("{who} ")).map(str::to_owned))
                .collect()
        };
        let mixed = [
            "message:received",
            "message:sent",
            "message:received",
            "message:received",
            "message:sent",
        ];
        assert_eq!(seen_by("f"), mixed);
        assert_eq!(seen_by("x"), mixed);
        assert_eq!(seen_by("w"), ["message:received"; 3]);
        // SPEC G1.3, each event: the family subscriber, then the exact ones in load order. At
        // every point of the log a later handler has seen no more events than an earlier one.
        for upto in 0..=log.len() {
            let n = |who: &str| count(&log, upto, who);
            assert!(
                n("f message:received") >= n("w message:received"),
                "{log:?}"
            );
            assert!(
                n("w message:received") >= n("x message:received"),
                "{log:?}"
            );
            assert!(n("f message:sent") >= n("x message:sent"), "{log:?}");
        }
    });
}
