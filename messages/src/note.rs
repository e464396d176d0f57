//! Notes: what the host records when it skips a hook or ignores part of a replacement.
//!
//! Notes are data. Each renders, in exactly one place ([`fmt::Display`] below), to the English
//! sentence the spec fixes, e.g. `Plugin hook 'acme' tool-call was skipped: it returned a
//! different call id.` (SPEC P1.4, P1.5, R0.2, R0.3, R5.7, P3.2).

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::hook::HookKind;
use crate::prompt::PromptMode;

/// A note the host records. Equal notes are recorded once per session.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Note {
    /// A hook (ordinary or raw) was skipped; the value before it stands (SPEC P1.4, P1.5, R0.3).
    Skipped(Skip),
    /// A plugin registered at least one raw hook (SPEC R0.2). Recorded once at load.
    RawHookRegistered {
        /// The plugin's name.
        plugin: String,
    },
    /// Images returned by `on_tool_result` on a text-only turn were ignored (SPEC P3.2).
    PluginImagesIgnored,
    /// A work or plan call failed after raw hooks changed its request (SPEC R5.7).
    RawChangeFailure {
        /// The plugins whose raw hooks changed the request, in load order.
        plugins: Vec<String>,
    },
}

/// One skipped hook call: which plugin, which hook, and why.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Skip {
    /// The plugin's name.
    pub plugin: String,
    /// The hook; its stage and whether it is raw decide the sentence's first words.
    pub hook: HookKind,
    /// Why it was skipped.
    pub reason: SkipReason,
}

impl Note {
    /// A skip note.
    pub fn skipped(plugin: impl Into<String>, hook: HookKind, reason: SkipReason) -> Self {
        Self::Skipped(Skip {
            plugin: plugin.into(),
            hook,
            reason,
        })
    }

    /// The note's English text.
    pub fn text(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Skipped(Skip {
                plugin,
                hook,
                reason,
            }) => {
                let who = if hook.is_raw() {
                    "Raw hook"
                } else {
                    "Plugin hook"
                };
                write!(f, "{who} '{plugin}' {} was skipped: {reason}", hook.stage())
            }
            Self::RawHookRegistered { plugin } => {
                write!(f, "Plugin '{plugin}' registered a raw hook.")
            }
            Self::PluginImagesIgnored => {
                f.write_str("Plugin images were ignored because this turn returns text only.")
            }
            Self::RawChangeFailure { plugins } => {
                let label = if plugins.len() == 1 {
                    "Raw hook"
                } else {
                    "Raw hooks"
                };
                let names: Vec<String> = plugins.iter().map(|p| format!("'{p}'")).collect();
                write!(
                    f,
                    "{label} {} changed this model request. The failure may be related.",
                    names.join(", ")
                )
            }
        }
    }
}

/// Why a hook call was skipped. Renders as one English sentence starting with "it" (except a
/// plugin's own error message, which is used as given).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", content = "detail", rename_all = "kebab-case")]
pub enum SkipReason {
    /// The replacement broke the hook's rule.
    Refused(Refusal),
    /// The plugin returned an error; its message (trimmed) is the reason.
    Failed(String),
    /// The plugin panicked.
    Panicked,
    /// The plugin did not answer within its timeout.
    TimedOut {
        /// The timeout, in milliseconds.
        millis: u64,
    },
    /// The plugin's answer could not be decoded as the hook's value.
    Undecodable,
    /// The plugin could not be reached (its actor or process is gone).
    Unavailable,
}

impl SkipReason {
    /// A plugin error; an empty message becomes `it failed.`.
    pub fn failed(message: impl AsRef<str>) -> Self {
        Self::Failed(message.as_ref().trim().to_owned())
    }

