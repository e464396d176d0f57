//! Values several contexts share: the config blob, session entries, command sources.

use serde::{Deserialize, Serialize};

use crate::session::ApprovalMode;

/// The gateway's configuration as the producer passes it (`cfg`): opaque JSON to the runtime.
pub type Config = serde_json::Value;

/// A session-store entry as the producer cloned it (`sessionEntry`, `previousSessionEntry`).
///
/// Only `sessionId` is always known; the rest is absent when the producer does not know it.
/// `sessionFile` may be a transcript identifier, not a readable path (SPEC G5.1).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionEntry {
    /// The session's id.
    pub session_id: String,
    /// The routing key the session is stored under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_key: Option<String>,
    /// The transcript's identifier; not necessarily a readable file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_file: Option<String>,
    /// Last update, in milliseconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<u64>,
    /// The selected model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The session's mode (as the host names it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The session's approval mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_mode: Option<ApprovalMode>,
}

impl SessionEntry {
    /// An entry that knows only its session id.
    pub fn new(session_id: impl Into<String>) -> Self {
        Self {
            session_id: session_id.into(),
            ..Self::default()
        }
    }
}

/// Which path produced a command event (`commandSource`, SPEC G5.1). A chat command carries the
/// channel's name; the gateway's own paths use the fixed names below.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CommandSource(String);

impl CommandSource {
    /// A gateway session reset (`gateway:sessions.reset`).
    pub fn gateway_sessions_reset() -> Self {
        Self("gateway:sessions.reset".into())
    }

    /// A gateway agent reset (`gateway:agent`).
    pub fn gateway_agent() -> Self {
        Self("gateway:agent".into())
    }

    /// Session creation from the web chat (`webchat`).
    pub fn webchat() -> Self {
        Self("webchat".into())
    }

    /// A chat command typed on `channel` (e.g. `telegram`).
    pub fn chat(channel: impl Into<String>) -> Self {
        Self(channel.into())
    }

    /// Whether a gateway path produced it; gateway callers omit `senderId` (SPEC G5.1).
    pub fn is_gateway(&self) -> bool {
        self.0.starts_with("gateway:")
    }

    /// The source as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}
