//! When a conversation emits gateway events (SPEC G5): at the moments the spec names, it calls
//! the producers of [`crate::producers`] with its facts, each with its key's wait rule
//! (`docs/events.md`): startup, session-start bootstrap, command events, chat messages and
//! custom emits (`settings.rs` has compaction, patches and automatic resets).

use hookline_actors::events::{Delivery, Emitted, EventError};
use hookline_messages::event::{
    BootstrapFile, CommandStopContext, CustomKey, EventKey, GatewayStartupContext, InboundMedia,
    MessageSentContext, MessageStage, SessionEntry, SessionPatch,
};
use hookline_messages::note::Note;
use hookline_messages::record::ArchiveEntry;
use hookline_messages::session::SessionInfo;

use super::{CommandOrigin, Conversation, HostError, HostEvent};
use crate::producers::{
    AgentFacts, BootstrapRequest, CommandFacts, GatewayEvents, InboundMessage, MessageChannel,
};
use crate::state::record_note;

/// `/new` or `/reset`: which command event follows the activation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CommandKind {
    New,
    Reset,
}

impl Conversation {
    /// Emits `gateway:startup` once per gateway (SPEC G5.7); [`Conversation::open`] and
    /// [`Conversation::resume`] call it before the first session starts (a
    /// [`Gateway`](crate::gateway::Gateway) calls it as it starts). Its notes are archived in the
    /// first session.
    ///
    /// # Errors
    /// [`HostError::Gateway`] when the lifecycle actor is shutting down or gone.
    pub async fn startup(&mut self) -> Result<(), HostError> {
        if !self.shared.claim_startup() {
            return Ok(());
        }
        let facts = self.facts();
        let deps = serde_json::json!({
            "storePath": facts.store_path,
            "tools": self.engine.tools.specs().map(|s| s.name.clone()).collect::<Vec<_>>(),
        });
        let context = GatewayStartupContext {
            cfg: facts.cfg,
            deps,
            workspace_dir: facts.workspace_dir,
        };
        let delivery = self.shared.lifecycle.startup(context).await?;
        self.delivered(EventKey::GatewayStartup, Ok(delivery))
    }

    /// The channel interface for chat traffic (`message:*`, SPEC G5.8 to G5.11); events go on
    /// the bus's bounded queue and never block the caller.
    pub fn channel(&self) -> MessageChannel {
        self.producers().channel()
    }

    /// An inbound chat message: `message:received` (queued), reported as an event.
    pub fn inbound(&mut self, message: InboundMessage) {
        let emitted = self.channel().received(message);
        self.emitted(EventKey::MessageReceived, &emitted);
    }

    /// A voice note was transcribed: `message:transcribed` (queued, SPEC G5.9).
    pub fn transcribed(&mut self, stage: MessageStage, transcript: String) {
        let emitted = self
            .channel()
            .transcribed(stage, &InboundMedia::default(), transcript);
        self.emitted(EventKey::MessageTranscribed, &emitted);
    }

    /// The path [`Conversation::command`] attributes commands to.
    pub fn chat_origin(&self) -> &CommandOrigin {
        &self.shared.settings.chat
    }

    /// The channel of the host's own chat path (`cli` by default).
    pub fn chat_channel(&self) -> &str {
        self.shared.settings.chat_channel()
    }

    /// An outbound delivery result: `message:sent` (queued), reported as an event.
    pub fn outbound(&mut self, result: MessageSentContext) {
        let emitted = self.channel().sent(result);
        self.emitted(EventKey::MessageSent, &emitted);
    }

    /// Emits a custom key (SPEC G4.2: the only way an unknown subscription fires) and waits for
    /// its handlers.
    ///
    /// # Errors
    /// [`HostError::Event`] when the bus is gone, or a store failure recording its notes.
    pub async fn emit_custom(
        &mut self,
        key: CustomKey,
        context: serde_json::Value,
    ) -> Result<(), HostError> {
        let result = self.bus().emit_custom(key.clone(), context).await;
        self.delivered(EventKey::Custom(key), result)?;
        self.flush().await
    }

