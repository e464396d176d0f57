//! The host's producers (SPEC G5): each builds its context from the facts it has and emits it
//! with its key's wait rule.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use common::events::entry;
use common::{plugin, run_paused, Act};
use hookline::actors::events::{Emitted, EventHandler, EventReply};
use hookline::actors::plugin::{HookResult, PluginRegistration};
use hookline::actors::Pipeline;
use hookline::host::producers::{
    reset_due, AgentFacts, AutoResetFacts, BootstrapRequest, CommandFacts, CompactionResult,
    GatewayEvents, InboundMessage, ResetPolicy,
};
use hookline::messages::event::*;
use serde_json::{json, Value};
use tokio::time::Instant;

/// Captures the wire form of every event it receives.
struct Capture {
    subscriptions: Vec<&'static str>,
    seen: Arc<Mutex<Vec<WireEvent>>>,
}

#[async_trait]
impl EventHandler for Capture {
    fn subscriptions(&self) -> Vec<String> {
        self.subscriptions.iter().map(|s| (*s).to_owned()).collect()
    }
    async fn on_event(&self, event: &Event) -> HookResult<EventReply> {
        self.seen.lock().unwrap().push(event.to_wire());
        Ok(EventReply::Done)
    }
}

type Seen = Arc<Mutex<Vec<WireEvent>>>;

fn capture(subscriptions: &[&'static str]) -> (PluginRegistration, Seen) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let handler = Capture {
        subscriptions: subscriptions.to_vec(),
        seen: seen.clone(),
    };
    (
        PluginRegistration::new("capture").with_events(Arc::new(handler)),
        seen,
    )
}

fn facts(workspace_dir: &str) -> AgentFacts {
    AgentFacts {
        agent_id: "main".into(),
        workspace_dir: workspace_dir.into(),
        store_path: "/store/sessions.json".into(),
        cfg: json!({"gateway": {}}),
    }
}

fn producers(plugins: Vec<PluginRegistration>) -> (Pipeline, GatewayEvents) {
    let pipeline = Pipeline::builder().plugins(plugins).start().unwrap();
    let events = GatewayEvents::new(pipeline.events().clone(), facts("/ws"));
    (pipeline, events)
}

fn keys(seen: &Seen) -> Vec<String> {
    seen.lock()
        .unwrap()
        .iter()
        .map(|e| e.key.to_string())
        .collect()
}

fn last_context(seen: &Seen) -> Value {
    seen.lock().unwrap().last().unwrap().context.clone()
}

#[actix_rt::test]
async fn a_gateway_reset_names_its_source_and_omits_the_sender() {
    let (capture, seen) = capture(&["command"]);
    let (_pipeline, events) = producers(vec![capture]);
    let command = CommandFacts {
        session_entry: entry("s2"),
        previous_session_entry: Some(entry("s1")),
        source: CommandSource::gateway_sessions_reset(),
        sender_id: Some("should-not-appear".into()),
    };
    events.command_reset(command).await.unwrap();
    let context = last_context(&seen);
    assert_eq!(context["commandSource"], "gateway:sessions.reset");
    assert_eq!(context["previousSessionEntry"]["sessionId"], "s1");
    assert!(context.get("senderId").is_none());
    // A chat `/new` keeps its sender.
    let chat = CommandFacts {
        session_entry: entry("s3"),
        previous_session_entry: None,
        source: CommandSource::chat("telegram"),
        sender_id: Some("u1".into()),
    };
    events.command_new(chat).await.unwrap();
    let context = last_context(&seen);
    assert_eq!(context["senderId"], "u1");
    assert!(context.get("previousSessionEntry").is_none());
    assert_eq!(keys(&seen), ["command:reset", "command:new"]);
}

#[actix_rt::test]
async fn session_creation_emits_new_only_when_asked_against_an_existing_parent() {
    let (capture, seen) = capture(&["command:new"]);
    let (_pipeline, events) = producers(vec![capture]);
    assert!(events
        .session_created(entry("s2"), Some(entry("s1")), false)
        .await
        .unwrap()
        .is_none());
    assert!(events
        .session_created(entry("s2"), None, true)
        .await
        .unwrap()
        .is_none());
    assert!(keys(&seen).is_empty());
    events
        .session_created(entry("s2"), Some(entry("s1")), true)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(last_context(&seen)["commandSource"], "webchat");
}

#[actix_rt::test]
async fn stop_carries_only_what_it_knows() {
    let (capture, seen) = capture(&["command:stop"]);
    let (_pipeline, events) = producers(vec![capture]);
    let stop = CommandStopContext {
        session_id: Some("s1".into()),
        ..CommandStopContext::default()
    };
    events.command_stop(stop).await.unwrap();
    assert_eq!(last_context(&seen), json!({"sessionId": "s1"}));
}

fn before() -> CompactBeforeContext {
    CompactBeforeContext {
        session_id: "s1".into(),
        missing_session_key: false,
        message_count: 40,
        token_count: None,
        message_count_original: 40,
        token_count_original: None,
    }
}

