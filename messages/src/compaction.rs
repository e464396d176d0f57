//! Compaction text (SPEC P2.10, R3, R5.9).

use serde::{Deserialize, Serialize};

use crate::prompt::join_parts;

/// Which compaction text a hook sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompactionPhase {
    /// The user prompt sent to the compaction call.
    Prompt,
    /// The summary body that replaces the folded history.
    Summary,
}

/// The value `on_compaction` hooks pass along: the host's text and the facts appended so far.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Compaction {
    /// Prompt or summary.
    pub phase: CompactionPhase,
    /// The host's text. Plugins cannot change it.
    pub text: String,
    /// Facts appended by earlier hooks, in load order.
    #[serde(default)]
    pub appended: Vec<String>,
}

impl Compaction {
    /// A compaction text with nothing appended yet.
    pub fn new(phase: CompactionPhase, text: impl Into<String>) -> Self {
        Self {
            phase,
            text: text.into(),
            appended: Vec::new(),
        }
    }

    /// Returns the value with `fact` appended. This is what a plugin's `on_compaction` returns.
    #[must_use]
    pub fn append(mut self, fact: impl Into<String>) -> Self {
        self.appended.push(fact.into());
        self
    }

    /// The text and its appended facts joined with one blank line each.
    pub fn composed(&self) -> CompactionText {
        CompactionText {
            phase: self.phase,
            text: join_parts(&self.text, &self.appended),
        }
    }
}

/// A whole compaction text, the value `rewrite_compaction` raw hooks replace (SPEC R3).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CompactionText {
    /// Prompt or summary; a raw hook cannot change it.
    pub phase: CompactionPhase,
    /// The text. Any string is accepted from a raw hook, empty included (SPEC R5.9).
    pub text: String,
}
