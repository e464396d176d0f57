//! The host's gateway producers end to end (SPEC G5): each fires from the Host with its exact
//! context, in a defined order relative to the plugin hooks.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod gateway_host_support;

use std::sync::Arc;
use std::time::Duration;

use gateway_host_support::{builder, tmp, Watch};
use hookline::host::producers::ResetPolicy;
use hookline::host::provider::ScriptedProvider;
use hookline::host::scenario::{parse, play, Played, Script};
use hookline::host::session::{CommandOrigin, ManualClock};
use hookline::host::turn::UserInput;
use hookline::host::SessionCommand;
use hookline::messages::event::{BootstrapPolicy, CommandSource, CustomKey};
use hookline::messages::note::Note;
use hookline::messages::prompt::PromptMode;
use hookline::messages::record::ArchiveEntry;
use hookline::messages::scenario::ScriptedReply;
use hookline::messages::session::{ApprovalMode, SessionId};
use hookline::messages::user::StopReason;
use serde_json::json;

fn reply(text: &str) -> ScriptedReply {
    ScriptedReply {
        text: text.into(),
        ..ScriptedReply::default()
    }
}

fn notes(host: &hookline::host::Host, id: &str) -> Vec<Note> {
    let dir = host.store().session_dir(&SessionId::new(id)).unwrap();
    let (_, log) =
        hookline::host::store::Log::<ArchiveEntry>::open(&dir.join("archive.log")).unwrap();
    log.records
        .into_iter()
        .filter_map(|e| match e {
            ArchiveEntry::Note { note, .. } => Some(note),
            _ => None,
        })
        .collect()
}

#[actix_rt::test]
async fn startup_fires_once_before_the_first_session_starts_with_the_g5_7_context() {
    let (dir, provider, watch) = (
        tempfile::tempdir().unwrap(),
        ScriptedProvider::default(),
        Watch::default(),
    );
    let mut host = builder(&dir, &provider)
        .plugin(watch.plugin(&["gateway:startup"]))
        .gateway_cfg(json!({"gateway": {"port": 1}}))
        .start()
        .unwrap();
    host.open().await.unwrap();
    host.command(SessionCommand::New).await.unwrap();
    assert_eq!(
        watch.only(&["event", "hook on_session_started"])[..2],
        ["event gateway:startup", "hook on_session_started s1"]
    );
    let contexts = watch.contexts("gateway:startup", &tmp(&dir));
    assert_eq!(contexts.len(), 1);
    insta::assert_json_snapshot!("host_gateway_startup", contexts[0]);
}

#[actix_rt::test]
async fn new_and_reset_emit_command_events_after_the_session_hooks_with_the_chat_context() {
    let (dir, provider, watch) = (
        tempfile::tempdir().unwrap(),
        ScriptedProvider::default(),
        Watch::default(),
    );
    let mut host = builder(&dir, &provider)
        .plugin(watch.plugin(&["command", "agent:bootstrap"]))
        .chat_origin(CommandOrigin::Chat {
            channel: "telegram".into(),
            sender_id: Some("alice".into()),
        })
        .start()
        .unwrap();
    host.open().await.unwrap();
    host.command(SessionCommand::New).await.unwrap();
    host.command(SessionCommand::Reset).await.unwrap();
    assert_eq!(
        watch.lines(),
        [
            "hook on_session_started s1",
            "event agent:bootstrap",
            "hook on_session_ended s1",
            "hook on_session_started s2",
            "event agent:bootstrap",
            "event command:new",
            "hook on_session_ended s2",
            "hook on_session_started s3",
            "event agent:bootstrap",
            "event command:reset",
        ]
    );
    let tmp = tmp(&dir);
    insta::assert_json_snapshot!("host_command_new", watch.contexts("command:new", &tmp)[0]);
    insta::assert_json_snapshot!(
        "host_command_reset",
        watch.contexts("command:reset", &tmp)[0]
    );
}

