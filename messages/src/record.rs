//! What a session keeps: the stored records the next request is built from, and the append-only
//! archive of everything that happened (SPEC P2.5, P2.6, P3.6, R1: hooks never write either).

use serde::{Deserialize, Serialize};

use crate::approval::Classification;
use crate::model::{FinishReason, ImageRef, Item, Purpose, Usage};
use crate::note::Note;
use crate::prompt::PromptMode;
use crate::session::SessionInfo;
use crate::tool::{ToolCall, ToolResult};
use crate::user::StopReason;

/// One stored record: the conversation as the host keeps it. Requests are built from these.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Record {
    /// The work or plan system text a turn composed (after `on_prompt` and `rewrite_prompt`,
    /// SPEC R5.8). The latest one is the active system message.
    System {
        /// The mode it was composed for.
        mode: PromptMode,
        /// The text, as used.
        text: String,
    },
    /// A user message, as stored after `on_user_message` (SPEC P2.3, P3.6).
    User {
        /// The stored text.
        text: String,
        /// Attached images, as markers.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageRef>,
    },
    /// An assistant message the model returned.
    Assistant {
        /// Its text.
        text: String,
    },
    /// Model reasoning the model returned.
    Reasoning {
        /// Its text.
        text: String,
    },
    /// A tool call as the model made it (SPEC P3.6: hooks' rewrites are not stored).
    #[serde(rename_all = "camelCase")]
    ToolCall {
        /// The call id.
        call_id: String,
        /// The tool name the model asked for.
        name: String,
        /// The arguments the model gave.
        arguments: serde_json::Value,
    },
    /// A tool result, after `on_tool_result`.
    #[serde(rename_all = "camelCase")]
    ToolResult {
        /// The id of the call it answers.
        call_id: String,
        /// The tool that ran (or was refused).
        name: String,
        /// The result text.
        text: String,
        /// Attached images.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageRef>,
        /// Whether the tool succeeded.
        success: bool,
    },
    /// A compaction summary that replaced the folded history (SPEC P2.10, R3).
    Summary {
        /// The summary body, as stored (after `on_compaction` and `rewrite_compaction`).
        text: String,
    },
    /// The marker that closes a turn a crash or a lost lease cut off (issue 22): stored when the
    /// session is opened again, after a made-up result for every call left without one, so the
    /// next request says what had happened. Sent as a user message with the note's text.
    CutOff {
        /// Where the turn was cut off.
        at: crate::cut_off::CutOff,
    },
}

impl Record {
    /// The images this record carries.
    pub fn images(&self) -> &[ImageRef] {
        match self {
            Self::User { images, .. } | Self::ToolResult { images, .. } => images,
            _ => &[],
        }
    }
}

/// What the policy (or the operator) decided for one tool call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    /// The call may run.
    Allow,
    /// The call is refused and never runs.
    Deny,
}

/// Who made an approval decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Decider {
    /// The approval mode decided without asking.
    Policy,
    /// The operator answered a prompt.
    Operator,
    /// A fail-closed guard hook failed; the call was denied without asking.
    Guard,
}

/// One approval decision, as archived.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRecord {
    /// The call it decided.
    pub call_id: String,
    /// The tool name, after `on_tool_call`.
    pub tool: String,
    /// The classification the policy decided on (after `on_approval` and `rewrite_approval`).
    pub classification: Classification,
    /// The decision.
    pub decision: Decision,
    /// Who decided.
    pub decided_by: Decider,
    /// The principal whose answer it was, when an operator answered through `hookline serve`
    /// with principals (issue 48: `tenant/principal`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
}

