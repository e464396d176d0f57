//! The [`Hook`] trait that ties each hook to its value type and its rule, and a marker type per
//! hook. Hook identities and sets ([`HookKind`], [`HookSet`]) live in [`crate::kind`].
//!
//! Every hook of SPEC P2 and R1 to R4 has a marker type here (for example [`OnToolCall`]). The
//! actor layer is generic over [`Hook`], so the order, skip and note logic is written once.

use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::approval::Classification;
use crate::compaction::{Compaction, CompactionText};
pub use crate::kind::{HookKind, HookSet, UnknownHook};
use crate::model::{HeldImages, ModelRequest, ModelResponse};
use crate::note::Refusal;
use crate::prompt::{Prompt, SystemText};
use crate::rules;
pub use crate::rules::tool::ToolResultContext;
pub use crate::rules::Applied;
use crate::session::{SessionId, SessionInfo};
use crate::tool::{ToolCall, ToolResult};
use crate::user::{TurnInfo, UserMessage};

/// What every hook invocation is told besides its value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookContext {
    /// The session the call belongs to.
    pub session_id: SessionId,
}

/// What a hook returns: keep the value it was given, or replace it (the rule then decides).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply<T> {
    /// Hand the value on unchanged.
    Keep,
    /// Hand this value on instead, if the hook's rule admits it.
    Replace(T),
}

/// A hook: its identity, the value it passes along, and the rule that admits a replacement.
///
/// `admit` is the one place a hook's "can / cannot" lives (SPEC P1.5, R0.4). It returns the value
/// to hand on (possibly normalised) or the reason the replacement is refused.
pub trait Hook: Send + 'static {
    /// The value the hook sees and may replace.
    type Value: Clone + fmt::Debug + PartialEq + Send + Serialize + DeserializeOwned + 'static;
    /// Facts the rule needs besides the value (the session's images, the turn's image support).
    type Context: Clone + fmt::Debug + Send + 'static;
    /// Which hook this is.
    const KIND: HookKind;
    /// Read-only hooks ignore whatever a plugin returns (SPEC P2.1, P2.4, P2.6).
    const READ_ONLY: bool = false;

    /// Decides a proposed replacement against the previous value.
    ///
    /// # Errors
    /// The refusal, when the replacement breaks the hook's "cannot" column.
    fn admit(
        cx: &Self::Context,
        before: &Self::Value,
        proposed: Self::Value,
    ) -> Result<Applied<Self::Value>, Refusal>;

    /// The rule for an in-place edit that only appended to the value's text
    /// ([`crate::edit::AppendText`]), given the text's length before it: `Some` with the decision
    /// when the hook has a rule for appends, `None` (the default) when an append is checked as a
    /// replacement (the runtime then rebuilds the value before it by truncation).
    fn admit_append(
        _cx: &Self::Context,
        _after: &Self::Value,
        _len_before: usize,
    ) -> Option<Result<(), Refusal>> {
        None
    }
}

