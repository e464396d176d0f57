//! One conversation: a [`Conversation`] is one chat lane over a gateway's shared services (see
//! [`crate::shared`]): its active session and that session's storage, its workspace, its
//! settings, its events, and its own session lifecycle actor. It opens and resumes sessions,
//! drives turns, runs session commands, and closes. The gateway events a conversation produces
//! at its moments are in `gateway_events.rs` (startup, bootstrap, commands, messages) and
//! `settings.rs` (compaction, patches, automatic resets).
//!
//! [`Host`](crate::Host) is the one-conversation embedding API: a conversation on a gateway of
//! its own, built by [`HostBuilder`](crate::HostBuilder). A
//! [`Gateway`](crate::gateway::Gateway) runs many conversations at once, each on its own task;
//! both run exactly this code.
//!
//! Everything runs on an actix system (the pipeline and the lifecycles are actors). An actix
//! program can also hold [`Conversation::pipeline`]'s coordinator and
//! [`Conversation::lifecycle`] and send them messages itself. Which session is active, and the
//! begin and end hooks, belong to the session lifecycle actor (SPEC P3.10 to P3.13).

mod gateway_events;
mod settings;
pub(crate) mod shutdown;
mod stored;
mod waiting;
mod wiring;

use std::path::{Path, PathBuf};

use std::sync::Arc;

use actix::{Actor, Addr};
use hookline_actors::session::{ChangeRefused, ChangeSession, Ran, SessionLifecycle};
use hookline_actors::{Pipeline, PipelineError, Readmit};
use hookline_messages::model::{UsageByModel, UsageTotals};
use hookline_messages::note::Note;
use hookline_messages::prompt::PromptMode;
use hookline_messages::record::ArchiveEntry;
use hookline_messages::session::{ApprovalMode, SessionId, SessionInfo};
use hookline_messages::transition::{Cause, SessionEvent, Transition};
use hookline_messages::user::StopReason;

pub(crate) use crate::state::SessionState;
pub use crate::state::{HostError, HostEvent};
pub(crate) use shutdown::shut_down;
// The clock and the command origin are the gateway's settings (crate::shared); they keep their
// paths here, where conversations use them.
pub use crate::shared::{Clock, CommandOrigin, ManualClock, SystemClock};

use crate::shared::{Choices, Shared};
use crate::state::{Opened, Unrestorable};
use crate::store::Store;
use crate::turn::{Engine, Turn, UserInput};
use gateway_events::CommandKind;
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

impl SessionCommand {
    /// Whether the command leaves the active session for another (SPEC P3.11: `/clear`,
    /// `/resume`, `/fork` replace it; `/cd` and `/space` reload; `/new` and `/reset` start a
    /// fresh one).
    pub fn ends_session(&self) -> bool {
        matches!(
            self,
            Self::New
                | Self::Reset
                | Self::Clear
                | Self::Resume(_)
                | Self::Fork
                | Self::Cd(_)
                | Self::Space(_)
        )
    }
}

impl From<hookline_messages::scenario::SlashCommand> for SessionCommand {
    /// The session command a typed slash command stands for: the one mapping the chat, the
    /// scenario player and the server share (each adds only its own fences and reports).
    fn from(command: hookline_messages::scenario::SlashCommand) -> Self {
        use hookline_messages::scenario::SlashCommand as Slash;
        match command {
            Slash::New => Self::New,
            Slash::Reset => Self::Reset,
            Slash::Stop => Self::Stop,
            Slash::Model(name) => Self::Model(name),
            Slash::Mode(mode) => Self::Mode(mode),
            Slash::Approvals(mode) => Self::Approvals(mode),
            Slash::Clear => Self::Clear,
            Slash::Resume(id) => Self::Resume(SessionId::new(id)),
            Slash::Fork => Self::Fork,
            Slash::Cd(dir) => Self::Cd(dir.into()),
            Slash::Space(name) => Self::Space(name),
            Slash::Compact => Self::Compact,
        }
    }
}

