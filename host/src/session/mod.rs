//! The embedding API: a [`Host`] built from plugins, tools, a model provider, an operator and a
//! store; it opens and resumes sessions, drives turns, and closes.
//!
//! The host runs on an actix system (the pipeline and the session lifecycle are actors). An
//! actix program can also hold [`Host::pipeline`]'s coordinator and [`Host::lifecycle`] and send
//! them messages itself. Which session is active, and the begin and end hooks, belong to the
//! session lifecycle actor (SPEC P3.10 to P3.13); this type owns the open session's storage.

mod builder;
mod producers;
mod settings;
mod shutdown;
mod wiring;

use std::path::{Path, PathBuf};

use actix::Addr;
use hookline_actors::session::{ChangeSession, Ran, SessionLifecycle};
use hookline_actors::Pipeline;
use hookline_messages::note::Note;
use hookline_messages::prompt::PromptMode;
use hookline_messages::record::ArchiveEntry;
use hookline_messages::session::{ApprovalMode, SessionId, SessionInfo};
use hookline_messages::transition::{Cause, SessionEvent, Transition};
use hookline_messages::user::StopReason;

pub(crate) use crate::state::SessionState;
pub use crate::state::{HostError, HostEvent};
pub use builder::HostBuilder;
pub use wiring::{Clock, CommandOrigin, ManualClock, SystemClock};

use crate::state::Opened;
use crate::store::Store;
use crate::turn::{Engine, Turn, UserInput};
use producers::CommandKind;
use wiring::Wiring;

/// A session command (the slash commands that change or reshape the session).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionCommand {
    /// `/new`: a fresh session in the same workspace (emits `command:new`, SPEC G5.1).
    New,
    /// `/reset`: a fresh session replaces this one, as `/clear` does (emits `command:reset`).
    Reset,
    /// `/stop`: observed by `command:stop` (SPEC G5.2); no turn runs between commands.
    Stop,
    /// `/model <name>`: the session's model (emits `session:patch`, SPEC G5.5).
    Model(String),
    /// `/mode <work|plan>`: the session's default turn mode (emits `session:patch`).
    Mode(PromptMode),
    /// `/approvals <mode>`: the session's approval mode (emits `session:patch`).
    Approvals(ApprovalMode),
    /// `/clear`: a fresh session replaces this one.
    Clear,
    /// `/resume <id>`: a stored session becomes active.
    Resume(SessionId),
    /// `/fork`: a copy of this session becomes active.
    Fork,
    /// `/cd <dir>`: reload in another directory (relative to the current workspace).
    Cd(PathBuf),
    /// `/space <name>`: reload in a named workspace under the spaces directory.
    Space(String),
    /// `/compact`: fold the history into a summary.
    Compact,
}

/// A running host. Not `Sync`: one owner drives it (its methods take `&mut self`).
pub struct Host {
    engine: Engine,
    lifecycle: Addr<SessionLifecycle>,
    store: Store,
    session: Option<SessionState>,
    workspace: PathBuf,
    spaces_root: PathBuf,
    approval_mode: ApprovalMode,
    compact_after: Option<usize>,
    load_notes: Vec<Note>,
    next_id: u64,
    /// Plugin processes loaded from disk, shut down with the host.
    processes: Vec<std::sync::Arc<crate::external::ExternalPlugin>>,
    wiring: Wiring,
}

impl Host {
    /// A builder with no plugins, no tools, the scripted provider and a refusing operator.
    pub fn builder() -> HostBuilder {
        HostBuilder::default()
    }

    /// Opens a fresh session in the host's workspace and makes it active (SPEC P3.10).
    ///
    /// # Errors
    /// [`HostError`] when the store or the pipeline fails.
    pub async fn open(&mut self) -> Result<SessionId, HostError> {
        self.startup().await?;
        let opened = self.fresh(self.workspace.clone(), &[])?;
        let id = opened.state.info.session_id.clone();
        self.activate(Cause::Open, opened).await?;
        Ok(id)
    }

    /// Resumes a stored session, e.g. after a restart (SPEC P3.10, P3.12).
    ///
    /// # Errors
    /// [`HostError::UnknownSession`] when the store does not have it.
    pub async fn resume(&mut self, id: &SessionId) -> Result<(), HostError> {
        if self.active().is_some_and(|info| &info.session_id == id) {
            return Ok(());
        }
        self.startup().await?;
        let opened = SessionState::resume(&self.store, id)?
            .ok_or_else(|| HostError::UnknownSession(id.to_string()))?;
        self.workspace = PathBuf::from(&opened.state.info.workspace_root);
        self.activate(Cause::Resume, opened).await
    }