    /// Records the notes of queued and detached deliveries (and dropped-event counts), and the
    /// protocol faults pinned on plugins, that arrived since the last call, in the active session's archive.
    ///
    /// # Errors
    /// A store failure.
    pub async fn record_event_notes(&mut self) -> Result<(), HostError> {
        let mut notes = self.bus().take_notes().await;
        // Protocol faults pinned on a plugin, not on a call (issue 15 defect 3).
        notes.extend(self.shared.processes().iter().flat_map(|p| p.take_faults()));
        self.event_notes(notes)?;
        self.flush().await
    }

    /// What every producer knows now (the workspace follows `/cd` and `/space`).
    pub(crate) fn facts(&self) -> AgentFacts {
        AgentFacts {
            agent_id: self.shared.settings.agent_id.clone(),
            workspace_dir: self.workspace.display().to_string(),
            store_path: self.shared.store.root().display().to_string(),
            cfg: self.shared.settings.cfg.clone(),
        }
    }

    pub(crate) fn producers(&self) -> GatewayEvents {
        GatewayEvents::new(self.bus().clone(), self.facts())
    }

    fn bus(&self) -> &hookline_actors::events::EventBus {
        self.engine.pipeline.events()
    }

    /// The session key of the host's chat lane: stable across resets (the id changes).
    pub(crate) fn session_key(&self) -> String {
        format!(
            "agent:{}:{}",
            self.shared.settings.agent_id,
            self.shared.settings.chat_channel()
        )
    }

    /// The store entry of `info` as the host has it now.
    pub(crate) fn entry(&self, info: &SessionInfo) -> SessionEntry {
        let file = self
            .shared
            .store
            .root()
            .join("sessions")
            .join(info.session_id.as_str());
        SessionEntry {
            session_id: info.session_id.to_string(),
            session_key: Some(self.session_key()),
            session_file: Some(file.display().to_string()),
            updated_at: self.wiring.last_active_ms,
            model: self.wiring.model.clone(),
            mode: Some(self.wiring.mode.as_str().to_owned()),
            approval_mode: Some(info.approval_mode),
        }
    }

    /// Session start (SPEC G5.4): the workspace's bootstrap files through `agent:bootstrap`,
    /// then de-duplicated, filtered and budgeted; the session keeps the result, which the work
    /// and plan system texts include.
    pub(crate) async fn bootstrap_session(&mut self) -> Result<(), HostError> {
        let Some(info) = self.active().cloned() else {
            return Ok(());
        };
        let request = BootstrapRequest {
            session_key: Some(self.session_key()),
            session_id: Some(info.session_id.to_string()),
            file_names: self.shared.settings.bootstrap_files.clone(),
            policy: self.shared.settings.bootstrap_policy.clone(),
        };
        let done = match self.producers().bootstrap_delivered(request).await {
            Ok(done) => done,
            Err(error) => return self.delivered(EventKey::AgentBootstrap, Err(error)),
        };
        self.engine
            .events
            .push(HostEvent::gateway(EventKey::AgentBootstrap, "awaited"));
        self.archive_event(ArchiveEntry::GatewayEvent {
            event: done.emitted.to_wire(),
            calls: done.calls,
            handed_on: done.handed_on,
        })?;
        self.event_notes(done.notes)?;
        let files = done.files;
        self.engine.events.push(HostEvent::Bootstrap {
            files: files.iter().map(describe).collect(),
        });
        if let Some(session) = self.session.as_mut() {
            session.set_bootstrap(&files);
        }
        Ok(())
    }

