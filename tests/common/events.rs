//! One minimal context per known key.
#![allow(dead_code, unreachable_pub, missing_docs)]

use hookline::messages::event::*;
use serde_json::json;

pub fn entry(id: &str) -> SessionEntry {
    SessionEntry::new(id)
}

pub fn command() -> CommandContext {
    CommandContext {
        agent_id: "main".into(),
        session_entry: entry("s2"),
        previous_session_entry: Some(entry("s1")),
        command_source: CommandSource::chat("telegram"),
        sender_id: Some("u1".into()),
        workspace_dir: "/ws".into(),
        store_path: "/store/sessions.json".into(),
        cfg: json!({"gateway": {"port": 1}}),
    }
}

/// One event of every known key, in the order of SPEC G1.1.
pub fn every_known_event() -> Vec<Event> {
    let stage = MessageStage {
        channel_id: "telegram".into(),
        cfg: json!({}),
        ..MessageStage::default()
    };
    vec![
        Event::CommandNew(command()),
        Event::CommandReset(command()),
        Event::CommandStop(CommandStopContext::default()),
        Event::SessionAutoReset(AutoResetContext {
            cfg: json!({}),
            agent_id: "main".into(),
            workspace_dir: "/ws".into(),
            store_path: "/store".into(),
            session_entry: entry("s1"),
            session_file: None,
            reason: None,
            transcript_archived: None,
            next_session_id: None,
            next_session_key: None,
        }),
        Event::SessionPatch(SessionPatchContext {
            session_entry: entry("s1"),
            patch: SessionPatch::default(),
            cfg: json!({}),
        }),
        Event::SessionCompactBefore(CompactBeforeContext {
            session_id: "s1".into(),
            missing_session_key: false,
            message_count: 40,
            token_count: None,
            message_count_original: 42,
            token_count_original: None,
        }),
        Event::SessionCompactAfter(CompactAfterContext {
            session_id: "s1".into(),
            missing_session_key: false,
            message_count: 3,
            token_count: None,
            compacted_count: 37,
            summary_length: None,
            tokens_before: None,
            tokens_after: None,
            first_kept_entry_id: None,
        }),
        Event::AgentBootstrap(AgentBootstrapContext {
            workspace_dir: "/ws".into(),
            bootstrap_files: Vec::new(),
            cfg: None,
            session_key: None,
            session_id: None,
            agent_id: None,
        }),
        Event::GatewayStartup(GatewayStartupContext {
            cfg: json!({}),
            deps: json!({}),
            workspace_dir: "/ws".into(),
        }),
        Event::GatewayShutdown(GatewayStopContext {
            reason: "stop".into(),
            restart_expected_ms: None,
        }),
        Event::GatewayPreRestart(GatewayStopContext {
            reason: "restart".into(),
            restart_expected_ms: Some(1),
        }),
        Event::MessageReceived(MessageReceivedContext {
            from: "u1".into(),
            content: "hi".into(),
            channel_id: "telegram".into(),
            ..MessageReceivedContext::default()
        }),
        Event::MessageTranscribed(MessageTranscribedContext {
            stage: stage.clone(),
            transcript: "hi".into(),
        }),
        Event::MessagePreprocessed(MessagePreprocessedContext {
            stage,
            ..MessagePreprocessedContext::default()
        }),
        Event::MessageSent(MessageSentContext {
            to: "u1".into(),
            content: "hello".into(),
            success: true,
            channel_id: "telegram".into(),
            ..MessageSentContext::default()
        }),
    ]
}