    /// Runs one user turn on the active session: first an automatic reset when the reset
    /// policy says the session is due (SPEC G5.3), then compaction when the stored records
    /// exceed the configured threshold. A turn the operator stopped emits `command:stop` after
    /// it ended (SPEC G5.2: the event observes the cancellation).
    ///
    /// # Errors
    /// [`HostError::NoSession`], or a store or pipeline failure.
    pub async fn user_turn(&mut self, input: UserInput) -> Result<StopReason, HostError> {
        self.auto_reset_if_due().await?;
        let stop = self.turn_inner(input).await?;
        self.touch();
        if stop == StopReason::Cancelled {
            let origin = self.wiring.settings.chat.clone();
            self.stop_event(&origin).await?;
        }
        self.record_event_notes().await?;
        Ok(stop)
    }

    async fn turn_inner(&mut self, input: UserInput) -> Result<StopReason, HostError> {
        let over = self.compact_after.is_some_and(|limit| {
            self.session
                .as_ref()
                .is_some_and(|s| s.records().len() > limit)
        });
        if over {
            self.compact_with_events().await?;
        }
        self.turn()?.user_turn(input).await
    }

    /// Answers a side question with a side call; nothing is stored (SPEC P2.3). `None` when
    /// the side call failed.
    ///
    /// # Errors
    /// [`HostError::NoSession`], or a store or pipeline failure.
    pub async fn side_question(
        &mut self,
        question: impl Into<String>,
    ) -> Result<Option<String>, HostError> {
        let answer = self.turn()?.side_question(question.into()).await?;
        self.touch();
        Ok(answer)
    }

    /// Runs a session command typed on the host's chat path (see
    /// [`HostBuilder::chat_origin`]).
    ///
    /// # Errors
    /// [`HostError`] when the command cannot run (an unknown session, a missing directory).
    pub async fn command(&mut self, command: SessionCommand) -> Result<(), HostError> {
        let origin = self.wiring.settings.chat.clone();
        self.command_from(command, &origin).await
    }

    /// Runs a session command that came from `origin`: a chat path, or a gateway path
    /// (`CommandOrigin::Gateway(CommandSource::gateway_sessions_reset())`, ...). The origin
    /// sets `commandSource` and `senderId` of the command events (SPEC G5.1, G5.2).
    ///
    /// # Errors
    /// [`HostError`] when the command cannot run (an unknown session, a missing directory).
    pub async fn command_from(
        &mut self,
        command: SessionCommand,
        origin: &CommandOrigin,
    ) -> Result<(), HostError> {
        let result = self.run_command(command, origin).await;
        self.record_event_notes().await?;
        result
    }

    async fn run_command(
        &mut self,
        command: SessionCommand,
        origin: &CommandOrigin,
    ) -> Result<(), HostError> {
        match command {
            SessionCommand::Compact => self.compact_with_events().await.map(drop),
            SessionCommand::Resume(id) => self.resume(&id).await,
            SessionCommand::New | SessionCommand::Reset => {
                let (cause, kind) = if command == SessionCommand::New {
                    (Cause::New, CommandKind::New)
                } else {
                    (Cause::Clear, CommandKind::Reset)
                };
                let previous = self.active().cloned();
                let opened = self.fresh(self.workspace.clone(), &[])?;
                self.activate(cause, opened).await?;
                self.command_event(kind, previous, origin).await
            }
            SessionCommand::Clear => {
                let opened = self.fresh(self.workspace.clone(), &[])?;
                self.activate(Cause::Clear, opened).await
            }
            SessionCommand::Stop => self.stop_event(origin).await,
            SessionCommand::Model(name) => {
                self.set_model(name);
                Ok(())
            }
            SessionCommand::Mode(mode) => {
                self.set_mode(mode);
                Ok(())
            }
            SessionCommand::Approvals(mode) => self.set_approval_mode(mode),
            SessionCommand::Fork => {
                let records = self
                    .session
                    .as_ref()
                    .ok_or(HostError::NoSession)?
                    .records()
                    .to_vec();
                let opened = self.fresh(self.workspace.clone(), &records)?;
                self.activate(Cause::Fork, opened).await
            }
            SessionCommand::Cd(dir) => {
                let dir = existing_dir(&self.workspace.join(dir))?;
                self.reload(Cause::Cd, dir).await
            }
            SessionCommand::Space(name) => {
                let dir = self.spaces_root.join(name);
                std::fs::create_dir_all(&dir).map_err(|source| workspace_error(&dir, source))?;
                self.reload(Cause::Space, existing_dir(&dir)?).await
            }
        }
    }

    /// Closes the active session: its end hook runs with its workspace and id (SPEC P3.11,
    /// P3.13). Closing with no session open does nothing.
    ///
    /// # Errors
    /// [`HostError`] when the lifecycle or the store fails.
    pub async fn close(&mut self) -> Result<(), HostError> {
        if self.wiring.shut_down {
            // The shutdown already ended the session.
            return Ok(());
        }
        let ran = self.change(SessionEvent::Close).await?;
        let mut old = self.session.take();
        self.record_transitions(ran, &mut old, &mut None)?;
        if let Some(old) = old {
            self.engine
                .pipeline
                .forget_session(&old.info.session_id)
                .await?;
        }
        Ok(())
    }

    /// The plugins loaded from disk, in load order.
    pub fn loaded_plugins(&self) -> &[std::sync::Arc<crate::external::ExternalPlugin>] {
        &self.processes
    }

