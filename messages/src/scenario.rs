//! The scenario format `hookline run` plays (documented in `docs/scenario.md`): pure data and
//! its structural checks. The host reads the file, checks tool names against its registry, and
//! plays the steps.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::{FinishReason, MediaType, Usage};
use crate::prompt::PromptMode;
use crate::session::ApprovalMode;

/// A whole scenario.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scenario {
    /// The workspace directory, relative to the scenario file. Absent: a fresh directory.
    #[serde(default)]
    pub workspace: Option<String>,
    /// Files to create in the workspace before the first step (path -> content).
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// The approval mode of the sessions.
    #[serde(default)]
    pub approval_mode: ApprovalMode,
    /// The models `/model` may pick, by name. Absent: one image-capable model `scripted`.
    #[serde(default)]
    pub models: BTreeMap<String, ModelSpec>,
    /// The model the first session uses. Absent: the first model by name.
    #[serde(default)]
    pub model: Option<String>,
    /// Compact before a turn once the stored records exceed this many.
    #[serde(default)]
    pub compact_after: Option<usize>,
    /// When sessions reset by themselves (checked before each user turn, SPEC G5.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_policy: Option<ResetPolicySpec>,
    /// The steps, in order.
    pub steps: Vec<Step>,
}

/// A model a scenario may use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelSpec {
    /// Whether the model takes images (SPEC R5.6).
    #[serde(default)]
    pub images: bool,
}

/// The scenario's idle/daily reset policy (SPEC G5.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResetPolicySpec {
    /// Reset a session idle at least this many milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_after_ms: Option<u64>,
    /// Reset every session once a day at this hour (0 to 23, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_at_hour_utc: Option<u8>,
}

/// Where a user message came from when a chat channel delivered it (SPEC G5.8, G5.9).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InboundSpec {
    /// The channel (`telegram`, ...).
    pub channel: String,
    /// The sender.
    pub from: String,
    /// The message id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// The conversation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// A voice note's transcript: the message also emits `message:transcribed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
}

/// A custom event emitted explicitly (SPEC G4.2).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EmitStep {
    /// The custom key (never a core key or family).
    pub key: String,
    /// The context handlers receive.
    #[serde(default)]
    pub context: serde_json::Value,
}

/// One step: exactly one of `user`, `side`, `command`, `emit` or `advanceMs`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Step {
    /// A user message: one turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// A side question: answered with a side call, stored nowhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<String>,
    /// A slash command (`/new`, `/clear`, `/resume <id>`, `/fork`, `/cd <dir>`, `/space <name>`,
    /// `/compact`, `/model <name>`, `/stop`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// A custom event to emit (SPEC G4.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub emit: Option<EmitStep>,
    /// The scenario's clock moves forward this many milliseconds (for idle/daily resets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advance_ms: Option<u64>,
    /// For a user step: the chat channel that delivered it (default: the CLI chat path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inbound: Option<InboundSpec>,
    /// A user turn's mode (work or plan; default work).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<PromptMode>,
    /// Images attached to the user message, by media type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<MediaType>,
    /// The model's replies to the calls this step makes, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replies: Vec<ScriptedReply>,
    /// The operator's answers to approval prompts during this step, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operator: Vec<OperatorAnswer>,
}

/// What a step does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// A user turn.
    User(String, PromptMode),
    /// A side question.
    Side(String),
    /// A slash command.
    Command(SlashCommand),
    /// A custom event.
    Emit(EmitStep),
    /// The clock moves forward (milliseconds).
    Advance(u64),
}

impl Step {
    /// The step's action.
    ///
    /// # Errors
    /// An English sentence: no action or several, a bad mode, or a bad command.
    pub fn action(&self) -> Result<Action, String> {
        let mode = self.mode.unwrap_or(PromptMode::Work);
        if !matches!(mode, PromptMode::Work | PromptMode::Plan) {
            return Err(format!(
                "mode '{}' is not a turn mode (work or plan)",
                mode.as_str()
            ));
        }
        let extra = usize::from(self.emit.is_some()) + usize::from(self.advance_ms.is_some());
        match (&self.user, &self.side, &self.command, extra) {
            (Some(text), None, None, 0) => Ok(Action::User(text.clone(), mode)),
            (None, Some(text), None, 0) => Ok(Action::Side(text.clone())),
            (None, None, Some(command), 0) => SlashCommand::parse(command).map(Action::Command),
            (None, None, None, 0) => {
                Err("unknown step: it has none of user, side, command, emit, advanceMs".into())
            }
            (None, None, None, 1) => Ok(self.extra_action()),
            _ => Err("a step has exactly one of user, side, command, emit, advanceMs".into()),
        }
    }

    fn extra_action(&self) -> Action {
        match (&self.emit, self.advance_ms) {
            (Some(emit), _) => Action::Emit(emit.clone()),
            (None, ms) => Action::Advance(ms.unwrap_or_default()),
        }
    }
}

/// A slash command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SlashCommand {
    /// `/new`
    New,
    /// `/clear`
    Clear,
    /// `/resume <id>`
    Resume(String),
    /// `/fork`
    Fork,
    /// `/cd <dir>`
    Cd(String),
    /// `/space <name>`
    Space(String),
    /// `/compact`
    Compact,
    /// `/model <name>`
    Model(String),
    /// `/stop`
    Stop,
    /// `/reset`: a fresh session replaces this one (emits `command:reset`, SPEC G5.1).
    Reset,
    /// `/mode <work|plan>`: the session's default turn mode.
    Mode(PromptMode),
    /// `/approvals <mode>`: the session's approval mode.
    Approvals(ApprovalMode),
}