macro_rules! read_only_hook {
    ($(#[$doc:meta])* $name:ident, $value:ty) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;

        impl Hook for $name {
            type Value = $value;
            type Context = ();
            const KIND: HookKind = HookKind::$name;
            const READ_ONLY: bool = true;

            fn admit(_: &(), before: &$value, _: $value) -> Result<Applied<$value>, Refusal> {
                Ok(Applied::plain(before.clone()))
            }
        }
    };
}

macro_rules! ruled_hook {
    ($(#[$doc:meta])* $name:ident, $value:ty, $rule:path) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        pub struct $name;

        impl Hook for $name {
            type Value = $value;
            type Context = ();
            const KIND: HookKind = HookKind::$name;

            fn admit(_: &(), before: &$value, proposed: $value) -> Result<Applied<$value>, Refusal> {
                $rule(before, proposed).map(Applied::plain)
            }
        }
    };
}

read_only_hook!(
    /// `OnSessionStartedAsync`: read-only (SPEC P2.1, P3.10).
    OnSessionStarted, SessionInfo
);
read_only_hook!(
    /// `OnSessionEndedAsync`: read-only; carries the session being left (SPEC P2.1, P3.11).
    OnSessionEnded, SessionInfo
);
read_only_hook!(
    /// `OnTurnStartedAsync`: read-only (SPEC P2.4).
    OnTurnStarted, TurnInfo
);
read_only_hook!(
    /// `OnTurnFinishedAsync`: read-only, with the stop reason (SPEC P2.4).
    OnTurnFinished, TurnInfo
);
read_only_hook!(
    /// `OnModelResponseAsync`: read-only; the host keeps the candidate it received (SPEC P2.6, P3.7).
    OnModelResponse, ModelResponse
);
ruled_hook!(
    /// `OnPrompt`: append to the instruction block (SPEC P2.2).
    OnPrompt, Prompt, rules::prompt::on_prompt
);
/// `OnUserMessageAsync`: replace the user message before it is stored (SPEC P2.3), or append to
/// its text in place.
#[derive(Debug, Clone, Copy)]
pub struct OnUserMessage;

impl Hook for OnUserMessage {
    type Value = UserMessage;
    type Context = ();
    const KIND: HookKind = HookKind::OnUserMessage;

    fn admit(
        _: &(),
        before: &UserMessage,
        proposed: UserMessage,
    ) -> Result<Applied<UserMessage>, Refusal> {
        rules::user_message::on_user_message(before, proposed).map(Applied::plain)
    }

    #[inline]
    fn admit_append(_: &(), after: &UserMessage, _: usize) -> Option<Result<(), Refusal>> {
        Some(rules::user_message::on_user_message_append(after))
    }
}
ruled_hook!(
    /// `TransformModelAsync`: change texts of one outbound call (SPEC P2.5, P3.4 to P3.9).
    TransformModel, ModelRequest, rules::transform::transform_model
);
ruled_hook!(
    /// `OnToolCallAsync`: replace a tool call's name or arguments (SPEC P2.7).
    OnToolCall, ToolCall, rules::tool::on_tool_call
);
ruled_hook!(
    /// `OnApproval`: raise the risk or require another prompt (SPEC P2.9).
    OnApproval, Classification, rules::approval::on_approval
);
ruled_hook!(
    /// `OnCompaction`: append facts to the summary prompt or body (SPEC P2.10).
    OnCompaction, Compaction, rules::compaction::on_compaction
);

/// `OnToolResultAsync`: replace a result's text, and its images on image turns (SPEC P2.8, P3.2).
#[derive(Debug, Clone, Copy)]
pub struct OnToolResult;

impl Hook for OnToolResult {
    type Value = ToolResult;
    type Context = ToolResultContext;
    const KIND: HookKind = HookKind::OnToolResult;

    fn admit(
        cx: &ToolResultContext,
        before: &ToolResult,
        proposed: ToolResult,
    ) -> Result<Applied<ToolResult>, Refusal> {
        rules::tool::on_tool_result(cx, before, proposed)
    }
}

/// `RebuildModelAsync` (raw): rebuild one outbound request (SPEC R1, R5.1 to R5.6).
#[derive(Debug, Clone, Copy)]
pub struct RebuildModel;

impl Hook for RebuildModel {
    type Value = ModelRequest;
    type Context = HeldImages;
    const KIND: HookKind = HookKind::RebuildModel;

    fn admit(
        held: &HeldImages,
        before: &ModelRequest,
        proposed: ModelRequest,
    ) -> Result<Applied<ModelRequest>, Refusal> {
        rules::rebuild::rebuild_model(held, before, proposed).map(Applied::plain)
    }
}
ruled_hook!(
    /// `RewritePrompt` (raw): replace the composed system text (SPEC R2, R5.8).
    RewritePrompt, SystemText, rules::raw::rewrite_prompt
);
ruled_hook!(
    /// `RewriteCompaction` (raw): replace the compaction prompt or summary body (SPEC R3, R5.9).
    RewriteCompaction, CompactionText, rules::raw::rewrite_compaction
);
ruled_hook!(
    /// `RewriteApproval` (raw): replace the classification (SPEC R4, R5.10).
    RewriteApproval, Classification, rules::raw::rewrite_approval
);
