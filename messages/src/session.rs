//! Session identity and the read-only facts session hooks see (SPEC P2.1).

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A session's identifier. Cheap to clone: every hook call carries one.
#[derive(
    Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(transparent)]
pub struct SessionId(Arc<str>);

impl SessionId {
    /// Wraps a string as a session id.
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Self(id.into())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for SessionId {
    fn from(id: &str) -> Self {
        Self::new(id)
    }
}

impl From<String> for SessionId {
    fn from(id: String) -> Self {
        Self::new(id)
    }
}

/// How the approval policy treats tool calls in a session.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalMode {
    /// Ask the operator for anything above read risk.
    #[default]
    AskAboveRead,
    /// Ask the operator for every tool call.
    AskAll,
    /// Allow every call whose authority stays inside the workspace; ask for the rest.
    AllowWorkspace,
}

impl ApprovalMode {
    /// The wire name (`ask-above-read`, `ask-all`, `allow-workspace`), as serde writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AskAboveRead => "ask-above-read",
            Self::AskAll => "ask-all",
            Self::AllowWorkspace => "allow-workspace",
        }
    }

    /// The strictest mode: what a session gets when its stored mode cannot be read (a policy
    /// is never relaxed by a value nobody set).
    pub const STRICTEST: Self = Self::AskAll;

    /// A mode by its wire name; `None` for a name this version does not know.
    pub fn from_name(name: &str) -> Option<Self> {
        [Self::AskAboveRead, Self::AskAll, Self::AllowWorkspace]
            .into_iter()
            .find(|mode| mode.as_str() == name)
    }
}

/// What `on_session_started` and `on_session_ended` may read (SPEC P2.1).
///
/// The end callback carries the workspace and session being left (SPEC P3.11).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// The workspace root directory, as the host resolved it.
    pub workspace_root: String,
    /// The session's id.
    pub session_id: SessionId,
    /// The session's approval mode.
    pub approval_mode: ApprovalMode,
}