/// One entry of a session's append-only archive.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ArchiveEntry {
    /// The session became active (SPEC P3.10).
    SessionStarted(SessionInfo),
    /// The session stopped being active (SPEC P3.11).
    SessionEnded(SessionInfo),
    /// The records a session was created with (`/fork` copies its parent's), so `hookline
    /// replay` starts from them (issue 25).
    Seeded {
        /// The records, in order.
        records: Vec<Record>,
    },
    /// The session's approval mode changed (`/approvals`); `hookline replay` runs later turns
    /// under it (issue 25).
    ApprovalsSet {
        /// The new mode.
        mode: crate::session::ApprovalMode,
    },
    /// The bootstrap text the session's work and plan system texts end with changed (SPEC
    /// G5.4, at session start or resume): `hookline replay` composes prompts with it (issue 25).
    Bootstrap {
        /// The text; absent when no bootstrap file has content.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
    },
    /// A gateway event the session's conversation emitted and waited for (SPEC G5), as its
    /// handlers received it: `hookline replay` emits it again and compares what the handlers
    /// did (issue 34).
    #[serde(rename_all = "camelCase")]
    GatewayEvent {
        /// The event and its context, as emitted.
        event: crate::event::WireEvent,
        /// How many handler calls its delivery made (SPEC G1.3).
        calls: usize,
        /// `agent:bootstrap` only: the `bootstrapFiles` the handlers handed on, when they
        /// replaced the list (SPEC G5.4).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        handed_on: Option<Vec<crate::event::BootstrapFile>>,
    },
    /// A side question (answered with a side call; never a stored record, SPEC P2.3): `hookline
    /// replay` asks it again (issue 34). Its request, answer or failure follow it.
    SideQuestion {
        /// The question as asked.
        question: String,
    },
    /// A stored user message.
    #[serde(rename_all = "camelCase")]
    UserMessage {
        /// The text as stored (after `on_user_message`).
        text: String,
        /// The text the operator typed, when a hook replaced it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        original: Option<String>,
        /// Attached images.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageRef>,
    },
    /// Work or plan system text, as used (SPEC R2, R5.8).
    SystemText {
        /// Its mode.
        mode: PromptMode,
        /// The text.
        text: String,
    },
    /// A model response the host received (the candidate it kept, SPEC P3.7).
    #[serde(rename_all = "camelCase")]
    ModelResponse {
        /// Why the call was made.
        purpose: Purpose,
        /// Why it finished.
        finish_reason: FinishReason,
        /// The returned items.
        items: Vec<Item>,
        /// Token usage.
        usage: Usage,
        /// The model that answered (the session's, or the provider's default); absent in
        /// archives written before it was kept (issue 34 item 5).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// An outbound model request, as the provider was sent it (after `rebuild_model`,
    /// `transform_model` and the preparation for the provider): what `hookline replay` compares
    /// a replayed request with (issue 25). Kept small: the request's SHA-256, and how the hooks
    /// changed it as a JSON Patch from the request the host built from the stored records.
    #[serde(rename_all = "camelCase")]
    ModelRequest {
        /// Why the call was made.
        purpose: Purpose,
        /// Whether the request could carry images (the model took them, SPEC R5.6).
        accepts_images: bool,
        /// The SHA-256 of the request as sent (serde_json's bytes), in hex.
        sha256: String,
        /// From the request built from the stored records to the one sent; absent when the
        /// hooks and the preparation changed nothing.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        changes: Option<json_patch::Patch>,
    },
    /// A model call failed.
    ModelFailure {
        /// Why the call was made.
        purpose: Purpose,
        /// The provider's error.
        error: String,
    },
    /// A tool call as it was approved (after `on_tool_call`).
    #[serde(rename_all = "camelCase")]
    ToolCall {
        /// The call after hooks.
        call: ToolCall,
        /// The call the model made, when a hook rewrote it (SPEC P3.1).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rewritten_from: Option<ToolCall>,
    },
    /// The operator was asked about a call (stored before the question, issue 40 item 3): a
    /// node that takes the session over while the answer is awaited asks again, with the same
    /// call id and the deadline counted from `asked_ms`.
    #[serde(rename_all = "camelCase")]
    ApprovalAsked {
        /// The call as it waits (after `on_tool_call`).
        call: ToolCall,
        /// The classification the operator is shown (after `on_approval`, `rewrite_approval`).
        classification: Classification,
        /// When it was first asked, in milliseconds since the Unix epoch.
        asked_ms: u64,
    },
    /// An approval decision.
    Approval(ApprovalRecord),
    /// What a tool answered, when `on_tool_result` changed it before it was stored (the
    /// stored [`ArchiveEntry::ToolResult`] is the tool's answer otherwise). `hookline replay`
    /// answers the call with it (issue 25).
    #[serde(rename_all = "camelCase")]
    ToolOutput {
        /// The call it answers.
        call_id: String,
        /// The tool's text.
        text: String,
        /// Its images.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<ImageRef>,
        /// Whether the tool succeeded.
        success: bool,
    },
    /// A tool result, after `on_tool_result`.
    ToolResult(ToolResult),
    /// A compaction replaced the folded history with a summary.
    #[serde(rename_all = "camelCase")]
    Compaction {
        /// How many stored records were folded.
        folded: usize,
        /// The stored summary body.
        summary: String,
    },
    /// A turn finished.
    #[serde(rename_all = "camelCase")]
    TurnFinished {
        /// Why.
        stop_reason: StopReason,
    },
    /// A note the host recorded, with its English text.
    Note {
        /// The note's data.
        note: Note,
        /// Its English sentence.
        text: String,
    },
}

impl ArchiveEntry {
    /// The archive entry of a model response the host received.
    pub fn model_response(response: &crate::model::ModelResponse, model: Option<String>) -> Self {
        Self::ModelResponse {
            purpose: response.purpose,
            finish_reason: response.finish_reason,
            items: response.items.clone(),
            usage: response.usage,
            model,
        }
    }

    /// The archive entry of a note.
    pub fn note(note: Note) -> Self {
        let text = note.text();
        Self::Note { note, text }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_and_entries_round_trip_as_json() {
        let records = vec![
            Record::User {
                text: "hi".into(),
                images: vec![],
            },
            Record::ToolCall {
                call_id: "c1".into(),
                name: "read_file".into(),
                arguments: serde_json::json!({"path": "a"}),
            },
            Record::Summary {
                text: String::new(),
            },
            Record::CutOff {
                at: crate::cut_off::CutOff::ToolStarted {
                    call_id: "c1".into(),
                    name: "write_file".into(),
                },
            },
        ];
        let json = serde_json::to_string(&records).unwrap_or_default();
        let back: Vec<Record> = serde_json::from_str(&json).unwrap_or_default();
        assert_eq!(back, records);
        let entry = ArchiveEntry::note(Note::PluginImagesIgnored);
        let json = serde_json::to_string(&entry).unwrap_or_default();
        assert!(json.contains("Plugin images were ignored"));
        let back: Result<ArchiveEntry, _> = serde_json::from_str(&json);
        assert_eq!(back.ok(), Some(entry));
    }
}
