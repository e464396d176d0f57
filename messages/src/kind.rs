//! Which hook is which: [`HookKind`] (every hook's identity, wire name and note stage) and
//! [`HookSet`] (the hooks a plugin implements).
//!
//! The floor of the hook vocabulary: notes name hooks by [`HookKind`], and [`crate::hook`] ties
//! each kind to its value type and rule, so both import this module and neither imports the
//! other for it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

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

/// A hook's schema is what its serde writes: one of the wire names, as a string.
impl schemars::JsonSchema for HookKind {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "HookKind".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = Self::ALL.iter().map(|kind| kind.wire_name()).collect();
        schemars::json_schema!({
            "description": "A hook, by its wire name (`on_tool_call`, `rewrite_model`, ...).",
            "type": "string",
            "enum": names
        })
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