#[actix_rt::test]
async fn a_gateway_reset_names_its_path_and_carries_no_sender() {
    let (dir, provider, watch) = (
        tempfile::tempdir().unwrap(),
        ScriptedProvider::default(),
        Watch::default(),
    );
    let mut host = builder(&dir, &provider)
        .plugin(watch.plugin(&["command:reset"]))
        .start()
        .unwrap();
    host.open().await.unwrap();
    let gateway = CommandOrigin::Gateway(CommandSource::gateway_sessions_reset());
    host.command_from(SessionCommand::Reset, &gateway)
        .await
        .unwrap();
    let agent = CommandOrigin::Gateway(CommandSource::gateway_agent());
    host.command_from(SessionCommand::Reset, &agent)
        .await
        .unwrap();
    let contexts = watch.contexts("command:reset", &tmp(&dir));
    assert_eq!(contexts[0]["commandSource"], "gateway:sessions.reset");
    assert_eq!(contexts[1]["commandSource"], "gateway:agent");
    assert_eq!(contexts[1]["previousSessionEntry"]["sessionId"], "s2");
    assert!(contexts.iter().all(|c| c.get("senderId").is_none()));
}

#[actix_rt::test]
async fn stop_emits_command_stop_for_the_command_and_for_a_cancelled_turn() {
    let (dir, provider, watch) = (
        tempfile::tempdir().unwrap(),
        ScriptedProvider::default(),
        Watch::default(),
    );
    let mut host = builder(&dir, &provider)
        .plugin(watch.plugin(&["command:stop"]))
        .start()
        .unwrap();
    host.open().await.unwrap();
    host.command(SessionCommand::Stop).await.unwrap();
    provider.push_replies([ScriptedReply {
        stop: true,
        ..ScriptedReply::default()
    }]);
    let stopped = host.user_turn(UserInput::work("go")).await.unwrap();
    assert_eq!(stopped, StopReason::Cancelled);
    let contexts = watch.contexts("command:stop", &tmp(&dir));
    assert_eq!(contexts.len(), 2);
    insta::assert_json_snapshot!("host_command_stop", contexts[0]);
}

#[actix_rt::test]
async fn compaction_emits_before_and_after_around_its_hooks_without_token_counts() {
    let (dir, provider, watch) = (
        tempfile::tempdir().unwrap(),
        ScriptedProvider::default(),
        Watch::default(),
    );
    let mut host = builder(&dir, &provider)
        .plugin(watch.plugin(&["session:compact:before", "session:compact:after"]))
        .start()
        .unwrap();
    host.open().await.unwrap();
    provider.push_replies([reply("hello")]);
    host.user_turn(UserInput::work("hi")).await.unwrap();
    provider.push_replies([reply("We said hello.")]);
    host.command(SessionCommand::Compact).await.unwrap();
    assert_eq!(
        watch.only(&["event", "hook on_compaction"]),
        [
            "event session:compact:before",
            "hook on_compaction Prompt",
            "hook on_compaction Summary",
            "event session:compact:after",
        ]
    );
    let tmp = tmp(&dir);
    let before = &watch.contexts("session:compact:before", &tmp)[0];
    let after = &watch.contexts("session:compact:after", &tmp)[0];
    // SPEC G5.6: the host counts no tokens, so the token fields are absent, never zero.
    for key in [
        "tokenCount",
        "tokenCountOriginal",
        "tokensBefore",
        "tokensAfter",
    ] {
        assert!(
            before.get(key).is_none() && after.get(key).is_none(),
            "{key}"
        );
    }
    insta::assert_json_snapshot!("host_compact_before", before);
    insta::assert_json_snapshot!("host_compact_after", after);
}

#[actix_rt::test]
async fn a_failed_compaction_emits_before_but_no_after() {
    let (dir, provider, watch) = (
        tempfile::tempdir().unwrap(),
        ScriptedProvider::default(),
        Watch::default(),
    );
    let mut host = builder(&dir, &provider)
        .plugin(watch.plugin(&["session"]))
        .start()
        .unwrap();
    host.open().await.unwrap();
    provider.push_replies([reply("hello")]);
    host.user_turn(UserInput::work("hi")).await.unwrap();
    provider.push_replies([ScriptedReply {
        fail: Some("overloaded".into()),
        ..ScriptedReply::default()
    }]);
    host.command(SessionCommand::Compact).await.unwrap();
    // SPEC G3.3: a retry emits `before` again, and only the success emits `after`.
    provider.push_replies([reply("Summary.")]);
    host.command(SessionCommand::Compact).await.unwrap();
    assert_eq!(
        watch.only(&["event session:compact"]),
        [
            "event session:compact:before",
            "event session:compact:before",
            "event session:compact:after",
        ]
    );
}

