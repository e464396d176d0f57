//! Hook identities, hook sets, and the [`Hook`] trait that ties each hook to its value type and
//! its rule.
//!
//! Every hook of SPEC P2 and R1 to R4 has a marker type here (for example [`OnToolCall`]). The
//! actor layer is generic over [`Hook`], so the order, skip and note logic is written once.

use std::fmt;
use std::str::FromStr;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::approval::Classification;
use crate::compaction::{Compaction, CompactionText};
use crate::model::{HeldImages, ModelRequest, ModelResponse};
use crate::note::{Note, Refusal};
use crate::prompt::{Prompt, SystemText};
use crate::rules;
use crate::session::{SessionId, SessionInfo};
use crate::tool::{ToolCall, ToolResult};
use crate::user::{TurnInfo, UserMessage};

macro_rules! hook_kinds {
    ($( $variant:ident = $wire:literal, $stage:literal, $raw:literal; )*) => {
        /// Every hook the host calls: the twelve ordinary hooks (SPEC P2) and the four raw hooks
        /// (SPEC R1 to R4).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum HookKind {
            $(
                #[doc = concat!("`", $wire, "`")]
                $variant,
            )*
        }

        impl HookKind {
            /// Every hook, in declaration order.
            pub const ALL: &'static [HookKind] = &[$(HookKind::$variant),*];

            /// The hook's wire name (`on_tool_call`, `rebuild_model`, ...).
            pub fn wire_name(self) -> &'static str {
                match self { $(HookKind::$variant => $wire,)* }
            }

            /// The stage named in notes (`tool-call`, `model-items`, ...).
            pub fn stage(self) -> &'static str {
                match self { $(HookKind::$variant => $stage,)* }
            }

            /// Whether this is a raw hook (SPEC R0.1).
            pub fn is_raw(self) -> bool {
                match self { $(HookKind::$variant => $raw,)* }
            }
        }

        impl FromStr for HookKind {
            type Err = UnknownHook;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($wire => Ok(HookKind::$variant),)*
                    other => Err(UnknownHook(other.to_owned())),
                }
            }
        }
    };
}

hook_kinds! {
    OnSessionStarted = "on_session_started", "session-start", false;
    OnSessionEnded = "on_session_ended", "session-end", false;
    OnPrompt = "on_prompt", "prompt", false;
    OnUserMessage = "on_user_message", "user-message", false;
    OnTurnStarted = "on_turn_started", "turn-start", false;
    OnTurnFinished = "on_turn_finished", "turn-end", false;
    TransformModel = "transform_model", "model-request", false;
    OnModelResponse = "on_model_response", "model-response", false;
    OnToolCall = "on_tool_call", "tool-call", false;
    OnToolResult = "on_tool_result", "tool-result", false;
    OnApproval = "on_approval", "approval", false;
    OnCompaction = "on_compaction", "compaction", false;
    RebuildModel = "rebuild_model", "model-items", true;
    RewritePrompt = "rewrite_prompt", "prompt", true;
    RewriteCompaction = "rewrite_compaction", "compaction", true;
    RewriteApproval = "rewrite_approval", "approval", true;
}

impl HookKind {
    fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

impl fmt::Display for HookKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.wire_name())
    }
}

impl Serialize for HookKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.wire_name())
    }
}

impl<'de> Deserialize<'de> for HookKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// A hook name that is not one of [`HookKind::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown hook '{0}'")]
pub struct UnknownHook(pub String);

/// A set of hooks: what a plugin implements. The coordinator never sends a plugin a hook that is
/// not in its set.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct HookSet(u16);

impl HookSet {
    /// The empty set.
    pub const fn empty() -> Self {
        Self(0)
    }

    /// A set of the given hooks.
    pub fn of(kinds: &[HookKind]) -> Self {
        kinds.iter().copied().collect()
    }

    /// Whether `kind` is in the set.
    pub fn contains(self, kind: HookKind) -> bool {
        self.0 & kind.bit() != 0
    }

    /// Adds `kind`.
    pub fn insert(&mut self, kind: HookKind) {
        self.0 |= kind.bit();
    }

    /// The union of two sets.
    #[must_use]
    pub fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The hooks in the set, in [`HookKind::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = HookKind> {
        HookKind::ALL
            .iter()
            .copied()
            .filter(move |k| self.contains(*k))
    }

    /// The raw hooks of the set only.
    #[must_use]
    pub fn raw_only(self) -> Self {
        self.iter().filter(|k| k.is_raw()).collect()
    }

    /// The ordinary hooks of the set only.
    #[must_use]
    pub fn ordinary_only(self) -> Self {
        self.iter().filter(|k| !k.is_raw()).collect()
    }
}

impl FromIterator<HookKind> for HookSet {
    fn from_iter<I: IntoIterator<Item = HookKind>>(iter: I) -> Self {
        let mut set = Self::empty();
        for kind in iter {
            set.insert(kind);
        }
        set
    }
}

impl fmt::Debug for HookSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl Serialize for HookSet {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for HookSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Vec::<HookKind>::deserialize(d)?.into_iter().collect())
    }
}

/// What every hook invocation is told besides its value.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HookContext {
    /// The session the call belongs to.
    pub session_id: SessionId,
}

/// A replacement that a rule accepted, possibly with a host note about what was left out.
#[derive(Clone, Debug, PartialEq)]
pub struct Applied<T> {
    /// The value the next hook sees.
    pub value: T,
    /// A host note about part of the replacement that was ignored (SPEC P3.2).
    pub notice: Option<Note>,
}

impl<T> Applied<T> {
    /// An accepted value with no note.
    pub fn plain(value: T) -> Self {
        Self {
            value,
            notice: None,
        }
    }
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
}

/// The facts the `on_tool_result` rule needs (SPEC P2.8, P3.2).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolResultContext {
    /// Whether this turn returns images; false on text-only turns.
    pub images_allowed: bool,
    /// The images the session holds; a result may only name these.
    pub held: HeldImages,
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
ruled_hook!(
    /// `OnUserMessageAsync`: replace the user message before it is stored (SPEC P2.3).
    OnUserMessage, UserMessage, rules::user_message::on_user_message
);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_round_trip_and_stages_match_the_spec() {
        for kind in HookKind::ALL {
            assert_eq!(kind.wire_name().parse::<HookKind>(), Ok(*kind));
        }
        assert_eq!(HookKind::RebuildModel.stage(), "model-items");
        assert_eq!(HookKind::TransformModel.stage(), "model-request");
        assert_eq!(HookKind::OnTurnFinished.stage(), "turn-end");
        assert!("OnToolCall".parse::<HookKind>().is_err());
    }

    #[test]
    fn hook_set_serializes_as_wire_names() {
        let set = HookSet::of(&[HookKind::OnToolCall, HookKind::RebuildModel]);
        let json = serde_json::to_string(&set).unwrap_or_default();
        assert_eq!(json, r#"["on_tool_call","rebuild_model"]"#);
        let back: HookSet = serde_json::from_str(&json).unwrap_or_default();
        assert_eq!(back, set);
        assert_eq!(set.raw_only(), HookSet::of(&[HookKind::RebuildModel]));
    }
}
