//! Session event contexts: auto-reset (SPEC G5.3), patch (G5.5), compaction (G5.6).

use serde::{Deserialize, Serialize};

use super::entry::{Config, SessionEntry};
use crate::session::ApprovalMode;

/// Why a session was reset automatically.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResetReason {
    /// The daily reset time passed.
    Daily,
    /// The session sat idle too long.
    Idle,
}

/// `session:auto-reset` (SPEC G5.3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AutoResetContext {
    /// The gateway configuration.
    pub cfg: Config,
    /// The agent the session belongs to.
    pub agent_id: String,
    /// The agent's workspace directory.
    pub workspace_dir: String,
    /// The session store's path.
    pub store_path: String,
    /// The entry naming the ended `sessionId`.
    pub session_entry: SessionEntry,
    /// The ended session's transcript identifier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_file: Option<String>,
    /// Which policy fired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<ResetReason>,
    /// Whether the transcript was archived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript_archived: Option<bool>,
    /// The id of the session that replaces it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_session_id: Option<String>,
    /// The key of the session that replaces it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_session_key: Option<String>,
}

/// The request-shaped patch (SPEC G5.5): the target/desired fields as submitted, not a diff.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionPatch {
    /// The session key the patch targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// The model asked for (`/model`, the model picker, `session_status`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The mode asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The approval mode asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_mode: Option<ApprovalMode>,
}

/// `session:patch` (SPEC G5.5). Emitted after a successful settings change, even when the value
/// already held; read-only status queries emit nothing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionPatchContext {
    /// The entry after the operation, cloned.
    pub session_entry: SessionEntry,
    /// The patch as submitted.
    pub patch: SessionPatch,
    /// The gateway configuration.
    pub cfg: Config,
}

/// `session:compact:before` (SPEC G5.6). An unknown token count is absent, never zero.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactBeforeContext {
    /// The session being compacted.
    pub session_id: String,
    /// Whether the producer had no session key for it.
    pub missing_session_key: bool,
    /// Messages going into the compaction.
    pub message_count: u64,
    /// Tokens going into the compaction, when counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_count: Option<u64>,
    /// Messages in the transcript before anything was trimmed.
    pub message_count_original: u64,
    /// Tokens in the transcript before anything was trimmed, when counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_count_original: Option<u64>,
}

/// `session:compact:after` (SPEC G5.6). Emitted only for a compaction that completed (G3.3).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactAfterContext {
    /// The session compacted.
    pub session_id: String,
    /// Whether the producer had no session key for it.
    pub missing_session_key: bool,
    /// Messages after compaction.
    pub message_count: u64,
    /// Tokens after compaction, when counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_count: Option<u64>,
    /// Messages folded into the summary.
    pub compacted_count: u64,
    /// The summary's length in characters, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_length: Option<u64>,
    /// Tokens before, when counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_before: Option<u64>,
    /// Tokens after, when counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_after: Option<u64>,
    /// The first transcript entry kept verbatim, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_kept_entry_id: Option<String>,
}
