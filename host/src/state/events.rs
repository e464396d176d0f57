//! What the host reports while it runs, in order: the conversation, each hook's effect, notes,
//! tool runs and approvals. `hookline run` renders these; embedders may read them too.

use hookline_messages::event::EventKey;
use hookline_messages::hook::HookKind;
use hookline_messages::model::Purpose;
use hookline_messages::note::Note;
use hookline_messages::prompt::PromptMode;
use hookline_messages::record::ApprovalRecord;
use hookline_messages::session::{SessionId, SessionInfo};
use hookline_messages::tool::{ToolCall, ToolResult};
use hookline_messages::user::StopReason;
use std::sync::Arc;

use serde::Serialize;

use super::patch::{Detail, Patch};

/// One thing that happened, in the order it happened.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum HostEvent {
    /// `on_session_started` ran for this session (SPEC P3.10).
    SessionStarted(SessionInfo),
    /// `on_session_ended` ran for the session being left (SPEC P3.11).
    SessionEnded(SessionInfo),
    /// A user message was stored.
    #[serde(rename_all = "camelCase")]
    User {
        /// The session.
        session: SessionId,
        /// The text as stored.
        text: String,
        /// What the operator typed, when a hook replaced it.
        original: Option<String>,
        /// The turn's number in the session (1 for its first; the session's `turns` once it
        /// is stored), so a page that reads earlier turns from the store numbers them alike.
        turn: u64,
    },
    /// A hook changed the value it was given: what changed, not the whole value (issue 22).
    #[serde(rename_all = "camelCase")]
    HookChanged {
        /// The hook.
        hook: HookKind,
        /// The plugins whose replacement changed the value, in load order.
        changed_by: Vec<String>,
        /// The change, as an RFC 6902 JSON Patch from the value given to the value handed on.
        #[schemars(with = "super::patch::JsonPatch")]
        patch: Patch,
        /// The value the hook was given, as JSON: only with [`Detail::Full`].
        #[serde(skip_serializing_if = "Option::is_none")]
        before: Option<serde_json::Value>,
        /// The value it handed on, as JSON: only with [`Detail::Full`].
        #[serde(skip_serializing_if = "Option::is_none")]
        after: Option<serde_json::Value>,
    },
    /// The system text a call uses (after `on_prompt` and `rewrite_prompt`).
    SystemText {
        /// Its mode.
        mode: PromptMode,
        /// The text.
        text: String,
    },
    /// A model call was sent.
    #[serde(rename_all = "camelCase")]
    ModelCall {
        /// Why.
        purpose: Purpose,
        /// How many items the request carried, as sent.
        items: usize,
    },
    /// The model answered with text.
    Assistant {
        /// The text.
        text: String,
    },
    /// A model call failed.
    ModelFailed {
        /// Why the call was made.
        purpose: Purpose,
        /// The error.
        error: String,
    },
    /// A tool call, after `on_tool_call`.
    #[serde(rename_all = "camelCase")]
    ToolCall {
        /// The call as it goes to approval.
        call: ToolCall,
        /// The model's call, when a hook rewrote it.
        rewritten_from: Option<ToolCall>,
    },
    /// The approval policy's decision.
    Approval(ApprovalRecord),
    /// A tool ran.
    #[serde(rename_all = "camelCase")]
    ToolRun {
        /// The call id.
        call_id: String,
        /// The tool.
        tool: String,
        /// The arguments it ran with.
        arguments: serde_json::Value,
        /// Whether it succeeded.
        success: bool,
        /// Its output text, before `on_tool_result`.
        text: String,
    },
    /// A tool result after `on_tool_result`, as stored.
    ToolResult(ToolResult),
    /// A side question and its answer; stored nowhere.
    Side {
        /// The question.
        question: String,
        /// The answer.
        answer: String,
    },
    /// Compaction replaced the folded history with a summary.
    Compacted {
        /// How many stored records were folded.
        folded: usize,
        /// The stored summary.
        summary: String,
    },
    /// A turn finished.
    #[serde(rename_all = "camelCase")]
    TurnFinished {
        /// Why.
        stop_reason: StopReason,
    },
    /// A note the host recorded.
    Note {
        /// The note.
        note: Note,
        /// Its English text.
        text: String,
    },
    /// Something the host says about itself (a repaired store, a model switch).
    Info {
        /// The sentence.
        text: String,
    },
    /// The host emitted a gateway event (SPEC G5), and how its producer waited.
    #[serde(rename_all = "camelCase")]
    GatewayEvent {
        /// The key (`command:new`, ...).
        key: String,
        /// `awaited`, `queued`, `detached`, `dropped` (the queue was full) or `bounded` (the
        /// lifecycle's bounded wait, SPEC G2.1).
        wait: String,
        /// Handler calls made, for awaited events.
        #[serde(skip_serializing_if = "Option::is_none")]
        calls: Option<usize>,
    },
    /// The approval policy asks the operator about a call; a remote operator (a server's
    /// client) answers it, or the call is denied once `timeout_ms` pass.
    #[serde(rename_all = "camelCase")]
    ApprovalRequested {
        /// The call's id: the key the answer names.
        call_id: String,
        /// The tool.
        tool: String,
        /// The arguments it would run with.
        arguments: serde_json::Value,
        /// What the classifier and the approval hooks made of it.
        classification: hookline_messages::approval::Classification,
        /// How long the operator has.
        timeout_ms: u64,
    },
    /// A piece of the model's text as it streams in (only from streaming providers; the whole
    /// text follows as [`HostEvent::Assistant`]).
    ModelText {
        /// The new text.
        delta: String,
    },
    /// The workspace files the session starts with, after `agent:bootstrap` and the host's
    /// de-duplication, filter and budget (SPEC G5.4): `AGENTS.md (120 chars)`, `USER.md (missing)`.
    Bootstrap {
        /// Each file, in order.
        files: Vec<String>,
    },
}

