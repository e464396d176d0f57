//! The approval policy's host side: the built-in classifier, and the [`Operator`] the policy asks
//! (SPEC P2.9, R4). The verdict itself is the pure [`hookline_messages::policy::verdict`].

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use hookline_messages::approval::{Authority, Classification, Risk};
use hookline_messages::record::Decision;
use hookline_messages::scenario::OperatorAnswer;
use hookline_messages::tool::ToolCall;

use crate::tools::ToolSpec;

/// Classifies a call from its tool's spec. A tool the host does not know gets the highest risk
/// and host authority, and always asks.
pub fn classify(spec: Option<&ToolSpec>, call: &ToolCall) -> Classification {
    let summary = format!("{} {}", call.name, call.arguments);
    match spec {
        Some(spec) => Classification {
            risk: spec.risk,
            authority: spec.authority,
            summary,
            requires_prompt: false,
        },
        None => Classification {
            risk: Risk::Critical,
            authority: Authority::Host,
            summary,
            requires_prompt: true,
        },
    }
}

/// The operator the policy asks when it cannot decide alone.
#[async_trait]
pub trait Operator: Send + Sync + 'static {
    /// Asks whether `call`, classified as `classification`, may run.
    async fn decide(&self, call: &ToolCall, classification: &Classification) -> Decision;

    /// Asks as [`Operator::decide`] does, with a note the session records beside the decision
    /// (e.g. why nobody answered). The default adds no note.
    async fn answer(&self, call: &ToolCall, classification: &Classification) -> Answer {
        Answer {
            decision: self.decide(call, classification).await,
            note: None,
            answered_by: None,
        }
    }

    /// Asks again about a call first asked at `asked_ms` (milliseconds since the Unix epoch)
    /// on a node that died (issue 40 item 3): as [`Operator::answer`], with the same call id and
    /// the wait counted from then. The default asks as if anew.
    async fn answer_asked(
        &self,
        call: &ToolCall,
        classification: &Classification,
        asked_ms: u64,
    ) -> Answer {
        let _ = asked_ms;
        self.answer(call, classification).await
    }
}

/// An operator's answer: the decision, and a note to record beside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    /// Allow or deny.
    pub decision: Decision,
    /// Recorded in the session's archive when present.
    pub note: Option<hookline_messages::note::Note>,
    /// Who answered (issue 48: `tenant/principal`), when a server knows; archived with the
    /// decision.
    pub answered_by: Option<String>,
}

/// An operator that answers from a queue (a scenario's answers); with none left it refuses.
#[derive(Clone, Default)]
pub struct ScriptedOperator {
    answers: Arc<Mutex<VecDeque<OperatorAnswer>>>,
}

impl ScriptedOperator {
    /// Queues answers for the next prompts.
    pub fn push_answers(&self, answers: impl IntoIterator<Item = OperatorAnswer>) {
        self.answers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .extend(answers);
    }

    /// Drops answers the last step did not use.
    pub fn clear_answers(&self) {
        self.answers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clear();
    }
}

#[async_trait]
impl Operator for ScriptedOperator {
    async fn decide(&self, _: &ToolCall, _: &Classification) -> Decision {
        let answer = self
            .answers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .pop_front();
        match answer {
            Some(OperatorAnswer::Allow) => Decision::Allow,
            // No answer is a refusal: a call nobody allowed never runs.
            Some(OperatorAnswer::Deny) | None => Decision::Deny,
        }
    }
}

/// An operator that refuses everything it is asked (the default when none is given). It says
/// so: each refusal comes with [`Note::NoOperator`](hookline_messages::note::Note::NoOperator)
/// naming the missing operator (issue 15), so a denial is never silent.
#[derive(Clone, Copy, Debug, Default)]
pub struct RefuseAll;

#[async_trait]
impl Operator for RefuseAll {
    async fn decide(&self, _: &ToolCall, _: &Classification) -> Decision {
        Decision::Deny
    }

    async fn answer(&self, call: &ToolCall, _: &Classification) -> Answer {
        Answer {
            decision: Decision::Deny,
            note: Some(hookline_messages::note::Note::NoOperator {
                call_id: call.call_id.clone(),
                tool: call.name.clone(),
            }),
            answered_by: None,
        }
    }
}