    /// A timeout of `limit`.
    pub fn timed_out(limit: Duration) -> Self {
        Self::TimedOut {
            millis: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// A short stable label for metrics (`refused`, `failed`, `panicked`, ...).
    pub fn label(&self) -> &'static str {
        match self {
            Self::Refused(_) => "refused",
            Self::Failed(_) => "failed",
            Self::Panicked => "panicked",
            Self::TimedOut { .. } => "timed-out",
            Self::Undecodable => "undecodable",
            Self::Unavailable => "unavailable",
        }
    }
}

impl From<Refusal> for SkipReason {
    fn from(refusal: Refusal) -> Self {
        Self::Refused(refusal)
    }
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Refused(refusal) => fmt::Display::fmt(refusal, f),
            Self::Failed(message) if message.is_empty() => f.write_str("it failed."),
            Self::Failed(message) => f.write_str(message),
            Self::Panicked => f.write_str("it panicked."),
            Self::TimedOut { millis } if millis % 1000 == 0 => {
                write!(f, "it timed out after {} s.", millis / 1000)
            }
            Self::TimedOut { millis } => write!(f, "it timed out after {millis} ms."),
            Self::Undecodable => f.write_str("it returned a value that could not be decoded."),
            Self::Unavailable => f.write_str("it was not running."),
        }
    }
}

