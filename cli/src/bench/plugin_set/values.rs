//! The values each hook is called with: the defaults ([`super::defaults`]), a values file, or
//! the values a recorded session holds (the sessions `hookline replay` reads).
//!
//! A values file is one JSON object: each key a hook's wire name, each value the hook's value in
//! the wire form a plugin receives (docs/protocol.md), or an array of them (the calls take them
//! in turn). Hooks it leaves out keep their default value:
//!
//! ```json
//! { "on_user_message": { "text": "Fix the parser." },
//!   "on_tool_call": [ { "callId": "c1", "name": "read_file", "arguments": { "path": "a.rs" },
//!                       "provider": "built-in" } ] }
//! ```

use std::path::Path;

use hookline_host::state::work_request;
use hookline_host::store::StoredSession;
use hookline_messages::compaction::{Compaction, CompactionPhase, CompactionText};
use hookline_messages::hook::HookKind;
use hookline_messages::prompt::{Prompt, SystemText};
use hookline_messages::record::ArchiveEntry;
use hookline_messages::user::{TurnInfo, UserMessage};
use serde::Serialize;
use serde_json::Value;

use super::defaults::{self, to_json as json};

/// Where a hook's values came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Origin {
    /// The built-in default ([`defaults::value`]).
    Default,
    /// `--values FILE`.
    File,
    /// `--from-store`: recorded sessions.
    Store,
}

/// One hook's values, taken in turn by the calls.
#[derive(Clone, Debug)]
pub struct HookValues {
    /// Where they came from.
    pub origin: Origin,
    /// The values, as JSON (never empty).
    pub values: Vec<Value>,
}

/// Every hook's values.
#[derive(Clone, Debug)]
pub struct Values {
    by_hook: Vec<HookValues>,
}

impl Default for Values {
    fn default() -> Self {
        let by_hook = HookKind::ALL
            .iter()
            .map(|hook| HookValues {
                origin: Origin::Default,
                values: vec![defaults::value(*hook)],
            })
            .collect();
        Self { by_hook }
    }
}

impl Values {
    /// The values of `hook`.
    pub fn of(&self, hook: HookKind) -> &HookValues {
        &self.by_hook[hook as usize]
    }

    /// What `hook`'s values are, for the report: the default's description, or how many values
    /// came from where.
    pub fn describe(&self, hook: HookKind) -> String {
        let values = self.of(hook);
        let count = values.values.len();
        let plural = if count == 1 { "value" } else { "values" };
        match values.origin {
            Origin::Default => format!("default: {}", defaults::describe(hook)),
            Origin::File => format!("{count} {plural} from the values file"),
            Origin::Store => format!("{count} recorded {plural}"),
        }
    }

    fn set(&mut self, hook: HookKind, origin: Origin, values: Vec<Value>) {
        if !values.is_empty() {
            self.by_hook[hook as usize] = HookValues { origin, values };
        }
    }

    /// These values with the hooks `file` names replaced by its values (format: the module's
    /// documentation). Each value's shape is checked when the run starts.
    ///
    /// # Errors
    /// An unreadable file, one that is not a JSON object, or a key that names no hook, as an
    /// English phrase.
    pub fn with_file(mut self, file: &Path) -> Result<Self, String> {
        let shown = file.display();
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("the values file '{shown}' could not be read: {e}"))?;
        let json: Value = serde_json::from_str(&text)
            .map_err(|e| format!("the values file '{shown}' is not JSON: {e}"))?;
        let Value::Object(map) = json else {
            return Err(format!(
                "the values file '{shown}' must be a JSON object keyed by hook names"
            ));
        };
        for (key, value) in map {
            let hook: HookKind = key.parse().map_err(|_| {
                format!("the values file '{shown}' names '{key}', which is not a hook")
            })?;
            let values = match value {
                Value::Array(values) if values.is_empty() => {
                    return Err(format!(
                        "the values file '{shown}' gives {key} an empty list of values"
                    ))
                }
                Value::Array(values) => values,
                value => vec![value],
            };
            self.set(hook, Origin::File, values);
        }
        Ok(self)
    }

    /// These values with every hook a recorded session holds values for replaced by those
    /// values, in the sessions' order (the hooks they hold nothing for keep theirs).
    pub fn with_recorded(mut self, sessions: &[StoredSession]) -> Self {
        let mut found: Vec<Vec<Value>> = vec![Vec::new(); HookKind::ALL.len()];
        for session in sessions {
            recorded(session, &mut found);
        }
        for (hook, values) in HookKind::ALL.iter().zip(found) {
            self.set(*hook, Origin::Store, values);
        }
        self
    }
}