#[actix_rt::test]
async fn a_failed_or_skipped_compaction_emits_before_but_no_after() {
    let (capture, seen) = capture(&["session:compact:before", "session:compact:after"]);
    let (_pipeline, events) = producers(vec![capture]);
    let (in_flight, _) = events.compaction_started(before()).await.unwrap();
    in_flight.failed();
    // SPEC G3.3: the retry emits `before` again.
    let (in_flight, _) = events.compaction_started(before()).await.unwrap();
    in_flight.skipped();
    let (in_flight, _) = events.compaction_started(before()).await.unwrap();
    let result = CompactionResult {
        message_count: 3,
        compacted_count: 37,
        ..CompactionResult::default()
    };
    in_flight.completed(result).await.unwrap();
    assert_eq!(
        keys(&seen),
        [
            "session:compact:before",
            "session:compact:before",
            "session:compact:before",
            "session:compact:after"
        ]
    );
    assert_eq!(
        last_context(&seen),
        json!({"sessionId": "s1", "missingSessionKey": false, "messageCount": 3, "compactedCount": 37})
    );
}

#[test]
fn a_model_change_is_queued_as_a_request_shaped_patch() {
    run_paused(async {
        let (capture, seen) = capture(&["session:patch"]);
        let (_pipeline, events) = producers(vec![capture]);
        let after = SessionEntry {
            model: Some("gpt-x".into()),
            ..entry("s1")
        };
        let patch = SessionPatch {
            model: Some("gpt-x".into()),
            ..SessionPatch::default()
        };
        assert!(matches!(
            events.session_patched(after, patch),
            Emitted::Queued
        ));
        tokio::time::sleep(Duration::from_millis(1)).await;
        let context = last_context(&seen);
        assert_eq!(context["patch"], json!({"model": "gpt-x"}));
        assert_eq!(context["sessionEntry"]["model"], "gpt-x");
    });
}

#[test]
fn reset_policies_say_idle_or_daily() {
    const HOUR: u64 = 3_600_000;
    let day_start = 20_000 * 24 * HOUR;
    let idle = ResetPolicy {
        idle_after: Some(Duration::from_secs(3600)),
        daily_at_hour_utc: None,
    };
    assert_eq!(
        reset_due(&idle, day_start, day_start + HOUR),
        Some(ResetReason::Idle)
    );
    assert_eq!(reset_due(&idle, day_start, day_start + HOUR - 1), None);
    let daily = ResetPolicy {
        idle_after: None,
        daily_at_hour_utc: Some(4),
    };
    assert_eq!(
        reset_due(&daily, day_start + 3 * HOUR, day_start + 5 * HOUR),
        Some(ResetReason::Daily)
    );
    assert_eq!(
        reset_due(&daily, day_start + 4 * HOUR, day_start + 5 * HOUR),
        None
    );
    // Before today's reset hour, yesterday's boundary applies.
    assert_eq!(
        reset_due(&daily, day_start - 21 * HOUR, day_start + 2 * HOUR),
        Some(ResetReason::Daily)
    );
    assert_eq!(reset_due(&ResetPolicy::default(), 0, day_start), None);
}

#[test]
fn auto_reset_runs_detached_from_the_reset_path() {
    run_paused(async {
        let log = common::log();
        let slow = plugin(
            "slow",
            &["session:auto-reset"],
            Act::Sleep(Duration::from_secs(30)),
            &log,
        );
        let (capture, seen) = capture(&["session"]);
        let (_pipeline, events) = producers(vec![slow, capture]);
        let started = Instant::now();
        let reset = AutoResetFacts {
            session_entry: entry("s1"),
            reason: Some(ResetReason::Daily),
            session_file: None,
            transcript_archived: Some(true),
            next_session_id: Some("s2".into()),
            next_session_key: None,
        };
        assert!(matches!(events.auto_reset(reset), Emitted::Detached));
        assert_eq!(started.elapsed(), Duration::ZERO);
        tokio::time::sleep(Duration::from_secs(31)).await;
        let context = last_context(&seen);
        assert_eq!(context["reason"], "daily");
        assert_eq!(context["sessionEntry"], json!({"sessionId": "s1"}));
        assert_eq!(context["agentId"], "main");
    });
}

