//! SPEC G5: every event's context on the wire (insta snapshots in `tests/snapshots/`). Minimal
//! contexts show that unknown optional values are absent, never zero or empty (G5.6); full ones
//! show every field the spec names, camelCase.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::events::{command, entry, every_known_event};
use hookline::messages::event::*;
use hookline::messages::session::ApprovalMode;
use serde_json::json;

fn snapshot_name(event: &Event, variant: &str) -> String {
    format!("{}_{variant}", event.key().as_str().replace(':', "_"))
}

#[test]
fn minimal_contexts_leave_unknown_optional_values_out() {
    for event in every_known_event() {
        insta::assert_json_snapshot!(snapshot_name(&event, "minimal"), event.to_wire());
    }
}

#[test]
fn an_unknown_token_count_is_absent_never_zero() {
    let Event::SessionCompactBefore(before) = &every_known_event()[5] else {
        panic!("order")
    };
    let json = serde_json::to_value(before).unwrap();
    assert!(json.get("tokenCount").is_none());
    assert!(json.get("tokenCountOriginal").is_none());
    let counted = CompactBeforeContext {
        token_count: Some(0),
        ..before.clone()
    };
    // A count that really is zero stays zero.
    assert_eq!(serde_json::to_value(&counted).unwrap()["tokenCount"], 0);
}

#[test]
fn shutdown_without_restart_carries_a_null_restart_expected_ms() {
    let stop = GatewayStopContext {
        reason: "stop".into(),
        restart_expected_ms: None,
    };
    let json = serde_json::to_value(&stop).unwrap();
    assert_eq!(json, json!({"reason": "stop", "restartExpectedMs": null}));
}

fn media(name: &str) -> MediaFact {
    MediaFact {
        path: Some(format!("/ws/media/{name}")),
        url: Some(format!("https://cdn.example/{name}")),
        content_type: Some("image/png".into()),
        kind: Some("image".into()),
        transcribed: Some(false),
        message_id: Some("m1".into()),
        workspace_dir: Some("/ws".into()),
    }
}

fn full_events() -> Vec<Event> {
    let full_entry = SessionEntry {
        session_key: Some("agent:main:telegram:u1".into()),
        session_file: Some("transcript-s1".into()),
        updated_at: Some(1_700_000_000_000),
        model: Some("gpt-x".into()),
        mode: Some("code".into()),
        approval_mode: Some(ApprovalMode::AskAll),
        ..entry("s1")
    };
    let stage = MessageStage {
        channel_id: "telegram".into(),
        cfg: json!({"x": 1}),
        from: Some("u1".into()),
        to: Some("bot".into()),
        body: Some("<audio>".into()),
        body_for_agent: Some("[voice] hello".into()),
        timestamp: Some(1_700_000_000_000),
        conversation_id: Some("c1".into()),
        message_id: Some("m1".into()),
        sender_id: Some("u1".into()),
        sender_name: Some("Ada".into()),
        sender_username: Some("ada".into()),
        provider: Some("telegram".into()),
        surface: Some("dm".into()),
        ..MessageStage::default()
    }
    .with_media(&InboundMedia {
        staged: vec![media("a.png"), media("b.png")],
        ..InboundMedia::default()
    });
    vec![
        Event::CommandNew(command()),
        Event::CommandStop(CommandStopContext {
            session_entry: Some(entry("s1")),
            session_id: Some("s1".into()),
            command_source: Some(CommandSource::chat("telegram")),
            sender_id: Some("u1".into()),
        }),
        Event::SessionAutoReset(AutoResetContext {
            cfg: json!({}),
            agent_id: "main".into(),
            workspace_dir: "/ws".into(),
            store_path: "/store".into(),
            session_entry: full_entry.clone(),
            session_file: Some("transcript-s1".into()),
            reason: Some(ResetReason::Idle),
            transcript_archived: Some(true),
            next_session_id: Some("s2".into()),
            next_session_key: Some("agent:main:telegram:u1".into()),
        }),
        Event::SessionPatch(SessionPatchContext {
            session_entry: full_entry,
            patch: SessionPatch {
                key: Some("agent:main:telegram:u1".into()),
                model: Some("gpt-x".into()),
                mode: None,
                approval_mode: Some(ApprovalMode::AskAll),
            },
            cfg: json!({}),
        }),
        Event::SessionCompactBefore(CompactBeforeContext {
            session_id: "s1".into(),
            missing_session_key: true,
            message_count: 40,
            token_count: Some(9000),
            message_count_original: 42,
            token_count_original: Some(9500),
        }),
        Event::SessionCompactAfter(CompactAfterContext {
            session_id: "s1".into(),
            missing_session_key: false,
            message_count: 3,
            token_count: Some(800),
            compacted_count: 37,
            summary_length: Some(1200),
            tokens_before: Some(9000),
            tokens_after: Some(800),
            first_kept_entry_id: Some("e38".into()),
        }),
        Event::AgentBootstrap(AgentBootstrapContext {
            workspace_dir: "/ws".into(),
            bootstrap_files: vec![
                BootstrapFile {
                    name: "AGENTS.md".into(),
                    path: "/ws/AGENTS.md".into(),
                    missing: false,
                    content: Some("Be kind.".into()),
                },
                BootstrapFile {
                    name: "SOUL.md".into(),
                    path: "/ws/SOUL.md".into(),
                    missing: true,
                    content: None,
                },
            ],
            cfg: Some(json!({})),
            session_key: Some("agent:main:telegram:u1".into()),
            session_id: Some("s1".into()),
            agent_id: Some("main".into()),
        }),
        Event::GatewayPreRestart(GatewayStopContext {
            reason: "update".into(),
            restart_expected_ms: Some(3000),
        }),
        Event::MessageTranscribed(MessageTranscribedContext {
            stage: stage.clone(),
            transcript: "hello".into(),
        }),
        Event::MessagePreprocessed(MessagePreprocessedContext {
            stage,
            transcript: Some("hello".into()),
            is_group: Some(true),
            group_id: Some("g1".into()),
        }),
        Event::MessageSent(MessageSentContext {
            to: "u1".into(),
            content: "part one, part two".into(),
            success: false,
            channel_id: "telegram".into(),
            error: Some("rate limited after part one".into()),
            account_id: Some("bot".into()),
            conversation_id: Some("c1".into()),
            message_id: Some("m7".into()),
            is_group: Some(false),
            group_id: None,
        }),
    ]
}

#[test]
fn full_contexts_carry_every_field_the_spec_names_in_camel_case() {
    for event in full_events() {
        insta::assert_json_snapshot!(snapshot_name(&event, "full"), event.to_wire());
    }
}

#[test]
fn every_context_round_trips_through_json() {
    for event in every_known_event().into_iter().chain(full_events()) {
        let wire = event.to_wire();
        let back: WireEvent = serde_json::from_str(&serde_json::to_string(&wire).unwrap()).unwrap();
        assert_eq!(back, wire);
    }
}