#[actix_rt::test]
async fn model_mode_and_approval_changes_emit_session_patch_with_the_submitted_fields() {
    let (dir, provider, watch) = (
        tempfile::tempdir().unwrap(),
        ScriptedProvider::default(),
        Watch::default(),
    );
    let mut host = builder(&dir, &provider)
        .plugin(watch.plugin(&["session:patch"]))
        .start()
        .unwrap();
    host.open().await.unwrap();
    host.command(SessionCommand::Model("vision".into()))
        .await
        .unwrap();
    host.command(SessionCommand::Mode(PromptMode::Plan))
        .await
        .unwrap();
    host.command(SessionCommand::Approvals(ApprovalMode::AskAll))
        .await
        .unwrap();
    // The same value again still emits (SPEC G5.5).
    host.command(SessionCommand::Model("vision".into()))
        .await
        .unwrap();
    watch.received("session:patch", 4).await;
    let patches = watch.contexts("session:patch", &tmp(&dir));
    assert_eq!(
        patches[0]["patch"],
        json!({"key": "agent:main:cli", "model": "vision"})
    );
    assert_eq!(patches[1]["patch"]["mode"], "plan");
    assert_eq!(patches[2]["sessionEntry"]["approvalMode"], "ask-all");
    assert_eq!(patches[3]["patch"], patches[0]["patch"]);
    insta::assert_json_snapshot!("host_session_patch", patches[2]);
    assert_eq!(host.active().unwrap().approval_mode, ApprovalMode::AskAll);
}

#[actix_rt::test]
async fn an_idle_session_is_reset_before_the_next_turn_and_auto_reset_is_emitted() {
    let (dir, provider, watch) = (
        tempfile::tempdir().unwrap(),
        ScriptedProvider::default(),
        Watch::default(),
    );
    let clock = ManualClock::new(1_700_000_000_000);
    let mut host = builder(&dir, &provider)
        .plugin(watch.plugin(&["session:auto-reset"]))
        .clock(Arc::new(clock.clone()))
        .reset_policy(ResetPolicy {
            idle_after: Some(Duration::from_secs(3600)),
            daily_at_hour_utc: None,
        })
        .start()
        .unwrap();
    host.open().await.unwrap();
    provider.push_replies([reply("one"), reply("two"), reply("three")]);
    host.user_turn(UserInput::work("first")).await.unwrap();
    clock.advance(59 * 60 * 1000);
    host.user_turn(UserInput::work("not idle yet"))
        .await
        .unwrap();
    assert_eq!(host.active().unwrap().session_id.as_str(), "s1");
    clock.advance(60 * 60 * 1000);
    host.user_turn(UserInput::work("after lunch"))
        .await
        .unwrap();
    assert_eq!(host.active().unwrap().session_id.as_str(), "s2");
    watch.received("session:auto-reset", 1).await;
    let context = &watch.contexts("session:auto-reset", &tmp(&dir))[0];
    insta::assert_json_snapshot!("host_auto_reset", context);
    assert_eq!(context["sessionEntry"]["sessionId"], "s1");
    assert_eq!(context["nextSessionId"], "s2");
    assert_eq!(context["reason"], "idle");
}

#[actix_rt::test]
async fn bootstrap_replacements_are_finalized_and_the_result_ends_the_work_text() {
    let (dir, provider) = (tempfile::tempdir().unwrap(), ScriptedProvider::default());
    let log = common_log();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    std::fs::write(dir.path().join("ws/AGENTS.md"), "Be brief.").unwrap();
    std::fs::write(dir.path().join("ws/MEMORY.md"), "secret").unwrap();
    let policy = BootstrapPolicy {
        private_names: vec!["MEMORY.md".into()],
        ..BootstrapPolicy::default()
    };
    let mut host = builder(&dir, &provider)
        .plugin(common::plugin(
            "extra",
            &["agent:bootstrap"],
            common::Act::AddBootstrap("EXTRA.md"),
            &log,
        ))
        .bootstrap(
            vec!["AGENTS.md".into(), "MEMORY.md".into(), "AGENTS.md".into()],
            policy,
        )
        .start()
        .unwrap();
    host.open().await.unwrap();
    provider.push_replies([reply("ok")]);
    host.user_turn(UserInput::work("hi")).await.unwrap();
    let bootstrap: Vec<_> = host
        .take_events()
        .into_iter()
        .filter_map(|e| match e {
            hookline::host::HostEvent::Bootstrap { files } => Some(files),
            _ => None,
        })
        .collect();
    // De-duplicated by path, MEMORY.md withheld, the handler's EXTRA.md kept.
    assert_eq!(
        bootstrap,
        [vec!["AGENTS.md (9 chars)", "EXTRA.md (6 chars)"]]
    );
    let sent = serde_json::to_string(&provider.sent()[0]).unwrap();
    assert!(
        sent.contains("Workspace files:\\n## AGENTS.md\\nBe brief.\\n## EXTRA.md\\nseen 3"),
        "{sent}"
    );
    assert!(!sent.contains("secret"));
}

