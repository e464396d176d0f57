//! What a gateway session looks like from outside: [`SessionStatus`], kept current by the
//! session's task on a `watch` channel, so readers never wait for a turn to finish.

use hookline_messages::model::{UsageByModel, UsageTotals};
use hookline_messages::session::{ApprovalMode, SessionId};
use serde::Serialize;

/// What a session is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Activity {
    /// Waiting for a request.
    Idle,
    /// Running a turn or a command.
    Turn,
    /// A turn waits for an operator's approval.
    Approval,
    /// Ended (closed, or the gateway shut down).
    Closed,
}

/// A session's status.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionStatus {
    /// The id the gateway knows the conversation by: its first session's id, stable across
    /// `/new` and `/reset`.
    pub key: SessionId,
    /// The active session (changes with `/new`, `/reset`, `/resume`, ...).
    pub session_id: Option<SessionId>,
    /// The current workspace.
    pub workspace: String,
    /// The active session's approval mode.
    pub approval_mode: ApprovalMode,
    /// The model the session asks for (`"model"` at open, `/model`), if any; restored on resume.
    pub model: Option<String>,
    /// What it is doing now.
    pub activity: Activity,
    /// User turns the active session has run: its stored user messages, so a resumed session
    /// counts the turns it ran before (issue 26); a fresh session (`/new`, `/reset`, ...) starts
    /// at 0.
    pub turns: u64,
    /// When it last did something, in milliseconds since the Unix epoch.
    pub last_activity_ms: u64,
    /// Stored records of the active session.
    pub records: usize,
    /// Token usage summed over the active session's answered model calls, when the provider
    /// reported any (absent, not zero, when it reported none: the echo model; issue 21).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageTotals>,
    /// The same per model that answered (turns, side questions and compactions alike; issue 34
    /// item 5), when any reported usage.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage_by_model: Option<UsageByModel>,
    /// Who the session belongs to (issue 48: the tenant and principal that opened it), when
    /// anybody was named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<crate::store::SessionOwner>,
}

/// Requests waiting in the sessions' inboxes (each bounded by [`GatewayLimits::inbox`]), not
/// counting the one each session is running.
///
/// [`GatewayLimits::inbox`]: super::GatewayLimits::inbox
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueuedRequests {
    /// Summed over every open session.
    pub total: usize,
    /// In the fullest inbox.
    pub deepest: usize,
}
