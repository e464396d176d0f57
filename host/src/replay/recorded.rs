//! The recorded world a replayed session runs in: a model that answers each call with what the
//! model answered then (by position in the turn), tools that answer with what they answered then
//! (by name and arguments), and an operator that answers each approval as it was answered then
//! (by call id). Nothing runs for real. A call that cannot be matched is recorded as
//! [`Unmatched`] and answered with a failure or a refusal: never guessed.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use hookline_messages::approval::Classification;
use hookline_messages::model::{ModelRequest, ModelResponse};
use hookline_messages::note::Note;
use hookline_messages::record::Decision;
use hookline_messages::tool::ToolCall;
use serde::Serialize;

use super::plan::{Answer, ToolRun, TurnPlan};
use crate::approval::{self, Operator};
use crate::provider::{Provider, ProviderError};
use crate::tools::{Tool, ToolContext, ToolOutput, ToolRegistry, ToolSpec};

/// A call the replay could not answer from the recording (it was answered with a failure or a
/// refusal instead).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Unmatched {
    /// The turn (1-based).
    pub turn: usize,
    /// What could not be matched, as an English sentence.
    pub what: String,
}

/// What one session's recorded model, tools and operator share.
pub(crate) struct Script {
    state: Mutex<State>,
    operator: HashMap<String, (Decision, Option<Note>)>,
}

#[derive(Default)]
struct State {
    turn: usize,
    answers: VecDeque<Answer>,
    calls: usize,
    takes_images: bool,
    /// The model the last recorded answer named.
    answered_by: Option<String>,
    runs: Vec<(ToolRun, bool)>,
    unmatched: Vec<Unmatched>,
}

impl Script {
    pub(crate) fn new(operator: HashMap<String, (Decision, Option<Note>)>) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(State::default()),
            operator,
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Loads turn `number`'s recorded answers; what the last turn left unused stays unused.
    pub(crate) fn begin_turn(&self, number: usize, plan: &TurnPlan) {
        let mut state = self.lock();
        state.turn = number;
        state.answers = plan.answers.clone();
        state.calls = 0;
        state.takes_images = plan.takes_images;
        state.runs = plan.runs.iter().cloned().map(|run| (run, false)).collect();
    }

    /// The calls that could not be matched so far.
    pub(crate) fn take_unmatched(&self) -> Vec<Unmatched> {
        std::mem::take(&mut self.lock().unmatched)
    }

    /// Records what the replay could not reproduce, in the current turn.
    pub(crate) fn unmatched_now(&self, what: String) {
        Self::unmatched(&mut self.lock(), what);
    }

    fn unmatched(state: &mut State, what: String) {
        let turn = state.turn;
        state.unmatched.push(Unmatched { turn, what });
    }

    fn answer_model(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        let mut state = self.lock();
        state.calls += 1;
        let call = state.calls;
        let Some(answer) = state.answers.pop_front() else {
            Self::unmatched(
                &mut state,
                format!(
                    "Model call {call} has no recorded answer; it was answered with a failure."
                ),
            );
            return Err(ProviderError::Replayed(
                "the recording has no answer".into(),
            ));
        };
        if answer.purpose() != request.purpose {
            Self::unmatched(
                &mut state,
                format!(
                    "Model call {call} is a {:?} call where the recording has a {:?} call; it was answered with a failure.",
                    request.purpose,
                    answer.purpose()
                ),
            );
            return Err(ProviderError::Replayed(
                "the recording has no answer".into(),
            ));
        }
        match answer {
            Answer::Response(response, model) => {
                // The replayed answer names the model the recorded one did (issue 34 item 5).
                state.answered_by = model;
                Ok(response)
            }
            Answer::Failure { error, .. } if error == ProviderError::Stopped.to_string() => {
                Err(ProviderError::Stopped)
            }
            Answer::Failure { error, .. } => Err(ProviderError::Replayed(error)),
        }
    }

    fn answer_tool(&self, name: &str, arguments: &serde_json::Value) -> ToolOutput {
        let mut state = self.lock();
        let found = state
            .runs
            .iter_mut()
            .find(|(run, used)| !used && run.name == name && run.arguments == *arguments);
        if let Some((run, used)) = found {
            *used = true;
            return run.output.clone();
        }
        Self::unmatched(
            &mut state,
            format!("The tool call {name} {arguments} has no recorded result; it was answered with a failure."),
        );
        ToolOutput::failure("hookline replay has no recorded result for this call.")
    }
}

/// The recorded model of one session.
pub(crate) struct RecordedModel(pub(crate) Arc<Script>);

#[async_trait]
impl Provider for RecordedModel {
    fn takes_images(&self) -> bool {
        self.0.lock().takes_images
    }

    /// The model the recording says answered the last call: a replay counts usage as the
    /// recording did, whatever model the session asked for since.
    fn answering_model(&self, _requested: Option<&str>) -> Option<String> {
        self.0.lock().answered_by.clone()
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        self.0.answer_model(request)
    }
}

/// A tool answered from the recording, with the real tool's spec (so the approval classifier
/// rates it as it rated the real one).
struct RecordedTool {
    spec: ToolSpec,
    script: Arc<Script>,
}

#[async_trait]
impl Tool for RecordedTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, _: &ToolContext, arguments: serde_json::Value) -> ToolOutput {
        self.script.answer_tool(&self.spec.name, &arguments)
    }
}

/// A registry with one recorded tool for each tool of `real`.
pub(crate) fn recorded_tools(real: &ToolRegistry, script: &Arc<Script>) -> ToolRegistry {
    let mut tools = ToolRegistry::new();
    for spec in real.specs() {
        let tool = RecordedTool {
            spec: spec.clone(),
            script: script.clone(),
        };
        // The names come from a registry: unique.
        let _ = tools.register(Arc::new(tool));
    }
    tools
}

/// The operator of one replayed session.
pub(crate) struct RecordedOperator(pub(crate) Arc<Script>);

#[async_trait]
impl Operator for RecordedOperator {
    async fn decide(&self, call: &ToolCall, classification: &Classification) -> Decision {
        self.answer(call, classification).await.decision
    }

    async fn answer(&self, call: &ToolCall, _: &Classification) -> approval::Answer {
        if let Some((decision, note)) = self.0.operator.get(&call.call_id) {
            return approval::Answer {
                decision: *decision,
                note: note.clone(),
                answered_by: None,
            };
        }
        let mut state = self.0.lock();
        Script::unmatched(
            &mut state,
            format!(
                "The approval of tool call '{}' ({}) was not asked when recorded; it was denied.",
                call.call_id, call.name
            ),
        );
        approval::Answer {
            decision: Decision::Deny,
            note: None,
            answered_by: None,
        }
    }
}