impl HostEvent {
    /// A gateway event without a handler count.
    pub(crate) fn gateway(key: EventKey, wait: &str) -> Self {
        Self::GatewayEvent {
            key: key.to_string(),
            wait: wait.to_owned(),
            calls: None,
        }
    }
}

/// A live consumer of a conversation's events (a server streaming them to its clients). Called
/// on the conversation's task for each event as it is reported; it must not block.
pub type LiveSink = Arc<dyn Fn(&HostEvent) + Send + Sync>;

/// Where a conversation reports what happens: every event is kept, in order, until
/// [`EventLog::take`], and is also handed at once to a live sink when one is attached.
#[derive(Default)]
pub struct EventLog {
    buffer: Vec<HostEvent>,
    live: Option<LiveSink>,
    detail: Detail,
}

impl std::fmt::Debug for EventLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventLog")
            .field("buffer", &self.buffer)
            .field("live", &self.live.is_some())
            .field("detail", &self.detail)
            .finish()
    }
}

impl EventLog {
    /// Reports one event.
    pub fn push(&mut self, event: HostEvent) {
        if let Some(live) = &self.live {
            live(&event);
        }
        self.buffer.push(event);
    }

    /// Takes the events reported since the last call, in order.
    pub fn take(&mut self) -> Vec<HostEvent> {
        std::mem::take(&mut self.buffer)
    }

    /// Attaches a live sink; events reported from now on are also handed to it.
    pub fn attach(&mut self, live: LiveSink) {
        self.live = Some(live);
    }

    /// How much `hook-changed` events say (for the request being handled).
    pub fn detail(&self) -> Detail {
        self.detail
    }

    /// Sets how much `hook-changed` events say from now on.
    pub fn set_detail(&mut self, detail: Detail) {
        self.detail = detail;
    }

    /// The live sink, if one is attached (for reports from outside the turn, e.g. model text).
    pub fn live(&self) -> Option<&LiveSink> {
        self.live.as_ref()
    }
}