    /// The tools the host runs (every provider, SPEC P1.3).
    pub fn tools(&self) -> &crate::tools::ToolRegistry {
        &self.engine.tools
    }

    /// Takes the events reported since the last call, in order.
    pub fn take_events(&mut self) -> Vec<HostEvent> {
        self.engine.events.take()
    }

    /// Also sends every event reported from now on to `live` as it happens (a terminal showing
    /// a turn while it runs); [`Host::take_events`] still returns them all.
    pub fn watch(&mut self, live: tokio::sync::broadcast::Sender<std::sync::Arc<HostEvent>>) {
        self.engine.events.attach(live);
    }

    /// The active session, if any.
    pub fn active(&self) -> Option<&SessionInfo> {
        self.session.as_ref().map(|s| &s.info)
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The hook pipeline (an actix program may send its coordinator `Call`s itself).
    pub fn pipeline(&self) -> &Pipeline {
        &self.engine.pipeline
    }

    /// The session lifecycle actor.
    pub fn lifecycle(&self) -> &Addr<SessionLifecycle> {
        &self.lifecycle
    }

    fn turn(&mut self) -> Result<Turn<'_>, HostError> {
        let session = self.session.as_mut().ok_or(HostError::NoSession)?;
        Ok(Turn {
            engine: &mut self.engine,
            session,
        })
    }

    /// A fresh session with a new id in `workspace`, holding `records`.
    fn fresh(
        &mut self,
        workspace: PathBuf,
        records: &[hookline_messages::record::Record],
    ) -> Result<Opened, HostError> {
        let taken = self.store.sessions()?;
        let id = loop {
            self.next_id += 1;
            let id = SessionId::new(format!("s{}", self.next_id));
            if !taken.contains(&id) {
                break id;
            }
        };
        let info = SessionInfo {
            workspace_root: workspace.display().to_string(),
            session_id: id,
            approval_mode: self.approval_mode,
        };
        SessionState::create(&self.store, info, records)
    }

    /// `/cd` and `/space`: the session is left before the reload, and a fresh session starts in
    /// the new workspace (SPEC P3.11).
    async fn reload(&mut self, cause: Cause, dir: PathBuf) -> Result<(), HostError> {
        self.workspace = dir.clone();
        let opened = self.fresh(dir, &[])?;
        self.activate(cause, opened).await
    }

    /// Makes `opened` the active session through the lifecycle actor and archives what ran.
    async fn activate(&mut self, cause: Cause, opened: Opened) -> Result<(), HostError> {
        let Opened { state, repaired } = opened;
        let ran = self
            .change(SessionEvent::Activate {
                cause,
                next: state.info.clone(),
            })
            .await?;
        let mut next = Some(state);
        for text in repaired {
            self.engine.events.push(HostEvent::Info { text });
        }
        let mut old = self.session.take();
        self.record_transitions(ran, &mut old, &mut next)?;
        self.session = next.or(old);
        if let Some(session) = self.session.as_mut() {
            for note in std::mem::take(&mut self.load_notes) {
                crate::state::record_note(&mut self.engine.events, session, note)?;
            }
        }
        self.touch();
        self.bootstrap_session().await
    }

    async fn change(&self, event: SessionEvent) -> Result<Vec<Ran>, HostError> {
        self.lifecycle
            .send(ChangeSession(event))
            .await
            .map_err(|_| HostError::LifecycleStopped)?
            .map_err(HostError::from)
    }

    /// Archives each transition in the session it concerns: the end in the session left, the
    /// start in the session that became active.
    fn record_transitions(
        &mut self,
        ran: Vec<Ran>,
        left: &mut Option<SessionState>,
        next: &mut Option<SessionState>,
    ) -> Result<(), HostError> {
        for Ran { transition, notes } in ran {
            let (session, entry, event) = match transition {
                Transition::Ended(info) => (
                    left.as_mut(),
                    ArchiveEntry::SessionEnded(info.clone()),
                    HostEvent::SessionEnded(info),
                ),
                Transition::Started(info) => (
                    next.as_mut(),
                    ArchiveEntry::SessionStarted(info.clone()),
                    HostEvent::SessionStarted(info),
                ),
            };
            self.engine.events.push(event);
            if let Some(session) = session {
                session.archive(&entry)?;
                for note in notes {
                    crate::state::record_note(&mut self.engine.events, session, note)?;
                }
            }
        }
        Ok(())
    }
}

fn existing_dir(dir: &Path) -> Result<PathBuf, HostError> {
    let dir = std::fs::canonicalize(dir).map_err(|source| workspace_error(dir, source))?;
    if dir.is_dir() {
        Ok(dir)
    } else {
        Err(workspace_error(
            &dir,
            std::io::Error::other("not a directory"),
        ))
    }
}

fn workspace_error(dir: &Path, source: std::io::Error) -> HostError {
    HostError::Workspace {
        path: dir.display().to_string(),
        source,
    }
}
