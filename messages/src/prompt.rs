//! System text composition: what `on_prompt` appends to and `rewrite_prompt` replaces
//! (SPEC P2.2, R2, R5.8).

use serde::{Deserialize, Serialize};

/// The mode a system text is composed for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PromptMode {
    /// An ordinary working turn.
    Work,
    /// A planning turn.
    Plan,
    /// An approval review call.
    Review,
    /// A compaction call.
    Compaction,
}

impl PromptMode {
    /// The mode's lowercase name, as used in notes.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Work => "work",
            Self::Plan => "plan",
            Self::Review => "review",
            Self::Compaction => "compaction",
        }
    }

    /// Whether text composed for this mode becomes the session's stored system message
    /// (SPEC R2: work and plan text is archived).
    pub fn is_stored(self) -> bool {
        matches!(self, Self::Work | Self::Plan)
    }
}

/// The value `on_prompt` hooks pass along: the host's composed text and the parts appended so far.
///
/// Plugins may only add parts (SPEC P2.2); the rule in [`crate::rules::prompt`] enforces it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Prompt {
    /// The mode this text is composed for.
    pub mode: PromptMode,
    /// The host's composed text for the mode. Plugins cannot change it.
    pub text: String,
    /// Parts appended by earlier hooks, in load order.
    #[serde(default)]
    pub appended: Vec<String>,
}

impl Prompt {
    /// A prompt with nothing appended yet.
    pub fn new(mode: PromptMode, text: impl Into<String>) -> Self {
        Self {
            mode,
            text: text.into(),
            appended: Vec::new(),
        }
    }

    /// Returns the prompt with `part` appended. This is what a plugin's `on_prompt` returns.
    #[must_use]
    pub fn append(mut self, part: impl Into<String>) -> Self {
        self.appended.push(part.into());
        self
    }

    /// The text and its appended parts, joined with one blank line each, in order.
    pub fn composed(&self) -> SystemText {
        SystemText {
            mode: self.mode,
            text: join_parts(&self.text, &self.appended),
        }
    }
}

/// A whole composed system text, the value `rewrite_prompt` raw hooks replace (SPEC R2).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SystemText {
    /// The mode it was composed for; a raw hook cannot change it.
    pub mode: PromptMode,
    /// The text. Any string is accepted from a raw hook, empty included.
    pub text: String,
}

/// Joins a base text and appended parts with one blank line between each non-empty piece.
pub(crate) fn join_parts(base: &str, parts: &[String]) -> String {
    let mut out =
        String::with_capacity(base.len() + parts.iter().map(|p| p.len() + 2).sum::<usize>());
    out.push_str(base);
    for part in parts {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(part);
    }
    out
}