/// One conversation. Not `Sync`: one owner drives it (its methods take `&mut self`); a gateway
/// runs each conversation on a task of its own.
pub struct Conversation {
    shared: Arc<Shared>,
    engine: Engine,
    lifecycle: Addr<SessionLifecycle>,
    session: Option<SessionState>,
    workspace: PathBuf,
    approval_mode: ApprovalMode,
    /// Notes waiting for a session to be archived in.
    pending_notes: Vec<Note>,
    /// Awaited gateway events waiting for a session to be archived in (before those notes).
    pending_events: Vec<ArchiveEntry>,
    wiring: Wiring,
    /// A resumed turn that waits for an approval, to continue (issue 40 item 3).
    waiting: waiting::WaitingTurn,
    /// Who its sessions belong to (issue 48): set at open, restored from the facts on resume.
    owner: Option<crate::store::SessionOwner>,
}

impl Conversation {
    /// A conversation on `shared`'s services in `workspace`, with no session open yet.
    ///
    /// # Panics
    /// When called outside an actix system (its lifecycle actor starts here).
    pub(crate) fn new(
        shared: Arc<Shared>,
        workspace: PathBuf,
        approval_mode: ApprovalMode,
    ) -> Self {
        let engine = Engine::new(&shared);
        let lifecycle = SessionLifecycle::new(shared.pipeline.clone()).start();
        let pending_notes = shared.take_load_notes();
        Self {
            shared,
            engine,
            lifecycle,
            session: None,
            workspace,
            approval_mode,
            pending_notes,
            pending_events: Vec::new(),
            wiring: Wiring::default(),
            waiting: waiting::WaitingTurn::default(),
            owner: None,
        }
    }

    /// Names who the sessions it opens belong to (issue 48); before it opens one.
    pub(crate) fn set_owner(&mut self, owner: Option<crate::store::SessionOwner>) {
        self.owner = owner;
    }

    /// Who its sessions belong to, if anybody was named.
    pub fn owner(&self) -> Option<&crate::store::SessionOwner> {
        self.owner.as_ref()
    }

    /// Opens a fresh session in the host's workspace and makes it active (SPEC P3.10).
    ///
    /// # Errors
    /// [`HostError`] when the store or the pipeline fails.
    pub async fn open(&mut self) -> Result<SessionId, HostError> {
        let opened = self.fresh(self.workspace.clone(), &[]).await?;
        self.open_created(opened).await
    }

    /// Opens a session the store already created (a gateway creates it first, to know its id
    /// and so its shard, before it places the conversation).
    pub(crate) async fn open_created(&mut self, opened: Opened) -> Result<SessionId, HostError> {
        self.startup().await?;
        let id = opened.state.info.session_id.clone();
        self.activate(Cause::Open, opened).await?;
        self.flush().await?;
        Ok(id)
    }

    /// Resumes a stored session, e.g. after a restart (SPEC P3.10, P3.12): everything the
    /// session was comes back from its stored facts (issue 26): its approval mode as last set,
    /// its workspace, its model and turn mode, its turn count. The conversation takes them on,
    /// so sessions it opens later (`/new`, `/fork`, `/cd`) keep the operator's policy.
    ///
    /// # Errors
    /// [`HostError::UnknownSession`] when the store does not have it;
    /// [`HostError::Unrestorable`] when a stored value cannot be restored here (a workspace that
    /// is gone or outside the fence, a model the provider does not serve): the session is left
    /// as stored, its lease given back, and nothing runs with a looser default.
    pub async fn resume(&mut self, id: &SessionId) -> Result<(), HostError> {
        if self.active().is_some_and(|info| &info.session_id == id) {
            return Ok(());
        }
        self.startup().await?;
        let mut opened = SessionState::resume(&*self.shared.sessions, id)
            .await?
            .ok_or_else(|| HostError::UnknownSession(id.to_string()))?;
        let workspace = match self.restorable(&opened.state) {
            Ok(workspace) => workspace,
            Err(error) => {
                if let Err(release) = opened.state.release().await {
                    tracing::warn!(session = %id, %release, "could not give a refused session's lease back");
                }
                return Err(error);
            }
        };
        self.workspace = workspace;
        self.approval_mode = opened.state.info.approval_mode;
        self.wiring.model = opened.state.model.clone();
        self.owner = opened.state.owner.clone();
        if let Some(mode) = opened.state.mode {
            self.wiring.mode = mode;
        }
        let open_turn = opened.open_turn.take();
        self.activate(Cause::Resume, opened).await?;
        // Issue 22: a turn a crash or a lost lease cut off is closed before anything else; one
        // that waited for an approval is kept to continue where the conversation does that.
        if let Some(open) = open_turn.and_then(|open| self.waiting.keep(open)) {
            self.turn()?.close_cut_off(open).await?;
        }
        self.flush().await
    }