/// Why a rule refused a replacement: one variant per "cannot" of SPEC P2, P3.5, P3.9 and R1 to R4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "refusal", rename_all = "kebab-case")]
pub enum Refusal {
    // Appending hooks (P2.2, P2.10) and their raw rewrites (R2, R3).
    /// The prompt mode changed.
    ChangedPromptMode,
    /// The composed text of a mode was replaced, not appended to.
    ReplacedPromptText {
        /// The mode whose text was replaced.
        mode: PromptMode,
    },
    /// The compaction phase changed.
    ChangedCompactionPhase,
    /// The compaction text was replaced, not appended to.
    ReplacedCompactionText,
    /// Text appended by an earlier hook was removed or changed.
    RemovedAppendedText,
    // User message (P2.3).
    /// The replacement user message was blank.
    EmptyUserMessage,
    /// The side-question flag changed.
    ChangedSideQuestion,
    // Tool call and result (P2.7, P2.8).
    /// The tool call's id changed.
    ChangedCallId,
    /// The tool name was blank.
    EmptyToolName,
    /// A tool result's call id changed.
    ChangedResultCallId,
    /// A tool result's tool name changed.
    ChangedResultName,
    /// A tool result's success flag changed.
    ChangedResultSuccess,
    /// A denied call's result was marked as approved.
    MarkedApprovalPassed,
    /// A granted call's result was marked as denied.
    ChangedApproval,
    // Approval (P2.9).
    /// The risk went down.
    LoweredRisk,
    /// The authority went down.
    LoweredAuthority,
    /// A prompt requirement was cleared.
    ClearedPromptRequirement,
    /// The summary changed.
    ChangedSummary,
    // Model requests (P2.5, P3.5, P3.9, R1).
    /// The request's purpose or image flag changed.
    ChangedRequestPurpose,
    /// Items were added.
    AddedItem,
    /// Items were dropped.
    DroppedItem,
    /// Items were reordered.
    ReorderedItems,
    /// An item's id changed.
    ChangedItemId,
    /// An item's kind changed (other than between message roles).
    ChangedItemKind,
    /// A message's role changed.
    ChangedRole,
    /// The system message was edited.
    EditedSystemMessage,
    /// A tool call item changed.
    ChangedToolCall,
    /// Reasoning text became empty.
    EmptyReasoning,
    /// An image was added that the item (or the session) does not have.
    AddedImage,
    /// An image was put on a request that cannot carry images.
    ImageOnTextOnlyRequest,
    /// An item id was used twice.
    RepeatedItem,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            Self::ChangedPromptMode => "it changed the prompt mode.",
            Self::ReplacedPromptText { mode } => {
                return write!(f, "it replaced the {} text.", mode.as_str());
            }
            Self::ChangedCompactionPhase => "it changed the compaction phase.",
            Self::ReplacedCompactionText => "it replaced the compaction text.",
            Self::RemovedAppendedText => "it removed appended text.",
            Self::EmptyUserMessage => "it returned an empty message.",
            Self::ChangedSideQuestion => "it changed the side-question flag.",
            Self::ChangedCallId => "it returned a different call id.",
            Self::EmptyToolName => "it returned an empty tool name.",
            Self::ChangedResultCallId => "it changed a tool result's call id.",
            Self::ChangedResultName => "it changed a tool result's name.",
            Self::ChangedResultSuccess => "it changed a tool result's success.",
            Self::MarkedApprovalPassed => "it marked an approval as passed.",
            Self::ChangedApproval => "it changed the approval decision.",
            Self::LoweredRisk => "it tried to lower risk.",
            Self::LoweredAuthority => "it tried to lower authority.",
            Self::ClearedPromptRequirement => "it tried to clear the prompt requirement.",
            Self::ChangedSummary => "it changed the summary.",
            Self::ChangedRequestPurpose => "it changed the request's purpose.",
            Self::AddedItem => "it added an item.",
            Self::DroppedItem => "it dropped an item.",
            Self::ReorderedItems => "it reordered items.",
            Self::ChangedItemId => "it changed an item id.",
            Self::ChangedItemKind => "it changed an item's kind.",
            Self::ChangedRole => "it changed a message role.",
            Self::EditedSystemMessage => "it edited the system message.",
            Self::ChangedToolCall => "it changed a tool call.",
            Self::EmptyReasoning => "it returned empty reasoning text.",
            Self::AddedImage => "it added an image.",
            Self::ImageOnTextOnlyRequest => {
                "it added an image to a request that cannot carry images."
            }
            Self::RepeatedItem => "it repeated an item.",
        };
        f.write_str(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_notes_render_the_spec_sentences() {
        let note = Note::skipped("acme", HookKind::OnToolCall, Refusal::ChangedCallId.into());
        assert_eq!(
            note.to_string(),
            "Plugin hook 'acme' tool-call was skipped: it returned a different call id."
        );
        let raw = Note::skipped("acme", HookKind::RebuildModel, Refusal::RepeatedItem.into());
        assert_eq!(
            raw.to_string(),
            "Raw hook 'acme' model-items was skipped: it repeated an item."
        );
        let timeout = Note::skipped(
            "slow",
            HookKind::OnApproval,
            SkipReason::timed_out(Duration::from_secs(10)),
        );
        assert_eq!(
            timeout.to_string(),
            "Plugin hook 'slow' approval was skipped: it timed out after 10 s."
        );
        assert_eq!(
            SkipReason::timed_out(Duration::from_millis(250)).to_string(),
            "it timed out after 250 ms."
        );
    }

    #[test]
    fn plugin_errors_are_used_as_given_and_blank_ones_become_it_failed() {
        assert_eq!(
            SkipReason::failed("  disk on fire \n").to_string(),
            "disk on fire"
        );
        assert_eq!(SkipReason::failed("   ").to_string(), "it failed.");
    }

    #[test]
    fn host_notes_render_the_spec_sentences() {
        assert_eq!(
            Note::RawHookRegistered {
                plugin: "Acme".into()
            }
            .to_string(),
            "Plugin 'Acme' registered a raw hook."
        );
        assert_eq!(
            Note::RawChangeFailure {
                plugins: vec!["Acme".into()]
            }
            .to_string(),
            "Raw hook 'Acme' changed this model request. The failure may be related."
        );
        assert_eq!(
            Note::RawChangeFailure {
                plugins: vec!["A".into(), "B".into()]
            }
            .to_string(),
            "Raw hooks 'A', 'B' changed this model request. The failure may be related."
        );
        assert_eq!(
            Note::PluginImagesIgnored.to_string(),
            "Plugin images were ignored because this turn returns text only."
        );
    }
}
