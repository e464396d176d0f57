//! Command event contexts (SPEC G5.1, G5.2).

use serde::{Deserialize, Serialize};

use super::entry::{CommandSource, Config, SessionEntry};

/// `command:new` and `command:reset` (SPEC G5.1).
///
/// For the session being replaced read `previousSessionEntry`: chat and gateway paths emit at
/// different points of the reset, so the event is neither a pre-reset hook nor a success receipt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandContext {
    /// The agent the session belongs to.
    pub agent_id: String,
    /// The session's entry as the caller has it.
    pub session_entry: SessionEntry,
    /// The replaced session's entry, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_session_entry: Option<SessionEntry>,
    /// The path that produced the command.
    pub command_source: CommandSource,
    /// Who typed the command; gateway callers omit it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_id: Option<String>,
    /// The agent's workspace directory.
    pub workspace_dir: String,
    /// The session store's path.
    pub store_path: String,
    /// The gateway configuration.
    pub cfg: Config,
}

/// `command:stop` (SPEC G5.2): it observes the cancellation of command processing; it is not the
/// gate for agent finalization (G1.5). No full new/reset context.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandStopContext {
    /// The session's entry, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_entry: Option<SessionEntry>,
    /// The session's id, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The path that produced the stop, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_source: Option<CommandSource>,
    /// Who asked to stop, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender_id: Option<String>,
}
