//! `hookline replay` of what happens between turns (issue 34 item 6): session start and end
//! hooks, gateway events with their handlers' effects, side questions and compaction notes.
//! Recorded with a probe plugin, each replays with no difference on the same plugin; a probe
//! changed on one of them gives a difference naming that hook or event, and the probe.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use hookline::actors::events::{EventHandler, EventReply};
use hookline::actors::plugin::{HookError, HookResult, PluginRegistration, Reply};
use hookline::host::provider::ScriptedProvider;
use hookline::host::replay::{Difference, SessionReplay};
use hookline::host::session::SessionCommand;
use hookline::host::store::{FileStore, FileStoreOptions, SessionStore};
use hookline::host::tools::ToolRegistry;
use hookline::host::turn::UserInput;
use hookline::host::{Host, HostBuilder};
use hookline::messages::compaction::Compaction;
use hookline::messages::event::{BootstrapFile, Event};
use hookline::messages::hook::{
    HookKind, OnCompaction, OnModelResponse, OnSessionEnded, OnSessionStarted,
};
use hookline::messages::model::{ModelResponse, Purpose};
use hookline::messages::scenario::ScriptedReply;
use hookline::messages::session::SessionInfo;
use serde_json::json;

/// What the probe does differently from the recording.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Changed {
    Nothing,
    SessionStart,
    SessionEnd,
    CommandEvent,
    BootstrapEvent,
    SideQuestion,
    Compaction,
}

fn failing(hook: &str) -> HookError {
    HookError::msg(format!("the probe now fails on {hook}"))
}

/// The probe's gateway event handler.
struct ProbeEvents(Changed);

#[async_trait]
impl EventHandler for ProbeEvents {
    fn subscriptions(&self) -> Vec<String> {
        vec!["command:new".into(), "agent:bootstrap".into()]
    }

    async fn on_event(&self, event: &Event) -> HookResult<EventReply> {
        match (event, self.0) {
            (Event::CommandNew(_), Changed::CommandEvent) => Err(failing("command:new")),
            (Event::AgentBootstrap(context), Changed::BootstrapEvent) => {
                let mut files = context.bootstrap_files.clone();
                files.push(BootstrapFile {
                    name: "PROBE.md".into(),
                    path: "PROBE.md".into(),
                    missing: false,
                    content: Some("Added by the changed probe.".into()),
                });
                Ok(EventReply::ReplaceBootstrapFiles(files))
            }
            _ => Ok(EventReply::Done),
        }
    }
}

/// A plugin on each of the four; `changed` says where it now behaves otherwise.
fn probe(changed: Changed) -> PluginRegistration {
    PluginRegistration::new("probe")
        .on(OnSessionStarted, move |_, _: &SessionInfo| match changed {
            Changed::SessionStart => Err(failing("on_session_started")),
            _ => Ok(Reply::Keep),
        })
        .on(OnSessionEnded, move |_, _: &SessionInfo| match changed {
            Changed::SessionEnd => Err(failing("on_session_ended")),
            _ => Ok(Reply::Keep),
        })
        .on(OnModelResponse, move |_, r: &ModelResponse| {
            match (changed, r.purpose) {
                (Changed::SideQuestion, Purpose::Side) => Err(failing("on_model_response")),
                _ => Ok(Reply::Keep),
            }
        })
        .on(OnCompaction, move |_, _: &Compaction| match changed {
            Changed::Compaction => Err(failing("on_compaction")),
            _ => Ok(Reply::Keep),
        })
        .with_events(Arc::new(ProbeEvents(changed)))
}

fn builder(changed: Changed) -> HostBuilder {
    Host::builder()
        .tools(ToolRegistry::with_builtins())
        .plugins(vec![probe(changed)])
}

fn reply(value: serde_json::Value) -> ScriptedReply {
    serde_json::from_value(value).unwrap()
}

