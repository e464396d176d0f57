//! Notes: what the host records when it skips a hook or ignores part of a replacement.
//!
//! Notes are data. Each renders, in exactly one place ([`fmt::Display`] below), to the English
//! sentence the spec fixes, e.g. `Plugin hook 'acme' tool-call was skipped: it returned a
//! different call id.` (SPEC P1.4, P1.5, R0.2, R0.3, R5.7, P3.2).

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::cut_off::{CutOff, CutOffCall};
use crate::event::EventKey;
use crate::kind::HookKind;
use crate::prompt::PromptMode;

/// A note the host records. Equal notes are recorded once per session.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// A gateway event handler errored, panicked or timed out; the next handler ran (SPEC G1).
    EventHandlerSkipped {
        /// The plugin's name.
        plugin: String,
        /// The event being delivered.
        event: EventKey,
        /// Why it was skipped.
        reason: SkipReason,
    },
    /// A plugin subscribes to a key the gateway never emits; the subscription is kept (SPEC G4.1).
    UnknownSubscription {
        /// The plugin's name.
        plugin: String,
        /// The subscription as written.
        key: String,
    },
    /// The caller stopped waiting for an event's handlers; they keep running (SPEC G2.1, G2.2).
    EventWaitTimedOut {
        /// The event (`gateway:shutdown`, `gateway:pre-restart`).
        event: EventKey,
        /// The wait's bound, in milliseconds.
        millis: u64,
    },
    /// Events were dropped because the event queue was full (SPEC G3.1: events cannot block).
    EventsDropped {
        /// How many since the last such note.
        count: u64,
    },
    /// A fail-closed guard hook (`on_tool_call`, `on_approval`) failed, so the tool call was
    /// denied instead of running (operator opt-in; the default is the skip of SPEC P1.4).
    DeniedFailClosed {
        /// The tool call's id.
        call_id: String,
        /// The plugin whose hook failed.
        plugin: String,
        /// The hook that failed.
        hook: HookKind,
    },
    /// Session-end hooks at shutdown did not all finish within their total budget.
    SessionEndTimedOut {
        /// How many sessions had not finished.
        sessions: usize,
        /// The budget, in milliseconds.
        millis: u64,
    },
    /// A plugin directory was skipped at load; the other plugins still load (issue 6).
    PluginDirectorySkipped {
        /// The plugin's directory.
        dir: String,
        /// Why, as a phrase starting with "it" or "its", without a final full stop.
        problem: String,
    },
    /// The pinned load order (`--order`) names a plugin no directory holds: the order goes on
    /// without it (issue 49: a successor refuses to start with it).
    PinnedPluginMissing {
        /// The name as the order gives it.
        name: String,
    },
    /// A tool a plugin declared was not registered: another tool already has its name (built-in
    /// tools are never replaced, SPEC X).
    PluginToolNotRegistered {
        /// The plugin's name.
        plugin: String,
        /// The tool's name.
        tool: String,
    },
    /// Nobody answered an operator approval within its time, so the call was denied (a server's
    /// remote operator; `hookline serve`).
    ApprovalTimedOut {
        /// The call's id.
        call_id: String,
        /// The tool.
        tool: String,
        /// How long the operator had, in milliseconds.
        millis: u64,
    },
    /// An approval was waiting when its session ended (closed, replaced by `/clear`, `/new`,
    /// `/resume` and the like, or drained): nobody would answer it, so the call was denied at
    /// once and the turn stopped (issue 34 item 2).
    ApprovalSessionEnded {
        /// The call's id.
        call_id: String,
        /// The tool.
        tool: String,
        /// What ended the session.
        by: SessionEnding,
    },
    /// A turn still running when the gateway drained was stopped like `/stop` once its budget
    /// ran out.
    TurnStoppedByDrain {
        /// The drain budget, in milliseconds.
        millis: u64,
    },
    /// A tool call that needed asking was denied because no operator is configured (the host's
    /// default operator refuses everything; `HostBuilder::operator` sets one).
    NoOperator {
        /// The call's id.
        call_id: String,
        /// The tool.
        tool: String,
    },
    /// An external plugin broke the protocol in a way that belongs to no call in flight (a second
    /// reply to a call already answered); no call was skipped for it (issue 15).
    PluginFault {
        /// The plugin's name.
        plugin: String,
        /// What it did.
        reason: SkipReason,
    },
    /// An external tool in a tools directory was left out: a bad manifest, or a taken name.
    ExternalToolSkipped {
        /// The whole English sentence, naming the tool's directory and the problem.
        problem: String,
    },
    /// A crash or a lost lease cut a turn off; it was closed when the session was opened again
    /// (issue 22, [`crate::cut_off`]).
    TurnCutOff {
        /// Where it was cut off.
        at: CutOff,
    },
}

