//! SPEC G1 and G4: which handlers an event reaches, in which order, and what happens to
//! unknown, custom and failing subscriptions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::events::{command, every_known_event};
use common::{entries, log, plugin, run_paused, Act};
use hookline::actors::events::{Emitted, EventError};
use hookline::actors::Pipeline;
use hookline::messages::event::{CustomKey, Event, EventKey, Subscription};
use hookline::messages::note::{Note, SkipReason};
use serde_json::json;

fn notes_text(notes: &[Note]) -> Vec<String> {
    notes.iter().map(ToString::to_string).collect()
}

#[actix_rt::test]
async fn family_subscribers_run_before_exact_ones_each_in_load_order() {
    let log = log();
    let pipeline = Pipeline::builder()
        .plugin(plugin("exact", &["command:new"], Act::Ok, &log))
        .plugin(plugin("both", &["command", "command:new"], Act::Ok, &log))
        .plugin(plugin("family", &["command"], Act::Ok, &log))
        .plugin(plugin(
            "other",
            &["session", "command:reset"],
            Act::Ok,
            &log,
        ))
        .start()
        .unwrap();
    let delivery = pipeline
        .events()
        .dispatch(Event::CommandNew(command()))
        .await
        .unwrap();
    // SPEC G1.3: family group first, then exact group; `both` is called twice.
    assert_eq!(
        entries(&log),
        [
            "both command:new",
            "family command:new",
            "exact command:new",
            "both command:new"
        ]
    );
    assert_eq!(delivery.calls, 4);
    assert!(delivery.notes.is_empty());
}

#[actix_rt::test]
async fn a_family_subscription_receives_every_action_of_its_family_only() {
    let log = log();
    let pipeline = Pipeline::builder()
        .plugin(plugin("messages", &["message"], Act::Ok, &log))
        .start()
        .unwrap();
    for event in every_known_event() {
        pipeline.events().dispatch(event).await.unwrap();
    }
    assert_eq!(
        entries(&log),
        [
            "messages message:received",
            "messages message:transcribed",
            "messages message:preprocessed",
            "messages message:sent",
        ]
    );
}

#[actix_rt::test]
async fn session_compact_matches_nothing_and_is_warned_about() {
    let log = log();
    let pipeline = Pipeline::builder()
        .plugin(plugin("compact", &["session:compact"], Act::Ok, &log))
        .start()
        .unwrap();
    for event in every_known_event() {
        pipeline.events().dispatch(event).await.unwrap();
    }
    assert!(entries(&log).is_empty(), "SPEC G1.4: {:?}", entries(&log));
    assert_eq!(
        notes_text(pipeline.load_notes()),
        ["Plugin 'compact' subscribes to 'session:compact', which the gateway never emits."]
    );
}

#[actix_rt::test]
async fn unknown_subscriptions_stay_registered_are_warned_and_listed() {
    let log = log();
    let written = [
        "COMMAND:NEW",
        "command:nwe",
        "message:recieved",
        "startup",
        "",
        "command:new",
    ];
    let pipeline = Pipeline::builder()
        .plugin(plugin("typo", &written, Act::Ok, &log))
        .start()
        .unwrap();
    let expected: Vec<String> = written[..5]
        .iter()
        .map(|key| format!("Plugin 'typo' subscribes to '{key}', which the gateway never emits."))
        .collect();
    assert_eq!(notes_text(pipeline.load_notes()), expected);
    // Still registered (SPEC G4.1): `hooks info` reads them from here.
    let listed = &pipeline.events().subscribed()[0];
    assert_eq!(&*listed.plugin, "typo");
    let unknown: Vec<&str> = listed
        .subscriptions
        .iter()
        .filter(|s| !s.is_known())
        .map(Subscription::as_str)
        .collect();
    assert_eq!(unknown, written[..5]);
    assert_eq!(pipeline.plugins()[0].subscriptions, listed.subscriptions);
    // The known one still works; the unknown ones never fire for core events.
    for event in every_known_event() {
        pipeline.events().dispatch(event).await.unwrap();
    }
    assert_eq!(entries(&log), ["typo command:new"]);
}

