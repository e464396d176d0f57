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

/// One step: exactly one of `user`, `side` or `command`.
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
        match (&self.user, &self.side, &self.command) {
            (Some(text), None, None) => Ok(Action::User(text.clone(), mode)),
            (None, Some(text), None) => Ok(Action::Side(text.clone())),
            (None, None, Some(command)) => SlashCommand::parse(command).map(Action::Command),
            (None, None, None) => Err("unknown step: it has none of user, side, command".into()),
            _ => Err("a step has exactly one of user, side, command".into()),
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
            "/resume" => needs(Self::Resume),
            "/cd" => needs(Self::Cd),
            "/space" => needs(Self::Space),
            "/model" => needs(Self::Model),
            other => Err(format!("unknown command '{other}'")),
        }
    }
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
    }

    #[test]
    fn a_step_needs_exactly_one_action() {
        let step: Step = serde_json::from_str(r#"{"user": "hi", "side": "q"}"#).unwrap_or_default();
        assert!(step.action().is_err());
        let unknown: Result<Step, _> = serde_json::from_str(r#"{"shout": "hi"}"#);
        assert!(unknown.is_err());
        assert_eq!(
            Step::default().action(),
            Err("unknown step: it has none of user, side, command".into())
        );
    }
}