/// One skipped hook call: which plugin, which hook, and why.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
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
            Self::EventHandlerSkipped {
                plugin,
                event,
                reason,
            } => write!(
                f,
                "Event handler '{plugin}' for '{event}' was skipped: {reason}"
            ),
            Self::UnknownSubscription { plugin, key } => write!(
                f,
                "Plugin '{plugin}' subscribes to '{key}', which the gateway never emits."
            ),
            Self::EventWaitTimedOut { event, millis } => write!(
                f,
                "Stopped waiting for '{event}' handlers after {}; they keep running.",
                DurationText(*millis)
            ),
            Self::EventsDropped { count: 1 } => {
                f.write_str("Dropped 1 event because the event queue was full.")
            }
            Self::EventsDropped { count } => {
                write!(
                    f,
                    "Dropped {count} events because the event queue was full."
                )
            }
            Self::DeniedFailClosed {
                call_id,
                plugin,
                hook,
            } => write!(
                f,
                "Tool call '{call_id}' was denied because the fail-closed plugin hook '{plugin}' {} failed.",
                hook.stage()
            ),
            Self::SessionEndTimedOut { sessions, millis } => write!(
                f,
                "Session-end hooks of {sessions} session(s) did not finish within {}.",
                DurationText(*millis)
            ),
            Self::PluginDirectorySkipped { dir, problem } => {
                write!(f, "Plugin directory '{dir}' was skipped: {problem}.")
            }
            Self::PinnedPluginMissing { name } => write!(
                f,
                "The load order names plugin '{name}', but no plugin directory has that name; it was left out of the order."
            ),
            Self::PluginToolNotRegistered { plugin, tool } => write!(
                f,
                "Plugin '{plugin}' tool '{tool}' was not registered: another tool has that name."
            ),
            Self::ApprovalTimedOut {
                call_id,
                tool,
                millis,
            } => write!(
                f,
                "Tool call '{call_id}' ({tool}) was denied: nobody answered its approval within {}.",
                DurationText(*millis)
            ),
            Self::ApprovalSessionEnded { call_id, tool, by } => write!(
                f,
                "Tool call '{call_id}' ({tool}) was denied: {by} before its approval was answered."
            ),
            Self::TurnStoppedByDrain { millis } => write!(
                f,
                "The turn was stopped because the gateway was draining and it did not finish within {}.",
                DurationText(*millis)
            ),
            Self::NoOperator { call_id, tool } => write!(
                f,
                "Tool call '{call_id}' ({tool}) was denied: no operator is configured to ask (HostBuilder::operator)."
            ),
            Self::PluginFault { plugin, reason } => {
                write!(f, "Plugin '{plugin}' broke the protocol: {reason}")
            }
            Self::ExternalToolSkipped { problem } => f.write_str(problem),
            Self::TurnCutOff { at } => write!(f, "{at}"),
        }
    }
}

/// The sentence a cut-off marker and its note carry (issue 22).
impl fmt::Display for CutOff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ModelCall => f.write_str(
                "The turn was cut off while the model was answering; its answer was not stored.",
            ),
            Self::BeforeTool { call_id, name } => write!(
                f,
                "The turn was cut off before tool call '{call_id}' ({name}) ran; it did not run."
            ),
            Self::ToolStarted { call_id, name } => write!(
                f,
                "The turn was cut off after tool call '{call_id}' ({name}) had started; its \
                 result was not stored."
            ),
            Self::AfterAnswer => {
                f.write_str("The turn was cut off after the model answered; it did not finish.")
            }
        }
    }
}

/// The text of a made-up result for a call a cut-off turn left without one (issue 22).
impl fmt::Display for CutOffCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Started => "The turn was cut off while this call ran; its result was not stored.",
            Self::NotRun => "The turn was cut off before this call ran; it did not run.",
        })
    }
}