/// Two sessions: a turn, a side question, a compaction, a turn, `/new` (the first session
/// ends, the second starts with `command:new` and `agent:bootstrap`), a turn, the shutdown.
async fn record(ws: &Path) {
    std::fs::create_dir_all(ws).unwrap();
    std::fs::write(ws.join("AGENTS.md"), "Keep answers short.\n").unwrap();
    let provider = ScriptedProvider::new(false);
    let mut host = builder(Changed::Nothing)
        .provider(Arc::new(provider.clone()))
        .workspace(ws)
        .start()
        .unwrap();
    host.open().await.unwrap();
    provider.push_replies([reply(json!({"text": "Hello."}))]);
    host.user_turn(UserInput::work("Hi")).await.unwrap();
    provider.push_replies([reply(json!({"text": "It is a side answer."}))]);
    let side = host.side_question("What was that?").await.unwrap();
    assert_eq!(side.as_deref(), Some("It is a side answer."));
    provider.push_replies([reply(json!({"text": "We said hello."}))]);
    host.command(SessionCommand::Compact).await.unwrap();
    provider.push_replies([reply(json!({"text": "Still here."}))]);
    host.user_turn(UserInput::work("And now?")).await.unwrap();
    host.command(SessionCommand::New).await.unwrap();
    provider.push_replies([reply(json!({"text": "A new start."}))]);
    host.user_turn(UserInput::work("Again")).await.unwrap();
    let closed = host.shutdown("recorded", None).await.unwrap();
    assert!(closed.wait(std::time::Duration::from_secs(10)).await);
}

/// Replays every session of the store in `ws` against the probe changed as `changed`.
async fn replay_all(ws: &Path, changed: Changed) -> Vec<SessionReplay> {
    let store = FileStore::open(ws.join(".hookline"), FileStoreOptions::default()).unwrap();
    let replayer = builder(changed).start_replay().unwrap();
    let mut replays = Vec::new();
    for id in store.sessions().await.unwrap() {
        let stored = store.read(&id).await.unwrap().unwrap();
        replays.push(replayer.replay(&stored).await.unwrap());
    }
    replayer.shutdown().await;
    replays
}

fn differences(replays: &[SessionReplay]) -> Vec<&Difference> {
    replays.iter().flat_map(|r| &r.differences).collect()
}

/// Records once, then replays with the probe unchanged and with each change.
#[actix_rt::test]
async fn what_happens_between_turns_replays_and_a_changed_plugin_there_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    record(&ws).await;

    let same = replay_all(&ws, Changed::Nothing).await;
    assert_eq!(same.len(), 2, "{same:#?}");
    for replay in &same {
        assert!(!replay.differs(), "{replay:#?}");
    }

    let hooks = [
        (Changed::SessionStart, HookKind::OnSessionStarted),
        (Changed::SessionEnd, HookKind::OnSessionEnded),
        (Changed::SideQuestion, HookKind::OnModelResponse),
        (Changed::Compaction, HookKind::OnCompaction),
    ];
    for (changed, hook) in hooks {
        let replays = replay_all(&ws, changed).await;
        let found = differences(&replays);
        assert!(
            found.iter().any(|d| d.what == "note"
                && d.hook == Some(hook)
                && d.plugins == ["probe".to_owned()]),
            "{changed:?}: {found:#?}"
        );
        assert!(found.iter().all(|d| d.hook == Some(hook)), "{found:#?}");
    }

    // A handler that now fails: its note names the event and the plugin.
    let replays = replay_all(&ws, Changed::CommandEvent).await;
    let found = differences(&replays);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].what, "note");
    assert_eq!(found[0].event.as_deref(), Some("command:new"));
    assert_eq!(found[0].plugins, ["probe".to_owned()]);
    // The second session started with `/new`: before its first turn.
    assert_eq!(found[0].turn, Some(1));

    // A handler that now hands other bootstrap files on: the event's entry differs.
    let replays = replay_all(&ws, Changed::BootstrapEvent).await;
    let found = differences(&replays);
    let bootstrap: Vec<_> = found.iter().filter(|d| d.what == "gateway-event").collect();
    assert_eq!(bootstrap.len(), 2, "one per session start: {found:#?}");
    for d in bootstrap {
        assert_eq!(d.event.as_deref(), Some("agent:bootstrap"));
        assert_eq!(d.plugins, ["probe".to_owned()]);
        let patch = serde_json::to_value(&d.patch).unwrap();
        assert_eq!(patch[0]["path"], "/handedOn", "{patch}");
    }
}
