//! The user message and turn facts (SPEC P2.3, P2.4).

use serde::{Deserialize, Serialize};

use crate::prompt::PromptMode;

/// A user message before it is stored; `on_user_message` may replace its text (SPEC P2.3).
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessage {
    /// The message text.
    pub text: String,
    /// A side question is answered without being stored; `on_user_message` never runs for it.
    #[serde(default)]
    pub side_question: bool,
}

impl UserMessage {
    /// An ordinary (stored) user message.
    pub fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            side_question: false,
        }
    }
}

// By hand for `clone_from`: an in-place hook's runtime copies the value before it into a buffer
// it reuses, and the derived `clone_from` would allocate a new text each time.
impl Clone for UserMessage {
    fn clone(&self) -> Self {
        Self {
            text: self.text.clone(),
            side_question: self.side_question,
        }
    }

    fn clone_from(&mut self, source: &Self) {
        self.text.clone_from(&source.text);
        self.side_question = source.side_question;
    }
}

/// Why a turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// The model finished without asking for more tools.
    Completed,
    /// The operator or a `/stop` cancelled the turn.
    Cancelled,
    /// The model call failed.
    Failed,
    /// The host's limit on model calls per turn was reached.
    LimitReached,
    /// A crash or a lost lease cut the turn off; it was closed when the session was opened
    /// again (issue 22, [`crate::cut_off`]).
    Interrupted,
}

/// What `on_turn_started` and `on_turn_finished` may read (SPEC P2.4).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnInfo {
    /// The user text as stored (after `on_user_message`).
    pub user_text: String,
    /// The turn's mode (work or plan).
    pub mode: PromptMode,
    /// Set only at turn end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
}