#[actix_rt::test]
async fn a_skipped_event_handler_is_noted_in_the_session_archive() {
    let (dir, provider) = (tempfile::tempdir().unwrap(), ScriptedProvider::default());
    let log = common_log();
    let mut host = builder(&dir, &provider)
        .plugin(common::plugin(
            "broken",
            &["command:new"],
            common::Act::Fail("boom"),
            &log,
        ))
        .start()
        .unwrap();
    host.open().await.unwrap();
    host.command(SessionCommand::New).await.unwrap();
    let texts: Vec<String> = notes(&host, "s2").iter().map(ToString::to_string).collect();
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("Event handler 'broken' for 'command:new' was skipped")),
        "{texts:?}"
    );
}

#[actix_rt::test]
async fn a_custom_emit_reaches_only_its_exact_unknown_subscription() {
    let (dir, provider, watch) = (
        tempfile::tempdir().unwrap(),
        ScriptedProvider::default(),
        Watch::default(),
    );
    let mut host = builder(&dir, &provider)
        .plugin(watch.plugin(&["acme:deployed", "command"]))
        .start()
        .unwrap();
    host.open().await.unwrap();
    let key = CustomKey::new("acme:deployed").unwrap();
    host.emit_custom(key, json!({"version": "1"}))
        .await
        .unwrap();
    assert_eq!(watch.only(&["event"]), ["event acme:deployed"]);
    // SPEC G4.1: the unknown subscription was warned about at load, in the first session.
    let texts: Vec<String> = notes(&host, "s1").iter().map(ToString::to_string).collect();
    assert!(texts.contains(
        &"Plugin 'watch' subscribes to 'acme:deployed', which the gateway never emits.".into()
    ));
}

#[actix_rt::test]
async fn a_scenario_feeds_inbound_and_outbound_chat_messages_through_the_channel() {
    let (dir, watch) = (tempfile::tempdir().unwrap(), Watch::default());
    let script = Script::default();
    let tools = hookline::host::tools::ToolRegistry::with_builtins();
    let scenario = parse(
        std::path::Path::new("inline.json"),
        r#"{"steps": [
            {"user": "ship it", "inbound": {"channel": "telegram", "from": "alice",
              "messageId": "m1", "conversationId": "c9", "transcript": "ship it"},
             "replies": [{"text": "Shipped."}]},
            {"command": "/new"}
        ]}"#,
        &tools,
    )
    .unwrap();
    let mut host = builder(&dir, &script.provider)
        .plugin(watch.plugin(&["message", "command:new"]))
        .start()
        .unwrap();
    host.open().await.unwrap();
    let mut played = Played::default();
    play(&mut host, &script, &scenario, &mut played)
        .await
        .unwrap();
    watch.received("message:received", 2).await;
    watch.received("message:sent", 1).await;
    let tmp = tmp(&dir);
    let received = watch.contexts("message:received", &tmp);
    insta::assert_json_snapshot!("host_message_received", received[0]);
    assert_eq!(
        received[1],
        json!({"from": "operator", "content": "/new", "channelId": "cli"})
    );
    insta::assert_json_snapshot!(
        "host_message_transcribed",
        watch.contexts("message:transcribed", &tmp)[0]
    );
    insta::assert_json_snapshot!("host_message_sent", watch.contexts("message:sent", &tmp)[0]);
}

mod common;

fn common_log() -> common::Log {
    common::log()
}