/// Why a hook call was skipped. Renders as one English sentence starting with "it" (except a
/// plugin's own error message, which is used as given).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
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
    /// An external plugin wrote a line that is not the protocol while the call was in flight.
    NotProtocol,
    /// An external plugin wrote a line longer than the cap while the call was in flight.
    LineTooLong {
        /// The cap, in bytes.
        limit: u64,
    },
    /// An external plugin replied with an id the host never gave it.
    UnknownReplyId,
    /// An external plugin replied twice with one id.
    RepeatedReplyId,
    /// An external plugin's process ended before it replied.
    Exited,
    /// A WebAssembly plugin trapped (an `unreachable`, a bad memory access, a stack overflow, ...);
    /// the text is the trap's own description.
    Trapped(String),
    /// A WebAssembly plugin ran out of memory: it needed more than its cap.
    OutOfMemory {
        /// The cap, in MiB.
        limit_mb: u64,
    },
    /// A plugin was disabled after crashing (an external plugin) or trapping (a WebAssembly
    /// plugin) too often.
    Disabled {
        /// How many crashes disabled it.
        crashes: u32,
        /// Within how many seconds.
        window_secs: u64,
    },
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
            Self::NotProtocol => "not-protocol",
            Self::LineTooLong { .. } => "line-too-long",
            Self::UnknownReplyId => "unknown-reply-id",
            Self::RepeatedReplyId => "repeated-reply-id",
            Self::Exited => "exited",
            Self::Trapped(_) => "trapped",
            Self::OutOfMemory { .. } => "out-of-memory",
            Self::Disabled { .. } => "disabled",
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
            Self::TimedOut { millis } => write!(f, "it timed out after {}.", DurationText(*millis)),
            Self::Undecodable => f.write_str("it returned a value that could not be decoded."),
            Self::Unavailable => f.write_str("it was not running."),
            Self::NotProtocol => f.write_str("it wrote output that is not the protocol."),
            Self::LineTooLong { limit } => {
                write!(f, "it wrote a line longer than {limit} bytes.")
            }
            Self::UnknownReplyId => f.write_str("it replied with an id it was never given."),
            Self::RepeatedReplyId => f.write_str("it replied twice with the same id."),
            Self::Exited => f.write_str("it exited before it replied."),
            Self::Trapped(trap) => write!(f, "it trapped: {}.", trap.trim_end_matches('.')),
            Self::OutOfMemory { limit_mb } => {
                write!(f, "it ran out of memory (its cap is {limit_mb} MiB).")
            }
            Self::Disabled {
                crashes,
                window_secs,
            } if window_secs % 60 == 0 => write!(
                f,
                "it was disabled after {crashes} crashes in {} minutes.",
                window_secs / 60
            ),
            Self::Disabled {
                crashes,
                window_secs,
            } => write!(
                f,
                "it was disabled after {crashes} crashes in {window_secs} s."
            ),
        }
    }
}

/// What ended a session while one of its approvals waited ([`Note::ApprovalSessionEnded`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SessionEnding {
    /// The session was closed (`DELETE /v1/sessions/{id}`, `Gateway::close`).
    Close,
    /// A session command replaced or reloaded it (`/new`, `/reset`, `/clear`, `/resume`,
    /// `/fork`, `/cd`, `/space`; SPEC P3.11).
    Replaced,
    /// The gateway drained (shutdown or pre-restart).
    Drain,
}

impl fmt::Display for SessionEnding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Close => "the session was closed",
            Self::Replaced => "the session was replaced",
            Self::Drain => "the gateway shut down",
        })
    }
}

/// A duration in milliseconds, rendered by the one rule for time in every English text the host
/// writes: whole seconds as seconds (`5 s`), anything else in milliseconds (`250 ms`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DurationText(pub u64);

impl DurationText {
    /// The text of `duration` (whole milliseconds).
    pub fn of(duration: Duration) -> Self {
        Self(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX))
    }
}

impl fmt::Display for DurationText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            millis if millis > 0 && millis % 1000 == 0 => write!(f, "{} s", millis / 1000),
            millis => write!(f, "{millis} ms"),
        }
    }
}