    /// `command:new` / `command:reset` after the activation (SPEC G5.1).
    pub(crate) async fn command_event(
        &mut self,
        kind: CommandKind,
        previous: Option<SessionInfo>,
        origin: &CommandOrigin,
    ) -> Result<(), HostError> {
        let Some(info) = self.active().cloned() else {
            return Ok(());
        };
        let facts = CommandFacts {
            session_entry: self.entry(&info),
            previous_session_entry: previous.map(|p| self.entry(&p)),
            source: origin.source(),
            sender_id: origin.sender_id(),
        };
        let producers = self.producers();
        let (key, result) = match kind {
            CommandKind::New => (EventKey::CommandNew, producers.command_new(facts).await),
            CommandKind::Reset => (EventKey::CommandReset, producers.command_reset(facts).await),
        };
        self.delivered(key, result)
    }

    /// `/stop` (SPEC G5.2): observes the cancellation; it gates nothing (G1.5).
    pub(crate) async fn stop_event(&mut self, origin: &CommandOrigin) -> Result<(), HostError> {
        let info = self.active().cloned();
        let context = CommandStopContext {
            session_entry: info.as_ref().map(|i| self.entry(i)),
            session_id: info.map(|i| i.session_id.to_string()),
            command_source: Some(origin.source()),
            sender_id: origin.sender_id(),
        };
        let result = self.producers().command_stop(context).await;
        self.delivered(EventKey::CommandStop, result)
    }

    /// `session:patch` after a settings change (SPEC G5.5), queued.
    pub(crate) fn patch_event(&mut self, mut patch: SessionPatch) {
        let Some(info) = self.active().cloned() else {
            return;
        };
        patch.key = Some(self.session_key());
        let emitted = self.producers().session_patched(self.entry(&info), patch);
        self.emitted(EventKey::SessionPatch, &emitted);
    }

    /// Reports an awaited delivery and archives its notes.
    pub(crate) fn delivered(
        &mut self,
        key: EventKey,
        result: Result<Delivery, EventError>,
    ) -> Result<(), HostError> {
        let delivery = result?;
        self.engine.events.push(HostEvent::GatewayEvent {
            key: key.to_string(),
            wait: "awaited".into(),
            calls: Some(delivery.calls),
        });
        // Issue 34: `hookline replay` delivers the event again and compares what followed.
        self.archive_event(ArchiveEntry::GatewayEvent {
            event: delivery.event.to_wire(),
            calls: delivery.calls,
            handed_on: None,
        })?;
        self.event_notes(delivery.notes)
    }

    /// Archives an awaited event in the active session; with none active it waits, before the
    /// notes that wait, for the next one (`gateway:startup` runs before the first session).
    fn archive_event(&mut self, entry: ArchiveEntry) -> Result<(), HostError> {
        match self.session.as_mut() {
            Some(session) => session.archive(&entry),
            None => {
                self.pending_events.push(entry);
                Ok(())
            }
        }
    }

    /// Reports a queued or detached emit.
    pub(crate) fn emitted(&mut self, key: EventKey, emitted: &Emitted) {
        let wait = match emitted {
            Emitted::Delivered(_) => "awaited",
            Emitted::Queued => "queued",
            Emitted::Detached => "detached",
            Emitted::Dropped => "dropped",
        };
        self.engine.events.push(HostEvent::gateway(key, wait));
    }

    /// Archives event notes in the active session; with none active they wait for the next one.
    pub(crate) fn event_notes(&mut self, notes: Vec<Note>) -> Result<(), HostError> {
        match self.session.as_mut() {
            Some(session) => {
                for note in notes {
                    record_note(&mut self.engine.events, session, note)?;
                }
                Ok(())
            }
            None => {
                self.pending_notes.extend(notes);
                Ok(())
            }
        }
    }
}

/// `AGENTS.md (120 chars)` or `USER.md (missing)`.
fn describe(file: &BootstrapFile) -> String {
    match &file.content {
        Some(content) => format!("{} ({} chars)", file.name, content.chars().count()),
        None => format!("{} (missing)", file.name),
    }
}