    /// The workspace a stored session resumes in, or why it cannot be restored here.
    fn restorable(&self, state: &SessionState) -> Result<PathBuf, HostError> {
        let refuse = |reason| HostError::Unrestorable {
            session: state.info.session_id.to_string(),
            reason,
        };
        let stored = &state.info.workspace_root;
        let workspace = std::fs::canonicalize(stored)
            .ok()
            .filter(|dir| dir.is_dir())
            .ok_or_else(|| refuse(Unrestorable::WorkspaceMissing(stored.clone())))?;
        if let Some(fence) = &self.shared.settings.workspace_fence {
            if !workspace.starts_with(fence) {
                return Err(refuse(Unrestorable::WorkspaceOutsideFence(stored.clone())));
            }
        }
        if let Some(model) = &state.model {
            if !self.shared.provider.serves_model(model) {
                return Err(refuse(Unrestorable::UnknownModel(model.clone())));
            }
        }
        Ok(workspace)
    }

    /// Runs one user turn on the active session: first an automatic reset when the reset
    /// policy says the session is due (SPEC G5.3), then compaction when the stored records
    /// exceed the configured threshold. A turn the operator stopped emits `command:stop` after
    /// it ended (SPEC G5.2: the event observes the cancellation). A stop raised before this call
    /// (when no turn ran) does not stop this turn.
    ///
    /// # Errors
    /// [`HostError::NoSession`], or a store or pipeline failure.
    pub async fn user_turn(&mut self, input: UserInput) -> Result<StopReason, HostError> {
        self.engine.stop.clear();
        self.run_user_turn(input).await
    }

    /// [`Conversation::user_turn`] without clearing the stop signal: for a caller that cleared it
    /// before it made the turn visible (the gateway clears it before its status says the session
    /// is in a turn, so a `/stop` sent by a client that saw that status is never lost).
    pub(crate) async fn run_user_turn(
        &mut self,
        input: UserInput,
    ) -> Result<StopReason, HostError> {
        self.auto_reset_if_due().await?;
        let stop = self.turn_inner(input).await?;
        self.touch();
        if stop == StopReason::Cancelled {
            let origin = self.shared.settings.chat.clone();
            self.stop_event(&origin).await?;
        }
        self.record_event_notes().await?;
        self.flush().await?;
        Ok(stop)
    }

