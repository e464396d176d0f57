//! The producer side of the gateway's internal hook events (SPEC G5): small functions the
//! host's session code calls at the moments the spec names, each building its event's context
//! from the facts it has and emitting it with the key's wait rule (`docs/events.md`).
//!
//! | moment                                   | call                                      | waits? |
//! |------------------------------------------|-------------------------------------------|--------|
//! | `/new`, `/reset` (chat or gateway path)  | [`GatewayEvents::command_new`], [`GatewayEvents::command_reset`] | awaited |
//! | a session created with `emitCommandHooks` | [`GatewayEvents::session_created`]       | awaited |
//! | `/stop`                                  | [`GatewayEvents::command_stop`]           | awaited |
//! | compaction starts / completes            | [`GatewayEvents::compaction_started`], then [`CompactionInFlight::completed`] (or `failed`/`skipped`: no `after`) | awaited |
//! | `/model`, mode or approval-mode change   | [`GatewayEvents::session_patched`]        | queued |
//! | idle or daily reset                      | [`reset_due`], then [`GatewayEvents::auto_reset`] | detached |
//! | session start                            | [`GatewayEvents::bootstrap`]              | awaited |
//! | chat messages in and out                 | [`MessageChannel`] from [`GatewayEvents::channel`] | queued |
//!
//! `gateway:startup`, `gateway:shutdown` and `gateway:pre-restart` belong to the lifecycle actor
//! (`hookline_actors::lifecycle::Lifecycle`).

mod bootstrap;
mod channel;
mod command;
mod compaction;
mod reset;

pub use bootstrap::{
    load_bootstrap_files, BootstrapRequest, Bootstrapped, DEFAULT_BOOTSTRAP_FILES,
};
pub use channel::{InboundMessage, MessageChannel};
pub use command::{command_context, CommandFacts};
pub use compaction::{CompactionInFlight, CompactionResult};
pub use reset::{reset_due, AutoResetFacts, ResetPolicy};

use hookline_actors::events::EventBus;
use hookline_messages::event::Config;

/// What every producer of one agent knows: who it is, where it works, and the configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentFacts {
    /// The agent's id (`agentId`).
    pub agent_id: String,
    /// The agent's workspace directory (`workspaceDir`).
    pub workspace_dir: String,
    /// The session store's path (`storePath`).
    pub store_path: String,
    /// The gateway configuration (`cfg`).
    pub cfg: Config,
}

/// The producers of one agent's events, over a pipeline's event bus
/// (`pipeline.events().clone()`). Cheap to clone.
#[derive(Clone, Debug)]
pub struct GatewayEvents {
    bus: EventBus,
    facts: AgentFacts,
}

impl GatewayEvents {
    /// Producers that emit on `bus` with `facts`.
    pub fn new(bus: EventBus, facts: AgentFacts) -> Self {
        Self { bus, facts }
    }

    /// The bus, for notes ([`EventBus::take_notes`]) and custom emits.
    pub fn bus(&self) -> &EventBus {
        &self.bus
    }

    /// The agent's facts.
    pub fn facts(&self) -> &AgentFacts {
        &self.facts
    }

    /// The channel interface the embedding program feeds chat messages through.
    pub fn channel(&self) -> MessageChannel {
        MessageChannel::new(self.bus.clone(), self.facts.cfg.clone())
    }
}