#[actix_rt::test]
async fn a_custom_key_fires_only_when_code_emits_it() {
    let log = log();
    let pipeline = Pipeline::builder()
        .plugin(plugin("custom", &["acme:deployed"], Act::Ok, &log))
        .plugin(plugin("commands", &["command"], Act::Ok, &log))
        .start()
        .unwrap();
    // Declaring the key creates no trigger: the core never emits it (SPEC G4.2).
    for event in every_known_event() {
        pipeline.events().dispatch(event).await.unwrap();
    }
    assert_eq!(
        entries(&log),
        [
            "commands command:new",
            "commands command:reset",
            "commands command:stop"
        ]
    );
    let key = CustomKey::new("acme:deployed").unwrap();
    let delivery = pipeline
        .events()
        .emit_custom(key, json!({"version": 3}))
        .await
        .unwrap();
    assert_eq!(delivery.calls, 1);
    assert_eq!(entries(&log).last().unwrap(), "custom acme:deployed");
    // A custom key cannot pose as a core key.
    assert!(CustomKey::new("command:new").is_err());
}

#[test]
fn a_failing_handler_is_skipped_with_a_note_and_the_next_one_runs() {
    run_paused(async {
        let log = log();
        let pipeline = Pipeline::builder()
            .plugin(plugin(
                "errs",
                &["command:new"],
                Act::Fail("no thanks"),
                &log,
            ))
            .plugin(plugin("panics", &["command:new"], Act::Panic, &log))
            .plugin(
                plugin(
                    "slow",
                    &["command:new"],
                    Act::Sleep(Duration::from_secs(60)),
                    &log,
                )
                .with_event_timeout(Duration::from_secs(2)),
            )
            .plugin(plugin("fine", &["command:new"], Act::Ok, &log))
            .start()
            .unwrap();
        let started = tokio::time::Instant::now();
        let delivery = pipeline
            .events()
            .dispatch(Event::CommandNew(command()))
            .await
            .unwrap();
        assert_eq!(started.elapsed(), Duration::from_secs(2));
        assert_eq!(
            notes_text(&delivery.notes),
            [
                "Event handler 'errs' for 'command:new' was skipped: no thanks",
                "Event handler 'panics' for 'command:new' was skipped: it panicked.",
                "Event handler 'slow' for 'command:new' was skipped: it timed out after 2 s.",
            ]
        );
        assert_eq!(entries(&log).last().unwrap(), "fine command:new");
        // The panicking plugin's actor survived.
        let again = pipeline
            .events()
            .dispatch(Event::CommandNew(command()))
            .await
            .unwrap();
        assert!(matches!(
            &again.notes[1],
            Note::EventHandlerSkipped {
                reason: SkipReason::Panicked,
                ..
            }
        ));
    });
}

#[actix_rt::test]
async fn each_key_is_emitted_with_its_wait_rule() {
    let log = log();
    let pipeline = Pipeline::builder()
        .plugin(plugin(
            "all",
            &["command", "session", "agent", "gateway", "message"],
            Act::Ok,
            &log,
        ))
        .start()
        .unwrap();
    for event in every_known_event() {
        let key = event.key();
        let emitted = pipeline.events().emit(event).await;
        let kind = match emitted {
            Ok(Emitted::Delivered(_)) => "awaited",
            Ok(Emitted::Queued) => "queued",
            Ok(Emitted::Detached) => "detached",
            Ok(Emitted::Dropped) => "dropped",
            Err(EventError::LifecycleEvent(_)) => "lifecycle",
            Err(EventError::Stopped) => "stopped",
        };
        let expected = match key {
            EventKey::SessionPatch
            | EventKey::MessageReceived
            | EventKey::MessageTranscribed
            | EventKey::MessagePreprocessed
            | EventKey::MessageSent => "queued",
            EventKey::SessionAutoReset => "detached",
            EventKey::GatewayStartup | EventKey::GatewayShutdown | EventKey::GatewayPreRestart => {
                "lifecycle"
            }
            _ => "awaited",
        };
        assert_eq!(kind, expected, "{key}");
    }
}