/// The values `session`'s archive and records hold, pushed onto `found` by hook: what each hook
/// saw when the session ran (the text before `on_user_message`, the call the model made, ...).
fn recorded(session: &StoredSession, found: &mut [Vec<Value>]) {
    let mut push = |hook: HookKind, value: Value| found[hook as usize].push(value);
    let mut last_user = None;
    for entry in &session.archive {
        match entry {
            ArchiveEntry::SessionStarted(info) => push(HookKind::OnSessionStarted, json(info)),
            ArchiveEntry::SessionEnded(info) => push(HookKind::OnSessionEnded, json(info)),
            ArchiveEntry::UserMessage { text, original, .. } => {
                let seen = original.clone().unwrap_or_else(|| text.clone());
                push(HookKind::OnUserMessage, json(&UserMessage::new(seen)));
                last_user = Some(text.clone());
            }
            ArchiveEntry::SystemText { mode, text } => {
                push(HookKind::OnPrompt, json(&Prompt::new(*mode, text.clone())));
                let system = SystemText {
                    mode: *mode,
                    text: text.clone(),
                };
                push(HookKind::RewritePrompt, json(&system));
                if let Some(user_text) = &last_user {
                    let turn = TurnInfo {
                        user_text: user_text.clone(),
                        mode: *mode,
                        stop_reason: None,
                    };
                    push(HookKind::OnTurnStarted, json(&turn));
                }
            }
            ArchiveEntry::ModelResponse {
                purpose,
                finish_reason,
                items,
                usage,
                ..
            } => {
                let response = hookline_messages::model::ModelResponse {
                    purpose: *purpose,
                    finish_reason: *finish_reason,
                    items: items.clone(),
                    usage: *usage,
                };
                push(HookKind::OnModelResponse, json(&response));
            }
            ArchiveEntry::ToolCall {
                call,
                rewritten_from,
            } => {
                let made = rewritten_from.as_ref().unwrap_or(call);
                push(HookKind::OnToolCall, json(made));
            }
            ArchiveEntry::Approval(record) => {
                push(HookKind::OnApproval, json(&record.classification));
                push(HookKind::RewriteApproval, json(&record.classification));
            }
            ArchiveEntry::ToolResult(result) => push(HookKind::OnToolResult, json(result)),
            ArchiveEntry::Compaction { summary, .. } => {
                let phase = CompactionPhase::Summary;
                push(
                    HookKind::OnCompaction,
                    json(&Compaction::new(phase, summary.clone())),
                );
                let text = CompactionText {
                    phase,
                    text: summary.clone(),
                };
                push(HookKind::RewriteCompaction, json(&text));
            }
            ArchiveEntry::TurnFinished { stop_reason } => {
                if let Some(user_text) = &last_user {
                    let turn = TurnInfo {
                        user_text: user_text.clone(),
                        mode: hookline_messages::prompt::PromptMode::Work,
                        stop_reason: Some(*stop_reason),
                    };
                    push(HookKind::OnTurnFinished, json(&turn));
                }
            }
            _ => {}
        }
    }
    // The whole stored conversation, as the next work request would carry it.
    if !session.records.is_empty() {
        let request = json(&work_request(&session.records));
        push(HookKind::TransformModel, request.clone());
        push(HookKind::RebuildModel, request);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_values_file_replaces_the_hooks_it_names_and_refuses_unknown_ones() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("values.json");
        std::fs::write(
            &file,
            r#"{"on_user_message": [{"text": "a"}, {"text": "b"}]}"#,
        )
        .unwrap();
        let values = Values::default().with_file(&file).unwrap();
        assert_eq!(values.of(HookKind::OnUserMessage).values.len(), 2);
        assert_eq!(values.of(HookKind::OnUserMessage).origin, Origin::File);
        assert_eq!(values.of(HookKind::OnPrompt).origin, Origin::Default);
        std::fs::write(&file, r#"{"on_user_mesage": {"text": "a"}}"#).unwrap();
        let error = Values::default().with_file(&file).unwrap_err();
        assert!(
            error.contains("'on_user_mesage', which is not a hook"),
            "{error}"
        );
    }
}