#[actix_rt::test]
async fn bootstrap_passes_the_list_through_handlers_then_dedupes_filters_and_budgets() {
    let dir = std::env::temp_dir().join(format!("hookline-bootstrap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("AGENTS.md"), "Be kind and brief.").unwrap();
    std::fs::write(dir.join("MEMORY.md"), "private").unwrap();
    let log = common::log();
    let pipeline = Pipeline::builder()
        .plugin(plugin(
            "first",
            &["agent:bootstrap"],
            Act::AddBootstrap("EXTRA.md"),
            &log,
        ))
        .plugin(plugin(
            "second",
            &["agent"],
            Act::AddBootstrap("EXTRA.md"),
            &log,
        ))
        .start()
        .unwrap();
    let events = GatewayEvents::new(pipeline.events().clone(), facts(dir.to_str().unwrap()));
    let request = BootstrapRequest {
        session_key: Some("k".into()),
        session_id: Some("s1".into()),
        file_names: ["AGENTS.md", "SOUL.md", "MEMORY.md"]
            .map(String::from)
            .to_vec(),
        policy: BootstrapPolicy {
            private_names: vec!["MEMORY.md".into()],
            max_total_chars: 12,
            ..BootstrapPolicy::default()
        },
    };
    let (files, notes) = events.bootstrap(request).await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(notes.is_empty());
    let summary: Vec<(&str, bool, Option<&str>)> = files
        .iter()
        .map(|f| (f.name.as_str(), f.missing, f.content.as_deref()))
        .collect();
    // `second` (family, so it ran first) added EXTRA.md seeing 3 files; `first` saw its
    // replacement (4 files) and added the same path again, which de-duplication removes.
    // MEMORY.md is private here; the 12-character budget cuts AGENTS.md and leaves EXTRA.md out.
    assert_eq!(
        summary,
        [
            ("AGENTS.md", false, Some("Be kind and ")),
            ("SOUL.md", true, None)
        ]
    );
    assert_eq!(
        common::entries(&log),
        ["second agent:bootstrap", "first agent:bootstrap"]
    );
}

#[actix_rt::test]
async fn each_bootstrap_handler_sees_the_previous_replacement() {
    let log = common::log();
    let pipeline = Pipeline::builder()
        .plugin(plugin(
            "first",
            &["agent:bootstrap"],
            Act::AddBootstrap("X.md"),
            &log,
        ))
        .plugin(plugin(
            "second",
            &["agent:bootstrap"],
            Act::AddBootstrap("Y.md"),
            &log,
        ))
        .start()
        .unwrap();
    let context = AgentBootstrapContext {
        workspace_dir: "/ws".into(),
        bootstrap_files: Vec::new(),
        cfg: None,
        session_key: None,
        session_id: None,
        agent_id: None,
    };
    let (after, _) = pipeline.events().bootstrap(context).await.unwrap();
    let seen: Vec<(&str, Option<&str>)> = after
        .bootstrap_files
        .iter()
        .map(|f| (f.name.as_str(), f.content.as_deref()))
        .collect();
    assert_eq!(seen, [("X.md", Some("seen 0")), ("Y.md", Some("seen 1"))]);
}

#[test]
fn bootstrap_dedupe_keeps_the_first_record_of_a_path() {
    let file = |content: &str| BootstrapFile {
        name: "EXTRA.md".into(),
        path: "/ws/EXTRA.md".into(),
        missing: false,
        content: Some(content.into()),
    };
    let kept =
        finalize_bootstrap_files(vec![file("one"), file("two")], &BootstrapPolicy::default());
    assert_eq!(kept, [file("one")]);
}

#[test]
fn inbound_messages_pick_content_and_withhold_media_while_staging() {
    run_paused(async {
        let (capture, seen) = capture(&["message:received"]);
        let (_pipeline, events) = producers(vec![capture]);
        let remote = |name: &str| MediaFact {
            path: Some(format!("/remote/{name}")),
            content_type: Some("image/jpeg".into()),
            kind: Some("image".into()),
            ..MediaFact::default()
        };
        let message = InboundMessage {
            from: "u1".into(),
            channel_id: "telegram".into(),
            command_body: Some(String::new()),
            raw_body: Some("look at these".into()),
            body: Some("[2 images] look at these".into()),
            timestamp: Some(1_700_000_000_000),
            account_id: Some("bot".into()),
            conversation_id: Some("c1".into()),
            message_id: Some("m1".into()),
            media: InboundMedia {
                staged: vec![MediaFact {
                    path: Some("/ws/partial.jpg".into()),
                    ..MediaFact::default()
                }],
                original: vec![remote("b.jpg"), remote("a.jpg")],
                staging_pending: true,
                remote_host: Some("edge-1".into()),
            },
            metadata: ReceivedMetadata {
                sender_name: Some("Ada".into()),
                ..ReceivedMetadata::default()
            },
        };
        assert!(matches!(
            events.channel().received(message),
            Emitted::Queued
        ));
        tokio::time::sleep(Duration::from_millis(1)).await;
        let context = last_context(&seen);
        // An empty command body does not win; the raw body does (SPEC G5.8).
        assert_eq!(context["content"], "look at these");
        // SPEC G5.10: media withheld while staging, originals in source order.
        assert!(context.get("media").is_none());
        assert_eq!(context["originalMedia"][0]["path"], "/remote/b.jpg");
        insta::assert_json_snapshot!(
            "message_received_full_staging",
            seen.lock().unwrap().last().unwrap()
        );
    });
}

#[test]
fn received_content_never_picks_the_agent_body() {
    assert_eq!(
        received_content(Some("/new"), Some("raw"), Some("body")),
        "/new"
    );
    assert_eq!(received_content(None, None, Some("body")), "body");
    assert_eq!(received_content(Some(""), Some(""), Some("body")), "body");
    assert_eq!(received_content(None, None, None), "");
}