    async fn turn_inner(&mut self, input: UserInput) -> Result<StopReason, HostError> {
        let over = self.shared.compact_after.is_some_and(|limit| {
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
        self.flush().await?;
        Ok(answer)
    }

    /// Runs a session command typed on the host's chat path (see
    /// [`HostBuilder::chat_origin`](crate::HostBuilder::chat_origin)).
    ///
    /// # Errors
    /// [`HostError`] when the command cannot run (an unknown session, a missing directory).
    pub async fn command(&mut self, command: SessionCommand) -> Result<(), HostError> {
        let origin = self.shared.settings.chat.clone();
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
        self.flush().await?;
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
                let opened = self.fresh(self.workspace.clone(), &[]).await?;
                self.activate(cause, opened).await?;
                self.command_event(kind, previous, origin).await
            }
            SessionCommand::Clear => {
                let opened = self.fresh(self.workspace.clone(), &[]).await?;
                self.activate(Cause::Clear, opened).await
            }
            SessionCommand::Stop => self.stop_event(origin).await,
            SessionCommand::Model(name) => self.set_model(name).await,
            SessionCommand::Mode(mode) => self.set_mode(mode).await,
            SessionCommand::Approvals(mode) => self.set_approval_mode(mode).await,
            SessionCommand::Fork => {
                let records = self
                    .session
                    .as_ref()
                    .ok_or(HostError::NoSession)?
                    .records()
                    .to_vec();
                let opened = self.fresh(self.workspace.clone(), &records).await?;
                self.activate(Cause::Fork, opened).await
            }
            SessionCommand::Cd(dir) => {
                let dir = existing_dir(&self.workspace.join(dir))?;
                self.reload(Cause::Cd, dir).await
            }
            SessionCommand::Space(name) => {
                let dir = self.shared.spaces_root.join(name);
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
        if self.shared.is_shut_down() {
            // The shutdown already ended the session.
            return Ok(());
        }
        let Changed { ran, refused } = self.change(SessionEvent::Close).await?;
        if let Some(error) = refused {
            // The end did not run: the session stays open.
            return Err(error);
        }
        self.leave_active(ran).await
    }

    /// Drops the active session without writing or running its end hooks: another node took
    /// it over (its lease was lost, issue 14 item 2), so the session has not ended (SPEC P3.11
    /// runs the end when a session closes); it goes on there. The pipeline forgets this node's
    /// per-session state.
    pub(crate) async fn abandon(&mut self) {
        let Some(session) = self.session.take() else {
            return;
        };
        let id = session.info.session_id.clone();
        tracing::warn!(session = %id, "another node took this session over; this node dropped it");
        session.discard();
        if let Err(error) = self.engine.pipeline.forget_session(&id).await {
            tracing::warn!(session = %id, %error, "could not forget a dropped session");
        }
    }

    /// The plugins loaded from disk, in load order.
    pub fn loaded_plugins(&self) -> &[std::sync::Arc<crate::external::ExternalPlugin>] {
        self.shared.processes()
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
    /// a turn while it runs); [`Host::take_events`](crate::Host) still returns them all.
    pub fn watch(&mut self, live: tokio::sync::broadcast::Sender<std::sync::Arc<HostEvent>>) {
        self.attach_live(Arc::new(move |event: &HostEvent| {
            // No receiver is not an error: nobody is watching right now.
            let _ = live.send(Arc::new(event.clone()));
        }));
    }

    /// The active session, if any.
    pub fn active(&self) -> Option<&SessionInfo> {
        self.session.as_ref().map(|s| &s.info)
    }

    /// The store.
    pub fn store(&self) -> &Store {
        &self.shared.store
    }

    /// The hook pipeline (an actix program may send its coordinator `Call`s itself).
    pub fn pipeline(&self) -> &Pipeline {
        &self.engine.pipeline
    }

    /// The session lifecycle actor.
    pub fn lifecycle(&self) -> &Addr<SessionLifecycle> {
        &self.lifecycle
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    /// The signal that stops this conversation's turn in flight (like `/stop`, from another
    /// task: a Ctrl-C handler, a server route, a drain).
    pub fn stop_signal(&self) -> Arc<crate::turn::StopSignal> {
        self.engine.stop.clone()
    }

    /// Uses `stop` as this conversation's stop signal (shared with its operator by a gateway).
    pub(crate) fn set_stop_signal(&mut self, stop: Arc<crate::turn::StopSignal>) {
        self.engine.stop = stop;
    }

    /// Uses `operator` for this conversation's approvals instead of the gateway's.
    pub fn set_operator(&mut self, operator: Arc<dyn crate::approval::Operator>) {
        self.engine.operator = operator;
    }

    /// Reports this conversation's events, as they happen, to `live` too.
    pub fn attach_live(&mut self, live: crate::state::LiveSink) {
        self.engine.events.attach(live);
    }

    /// Sets how much `hook-changed` events say from now on (the patch only, by default; the
    /// full values too with [`Detail::Full`](crate::state::Detail::Full)).
    pub fn set_detail(&mut self, detail: crate::state::Detail) {
        self.engine.events.set_detail(detail);
    }

    /// Records `note` in the active session's archive (or keeps it for the next session).
    ///
    /// # Errors
    /// A store failure.
    pub async fn record(&mut self, note: Note) -> Result<(), HostError> {
        self.event_notes(vec![note])?;
        self.flush().await
    }

    /// Makes the active session's writes durable (see [`SessionState::flush`]).
    pub(crate) async fn flush(&mut self) -> Result<(), HostError> {
        match self.session.as_mut() {
            Some(session) => session.flush().await,
            None => Ok(()),
        }
    }

    /// The current workspace.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The active session's stored records, in order (empty with none active).
    pub fn records(&self) -> &[hookline_messages::record::Record] {
        self.session.as_ref().map_or(&[], |s| s.records())
    }

    /// The approval mode in force: the active session's (as stored and last set), else the
    /// mode sessions opened next start with.
    pub fn approval_mode(&self) -> ApprovalMode {
        self.active()
            .map_or(self.approval_mode, |info| info.approval_mode)
    }

    /// The model `/model` chose for this conversation, if any.
    pub fn model(&self) -> Option<&str> {
        self.wiring.model.as_deref()
    }

    /// The model this conversation's calls go to: the one it chose, else the provider's
    /// default, if the provider names one.
    pub fn model_name(&self) -> Option<String> {
        self.wiring
            .model
            .clone()
            .or_else(|| self.shared.provider.default_model())
    }

    /// Token usage over the active session's answered model calls, when the provider reported
    /// any (issue 21).
    pub fn usage(&self) -> Option<UsageTotals> {
        self.usage_totals().reported()
    }

    /// Takes the usage of the answers kept since the last call (a gateway request's: its turn
    /// with any compaction before it, or a `/compact`), whichever session was active.
    pub(crate) fn take_usage(&mut self) -> UsageTotals {
        std::mem::take(&mut self.engine.usage)
    }

    /// Token usage per model that answered, over the active session's calls whose model
    /// reported usage; `None` when none did (issue 34 item 5).
    pub fn usage_by_model(&self) -> Option<UsageByModel> {
        self.session.as_ref()?.usage_by_model().reported()
    }

    /// Token usage over the active session's answered model calls, reported or not.
    pub fn usage_totals(&self) -> UsageTotals {
        self.session
            .as_ref()
            .map_or_else(UsageTotals::default, SessionState::usage)
    }

    fn turn(&mut self) -> Result<Turn<'_>, HostError> {
        let session = self.session.as_mut().ok_or(HostError::NoSession)?;
        Ok(Turn {
            engine: &mut self.engine,
            session,
        })
    }

    /// A fresh session with a new id in `workspace`, holding `records`, with the
    /// conversation's choices (approval mode, model, turn mode).
    async fn fresh(
        &mut self,
        workspace: PathBuf,
        records: &[hookline_messages::record::Record],
    ) -> Result<Opened, HostError> {
        self.shared
            .fresh_session(workspace, self.choices(), records)
            .await
    }

    /// What sessions this conversation opens start with.
    pub(crate) fn choices(&self) -> Choices {
        Choices {
            approval_mode: self.approval_mode,
            model: self.wiring.model.clone(),
            mode: Some(self.wiring.mode),
            owner: self.owner.clone(),
        }
    }

    /// User turns the active session has run (0 with none active); a resumed session counts
    /// the ones it ran before.
    pub fn user_turns(&self) -> u64 {
        self.session.as_ref().map_or(0, SessionState::user_turns)
    }

    /// `/cd` and `/space`: the session is left before the reload, and a fresh session starts in
    /// the new workspace (SPEC P3.11).
    async fn reload(&mut self, cause: Cause, dir: PathBuf) -> Result<(), HostError> {
        self.workspace = dir.clone();
        let opened = self.fresh(dir, &[]).await?;
        self.activate(cause, opened).await
    }

    /// Makes `opened` the active session through the lifecycle actor and archives what ran.
    async fn activate(&mut self, cause: Cause, opened: Opened) -> Result<(), HostError> {
        let Opened {
            state, repaired, ..
        } = opened;
        let Changed { ran, refused } = self
            .change(SessionEvent::Activate {
                cause,
                next: state.info.clone(),
            })
            .await?;
        if let Some(error) = refused {
            return self.stopped_part_way(ran, error).await;
        }
        let mut next = Some(state);
        for text in repaired {
            self.engine.events.push(HostEvent::Info { text });
        }
        let mut old = self.session.take();
        self.record_transitions(ran, &mut old, &mut next)?;
        if next.is_some() {
            if let Some(left) = old.take() {
                // The session left is done: its end is durable, and its lease given up, before
                // the next one starts; the pipeline forgets it (its slot and seen notes), as on
                // a close, so a long conversation's `/new`s do not pile up there.
                let id = left.info.session_id.clone();
                left.release().await?;
                // A stopped pipeline has nothing left to forget: the switch goes on.
                if let Err(error) = self.engine.pipeline.forget_session(&id).await {
                    tracing::warn!(session = %id, %error, "could not forget the session left");
                }
            }
        }
        self.session = next.or(old);
        if let Some(session) = self.session.as_mut() {
            if session.pipeline_key.is_none() {
                // A stopped pipeline leaves it keyed by its id: its calls then fail as any would.
                session.pipeline_key = self
                    .engine
                    .pipeline
                    .open_session(&session.info.session_id)
                    .await
                    .ok();
            }
            for entry in std::mem::take(&mut self.pending_events) {
                session.archive(&entry)?;
            }
            for note in std::mem::take(&mut self.pending_notes) {
                crate::state::record_note(&mut self.engine.events, session, note)?;
            }
        }
        self.touch();
        self.bootstrap_session().await
    }

    /// A switch the pipeline refused part-way: nothing ran, and the session stays active; or
    /// the session left ended and the next one's start was refused, and the end is archived in
    /// the session left, which is released and forgotten: no session is active then (its end
    /// ran; none has started) until the next change. Fails with the refusal either way.
    async fn stopped_part_way(&mut self, ran: Vec<Ran>, error: HostError) -> Result<(), HostError> {
        if !ran.is_empty() {
            self.leave_active(ran).await?;
        }
        Err(error)
    }

    /// Leaves the active session after its end ran (`ran`): the end archived in it, its lease
    /// released, and the pipeline's state of it forgotten. None is active after.
    async fn leave_active(&mut self, ran: Vec<Ran>) -> Result<(), HostError> {
        let mut old = self.session.take();
        self.record_transitions(ran, &mut old, &mut None)?;
        if let Some(left) = old {
            let id = left.info.session_id.clone();
            left.release().await?;
            // A stopped pipeline has nothing left to forget.
            if let Err(error) = self.engine.pipeline.forget_session(&id).await {
                tracing::warn!(session = %id, %error, "could not forget the session left");
            }
        }
        Ok(())
    }

    /// Runs `event`'s transitions through the lifecycle actor. A call the pipeline refuses as
    /// overloaded (its admission bound full for a moment) is asked again, paced by [`Readmit`],
    /// for at most [`CHANGE_RETRY_FOR`]: the actor runs only what had not run, so an end that ran
    /// is never run twice nor a start skipped. What ran is returned with the refusal that
    /// stopped the rest, if any.
    ///
    /// # Errors
    /// [`HostError::LifecycleStopped`] when the lifecycle actor is gone.
    async fn change(&self, event: SessionEvent) -> Result<Changed, HostError> {
        let deadline = tokio::time::Instant::now() + CHANGE_RETRY_FOR;
        let mut readmit = Readmit::default();
        let mut ran = Vec::new();
        loop {
            let answer = self
                .lifecycle
                .send(ChangeSession(event.clone()))
                .await
                .map_err(|_| HostError::LifecycleStopped)?;
            let error = match answer {
                Ok(more) => {
                    ran.extend(more);
                    return Ok(Changed { ran, refused: None });
                }
                Err(ChangeRefused { ran: more, error }) => {
                    ran.extend(more);
                    error
                }
            };
            let wait = readmit.next_wait();
            if error != PipelineError::Overloaded || tokio::time::Instant::now() + wait > deadline {
                return Ok(Changed {
                    ran,
                    refused: Some(error.into()),
                });
            }
            tokio::time::sleep(wait).await;
        }
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

/// How long a session change asks again when the pipeline refuses one of its calls as
/// overloaded (see `Conversation::change`).
const CHANGE_RETRY_FOR: std::time::Duration = std::time::Duration::from_secs(1);

/// What a session change ran, and the refusal that stopped it part-way, if any.
struct Changed {
    ran: Vec<Ran>,
    refused: Option<HostError>,
}

pub(crate) fn existing_dir(dir: &Path) -> Result<PathBuf, HostError> {
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