impl SlashCommand {
    /// Parses a command line such as `/resume s1`.
    ///
    /// # Errors
    /// An English sentence naming the unknown command or the missing argument.
    pub fn parse(line: &str) -> Result<Self, String> {
        let mut words = line.split_whitespace();
        let verb = words.next().unwrap_or_default();
        let arg: Vec<&str> = words.collect();
        let arg = arg.join(" ");
        let needs = |make: fn(String) -> Self| {
            if arg.is_empty() {
                Err(format!("command '{verb}' needs an argument"))
            } else {
                Ok(make(arg.clone()))
            }
        };
        let bare = |command: Self| {
            if arg.is_empty() {
                Ok(command)
            } else {
                Err(format!("command '{verb}' takes no argument"))
            }
        };
        match verb {
            "/new" => bare(Self::New),
            "/clear" => bare(Self::Clear),
            "/fork" => bare(Self::Fork),
            "/compact" => bare(Self::Compact),
            "/stop" => bare(Self::Stop),
            "/reset" => bare(Self::Reset),
            "/mode" => match parse_name::<PromptMode>(&arg) {
                Some(mode @ (PromptMode::Work | PromptMode::Plan)) => Ok(Self::Mode(mode)),
                _ => Err(format!("command '/mode' needs work or plan, not '{arg}'")),
            },
            "/approvals" => parse_name(&arg).map(Self::Approvals).ok_or_else(|| {
                format!(
                    "command '/approvals' needs ask-above-read, ask-all or allow-workspace, \
                     not '{arg}'"
                )
            }),
            "/resume" => needs(Self::Resume),
            "/cd" => needs(Self::Cd),
            "/space" => needs(Self::Space),
            "/model" => needs(Self::Model),
            other => Err(format!("unknown command '{other}'")),
        }
    }
}

/// A lowercase name (`plan`, `ask-all`) as the serde enum it names.
fn parse_name<T: serde::de::DeserializeOwned>(name: &str) -> Option<T> {
    serde_json::from_value(serde_json::Value::String(name.to_owned())).ok()
}

/// One scripted model reply.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptedReply {
    /// The assistant text.
    #[serde(default)]
    pub text: String,
    /// Reasoning text, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// Tool calls the model makes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ScriptedToolCall>,
    /// Why the call finished. Absent: `tool-calls` when there are tool calls, else `stop`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish: Option<FinishReason>,
    /// Token usage.
    #[serde(default)]
    pub usage: Usage,
    /// The call fails with this provider error instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail: Option<String>,
    /// The operator types `/stop` while this call runs: the turn ends cancelled.
    #[serde(default)]
    pub stop: bool,
}

impl ScriptedReply {
    /// The finish reason the reply reports.
    pub fn finish_reason(&self) -> FinishReason {
        self.finish.unwrap_or(if self.tool_calls.is_empty() {
            FinishReason::Stop
        } else {
            FinishReason::ToolCalls
        })
    }
}

/// A tool call in a scripted reply.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScriptedToolCall {
    /// The call id.
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments.
    #[serde(default)]
    pub arguments: serde_json::Value,
}

/// The operator's answer to one approval prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OperatorAnswer {
    /// Let the call run.
    Allow,
    /// Refuse the call.
    Deny,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_with_and_without_arguments() {
        assert_eq!(
            SlashCommand::parse("/resume s1"),
            Ok(SlashCommand::Resume("s1".into()))
        );
        assert_eq!(SlashCommand::parse("/clear"), Ok(SlashCommand::Clear));
        assert_eq!(
            SlashCommand::parse("/cd"),
            Err("command '/cd' needs an argument".into())
        );
        assert_eq!(
            SlashCommand::parse("/nwe"),
            Err("unknown command '/nwe'".into())
        );
        assert_eq!(
            SlashCommand::parse("/mode plan"),
            Ok(SlashCommand::Mode(PromptMode::Plan))
        );
        assert_eq!(
            SlashCommand::parse("/approvals ask-all"),
            Ok(SlashCommand::Approvals(ApprovalMode::AskAll))
        );
        assert!(SlashCommand::parse("/mode review").is_err());
        assert_eq!(SlashCommand::parse("/reset"), Ok(SlashCommand::Reset));
    }

    #[test]
    fn emit_and_advance_steps_are_actions_of_their_own() {
        let emit: Step =
            serde_json::from_str(r#"{"emit": {"key": "acme:deployed"}}"#).unwrap_or_default();
        assert!(matches!(emit.action(), Ok(Action::Emit(e)) if e.key == "acme:deployed"));
        let advance: Step = serde_json::from_str(r#"{"advanceMs": 5}"#).unwrap_or_default();
        assert_eq!(advance.action(), Ok(Action::Advance(5)));
        let both: Step =
            serde_json::from_str(r#"{"user": "hi", "advanceMs": 5}"#).unwrap_or_default();
        assert!(both.action().is_err());
    }

    #[test]
    fn a_step_needs_exactly_one_action() {
        let step: Step = serde_json::from_str(r#"{"user": "hi", "side": "q"}"#).unwrap_or_default();
        assert!(step.action().is_err());
        let unknown: Result<Step, _> = serde_json::from_str(r#"{"shout": "hi"}"#);
        assert!(unknown.is_err());
        assert_eq!(
            Step::default().action(),
            Err("unknown step: it has none of user, side, command, emit, advanceMs".into())
        );
    }
}
