//! `/new`, `/reset`, `/stop` and session creation (SPEC G5.1, G5.2).

use hookline_actors::events::{Delivery, EventError};
use hookline_messages::event::{
    CommandContext, CommandSource, CommandStopContext, Event, SessionEntry,
};

use super::{AgentFacts, GatewayEvents};

/// What the command path knows about one `/new` or `/reset`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandFacts {
    /// The session's entry as the caller has it at the moment it emits.
    pub session_entry: SessionEntry,
    /// The replaced session's entry, when there was one.
    pub previous_session_entry: Option<SessionEntry>,
    /// Which path produced the command.
    pub source: CommandSource,
    /// Who typed it (chat paths); dropped for gateway paths.
    pub sender_id: Option<String>,
}

/// The `command:new` / `command:reset` context (SPEC G5.1). Gateway callers omit `senderId`,
/// so a gateway source never carries one.
pub fn command_context(agent: &AgentFacts, command: CommandFacts) -> CommandContext {
    let sender_id = if command.source.is_gateway() {
        None
    } else {
        command.sender_id
    };
    CommandContext {
        agent_id: agent.agent_id.clone(),
        session_entry: command.session_entry,
        previous_session_entry: command.previous_session_entry,
        command_source: command.source,
        sender_id,
        workspace_dir: agent.workspace_dir.clone(),
        store_path: agent.store_path.clone(),
        cfg: agent.cfg.clone(),
    }
}

impl GatewayEvents {
    /// Emits `command:new` and waits for its handlers.
    ///
    /// # Errors
    /// [`EventError::Stopped`] when the bus is gone.
    pub async fn command_new(&self, command: CommandFacts) -> Result<Delivery, EventError> {
        let context = command_context(&self.facts, command);
        self.bus.dispatch(Event::CommandNew(context)).await
    }

    /// Emits `command:reset` and waits for its handlers. For the replaced session, handlers
    /// should read `previousSessionEntry` (SPEC G5.1).
    ///
    /// # Errors
    /// [`EventError::Stopped`] when the bus is gone.
    pub async fn command_reset(&self, command: CommandFacts) -> Result<Delivery, EventError> {
        let context = command_context(&self.facts, command);
        self.bus.dispatch(Event::CommandReset(context)).await
    }

    /// Session creation: emits `command:new` (source `webchat`) only when `emit_command_hooks`
    /// was requested against an existing parent (SPEC G5.1); `Ok(None)` otherwise.
    ///
    /// # Errors
    /// [`EventError::Stopped`] when the bus is gone.
    pub async fn session_created(
        &self,
        session_entry: SessionEntry,
        parent: Option<SessionEntry>,
        emit_command_hooks: bool,
    ) -> Result<Option<Delivery>, EventError> {
        let Some(parent) = parent.filter(|_| emit_command_hooks) else {
            return Ok(None);
        };
        let command = CommandFacts {
            session_entry,
            previous_session_entry: Some(parent),
            source: CommandSource::webchat(),
            sender_id: None,
        };
        self.command_new(command).await.map(Some)
    }

    /// Emits `command:stop` (SPEC G5.2) and waits for its handlers. It observes the cancellation;
    /// it does not gate agent finalization (G1.5).
    ///
    /// # Errors
    /// [`EventError::Stopped`] when the bus is gone.
    pub async fn command_stop(&self, stop: CommandStopContext) -> Result<Delivery, EventError> {
        self.bus.dispatch(Event::CommandStop(stop)).await
    }
}