/// Why a rule refused a replacement: one variant per "cannot" of SPEC P2, P3.5, P3.9 and R1 to R4.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
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
    fn protocol_faults_render_as_sentences_about_the_plugin() {
        let reasons = [
            SkipReason::NotProtocol,
            SkipReason::LineTooLong { limit: 1_048_576 },
            SkipReason::UnknownReplyId,
            SkipReason::RepeatedReplyId,
            SkipReason::Exited,
            SkipReason::Disabled {
                crashes: 3,
                window_secs: 300,
            },
        ];
        for reason in reasons {
            let text = reason.to_string();
            assert!(text.starts_with("it ") && text.ends_with('.'), "{text}");
        }
        assert_eq!(
            SkipReason::Disabled {
                crashes: 3,
                window_secs: 300
            }
            .to_string(),
            "it was disabled after 3 crashes in 5 minutes."
        );
        assert_eq!(
            SkipReason::LineTooLong { limit: 1_048_576 }.to_string(),
            "it wrote a line longer than 1048576 bytes."
        );
    }

    #[test]
    fn guest_faults_render_as_sentences_about_the_plugin() {
        assert_eq!(
            SkipReason::Trapped("wasm `unreachable` instruction executed".into()).to_string(),
            "it trapped: wasm `unreachable` instruction executed."
        );
        assert_eq!(
            SkipReason::OutOfMemory { limit_mb: 16 }.to_string(),
            "it ran out of memory (its cap is 16 MiB)."
        );
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

    #[test]
    fn a_fail_closed_denial_names_the_call_the_plugin_and_the_hook() {
        let note = Note::DeniedFailClosed {
            call_id: "c1".into(),
            plugin: "guard".into(),
            hook: HookKind::OnApproval,
        };
        assert_eq!(
            note.to_string(),
            "Tool call 'c1' was denied because the fail-closed plugin hook 'guard' approval failed."
        );
    }

    #[test]
    fn gateway_notes_render_their_sentences() {
        let unknown = Note::UnknownSubscription {
            plugin: "acme".into(),
            key: "command:nwe".into(),
        };
        assert_eq!(
            unknown.to_string(),
            "Plugin 'acme' subscribes to 'command:nwe', which the gateway never emits."
        );
        let skipped = Note::EventHandlerSkipped {
            plugin: "acme".into(),
            event: EventKey::CommandNew,
            reason: SkipReason::Panicked,
        };
        assert_eq!(
            skipped.to_string(),
            "Event handler 'acme' for 'command:new' was skipped: it panicked."
        );
        let waited = Note::EventWaitTimedOut {
            event: EventKey::GatewayShutdown,
            millis: 5000,
        };
        assert_eq!(
            waited.to_string(),
            "Stopped waiting for 'gateway:shutdown' handlers after 5 s; they keep running."
        );
        assert_eq!(
            Note::EventsDropped { count: 3 }.to_string(),
            "Dropped 3 events because the event queue was full."
        );
        assert_eq!(
            Note::SessionEndTimedOut {
                sessions: 2,
                millis: 2000
            }
            .to_string(),
            "Session-end hooks of 2 session(s) did not finish within 2 s."
        );
    }

    #[test]
    fn loading_notes_render_their_sentences() {
        let skipped = Note::PluginDirectorySkipped {
            dir: "/p/acme".into(),
            problem: "it has no plugin.json".into(),
        };
        assert_eq!(
            skipped.to_string(),
            "Plugin directory '/p/acme' was skipped: it has no plugin.json."
        );
        let tool = Note::PluginToolNotRegistered {
            plugin: "acme".into(),
            tool: "read_file".into(),
        };
        assert_eq!(
            tool.to_string(),
            "Plugin 'acme' tool 'read_file' was not registered: another tool has that name."
        );
    }
}

#[cfg(test)]
mod duration_text_tests {
    use super::*;

    // Issue 15: one rule for time units in every text.
    #[test]
    fn whole_seconds_are_seconds_and_the_rest_milliseconds() {
        assert_eq!(
            DurationText::of(Duration::from_millis(5000)).to_string(),
            "5 s"
        );
        assert_eq!(
            DurationText::of(Duration::from_millis(300)).to_string(),
            "300 ms"
        );
        assert_eq!(
            DurationText::of(Duration::from_millis(1500)).to_string(),
            "1500 ms"
        );
    }
}
