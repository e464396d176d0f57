//! Helpers shared by the host tests: a host over a scripted provider in a temporary workspace.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use hookline::actors::plugin::PluginRegistration;
use hookline::host::approval::ScriptedOperator;
use hookline::host::provider::ScriptedProvider;
use hookline::host::store::Log;
use hookline::host::tools::ToolRegistry;
use hookline::host::HostBuilder;
use hookline::host::{Host, HostEvent};
use hookline::messages::note::Note;
use hookline::messages::record::{ArchiveEntry, Record};
use hookline::messages::scenario::{OperatorAnswer, ScriptedReply, ScriptedToolCall};
use hookline::messages::session::{ApprovalMode, SessionId};

/// A host and its fakes.
pub struct Rig {
    pub host: Host,
    pub provider: ScriptedProvider,
    pub operator: ScriptedOperator,
    pub dir: tempfile::TempDir,
}

impl Rig {
    pub fn workspace(&self) -> std::path::PathBuf {
        std::fs::canonicalize(self.dir.path().join("ws")).unwrap()
    }

    pub fn replies(&self, replies: Vec<ScriptedReply>) {
        self.provider.push_replies(replies);
    }

    pub fn answers(&self, answers: &[OperatorAnswer]) {
        self.operator.push_answers(answers.iter().copied());
    }

    pub fn records(&self, id: &str) -> Vec<Record> {
        let dir = self.host.store().session_dir(&SessionId::new(id)).unwrap();
        Log::<Record>::open(&dir.join("records.log"))
            .unwrap()
            .1
            .records
    }

    pub fn archive(&self, id: &str) -> Vec<ArchiveEntry> {
        let dir = self.host.store().session_dir(&SessionId::new(id)).unwrap();
        Log::<ArchiveEntry>::open(&dir.join("archive.log"))
            .unwrap()
            .1
            .records
    }

    pub fn notes(&self, id: &str) -> Vec<Note> {
        self.archive(id)
            .into_iter()
            .filter_map(|e| match e {
                ArchiveEntry::Note { note, .. } => Some(note),
                _ => None,
            })
            .collect()
    }
}

/// Starts a host (inside an actix system) with `plugins`, the built-in tools, and a scripted
/// provider whose model takes images or not.
pub fn rig(plugins: Vec<PluginRegistration>, images: bool, mode: ApprovalMode) -> Rig {
    rig_from(Host::builder().plugins(plugins), images, mode)
}

/// [`rig`] over a builder that already has its plugins (e.g. loaded from disk).
pub fn rig_from(builder: HostBuilder, images: bool, mode: ApprovalMode) -> Rig {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("ws")).unwrap();
    std::fs::write(dir.path().join("ws/notes.txt"), "three little words").unwrap();
    let provider = ScriptedProvider::new(images);
    let operator = ScriptedOperator::default();
    let host = builder
        .tools(ToolRegistry::with_builtins())
        .provider(Arc::new(provider.clone()))
        .operator(Arc::new(operator.clone()))
        .workspace(dir.path().join("ws"))
        .spaces_root(dir.path())
        .approval_mode(mode)
        .start()
        .unwrap();
    Rig {
        host,
        provider,
        operator,
        dir,
    }
}

pub fn text(text: &str) -> ScriptedReply {
    ScriptedReply {
        text: text.into(),
        ..ScriptedReply::default()
    }
}

pub fn call(id: &str, name: &str, arguments: serde_json::Value) -> ScriptedReply {
    ScriptedReply {
        tool_calls: vec![ScriptedToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }],
        ..ScriptedReply::default()
    }
}

pub fn fail(error: &str) -> ScriptedReply {
    ScriptedReply {
        fail: Some(error.into()),
        ..ScriptedReply::default()
    }
}

/// A shared log plugins write what they saw into.
pub type Seen = Arc<Mutex<Vec<String>>>;

pub fn seen(log: &Seen) -> Vec<String> {
    log.lock().unwrap().clone()
}

pub fn events_of(events: &[HostEvent], pick: impl Fn(&HostEvent) -> bool) -> Vec<HostEvent> {
    events.iter().filter(|e| pick(e)).cloned().collect()
}

/// Start and end hooks that log `start <id>` / `end <id>`; the end also starts, once it is
/// through, a call that takes the pipeline's only admission place while `hold` is set (a task
/// spawned in the hook runs before the lifecycle hears the end's answer).
pub fn lifecycle_logger(
    log: &Seen,
    hold: &Arc<std::sync::Mutex<Option<hookline::actors::Pipeline>>>,
) -> PluginRegistration {
    use hookline::messages::hook::{OnSessionEnded, OnSessionStarted};
    use hookline::messages::session::SessionInfo;
    use hookline::messages::user::UserMessage;
    let (started, ended, hold) = (log.clone(), log.clone(), hold.clone());
    PluginRegistration::new("log")
        .on(OnSessionStarted, move |_, s: &SessionInfo| {
            started
                .lock()
                .unwrap()
                .push(format!("start {}", s.session_id));
            Ok(hookline::actors::plugin::Reply::Keep)
        })
        .on(OnSessionEnded, move |_, s: &SessionInfo| {
            ended.lock().unwrap().push(format!("end {}", s.session_id));
            if let Some(pipeline) = hold.lock().unwrap().clone() {
                actix_rt::spawn(async move {
                    let _ = pipeline
                        .submit::<hookline::messages::hook::OnUserMessage>(
                            SessionId::new("elsewhere"),
                            UserMessage::new("x"),
                        )
                        .await;
                });
            }
            Ok(hookline::actors::plugin::Reply::Keep)
        })
}

/// A plugin whose `on_user_message` waits until `release` is notified.
pub fn blocker(release: &Arc<tokio::sync::Notify>) -> PluginRegistration {
    let held = release.clone();
    PluginRegistration::new("blocker").on_async(
        hookline::messages::hook::OnUserMessage,
        move |_, _| {
            let held = held.clone();
            async move {
                held.notified().await;
                Ok(hookline::actors::plugin::Reply::Keep)
            }
        },
    )
}
