//! The remote operator of a gateway session: an approval the policy gives to the operator becomes
//! a [`HostEvent::ApprovalRequested`] on the session's live feed, and waits for an answer through
//! [`Approvals::answer`] (a server's client). No answer within the timeout denies, with a note
//! (`Note::ApprovalTimedOut`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use hookline_messages::approval::Classification;
use hookline_messages::note::Note;
use hookline_messages::record::Decision;
use hookline_messages::tool::ToolCall;
use tokio::sync::{oneshot, watch};

use super::status::{Activity, SessionStatus};
use crate::approval::{Answer, Operator};
use crate::state::{HostEvent, LiveSink};

/// The approvals a session waits for, by call id.
#[derive(Default)]
pub struct Approvals {
    waiting: Mutex<HashMap<String, oneshot::Sender<Decision>>>,
}

/// Why an answer was not taken.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("no approval is waiting for tool call '{call_id}'")]
pub struct NotWaiting {
    /// The call id the answer named.
    pub call_id: String,
}

impl Approvals {
    /// Answers the approval waiting for `call_id`.
    ///
    /// # Errors
    /// [`NotWaiting`] when none waits for it (never asked, already answered, or timed out).
    pub fn answer(&self, call_id: &str, decision: Decision) -> Result<(), NotWaiting> {
        let waiting = self.lock().remove(call_id);
        match waiting.map(|reply| reply.send(decision)) {
            Some(Ok(())) => Ok(()),
            _ => Err(NotWaiting {
                call_id: call_id.to_owned(),
            }),
        }
    }

    /// The call ids waiting for an answer.
    pub fn pending(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.lock().keys().cloned().collect();
        ids.sort();
        ids
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<Decision>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The [`Operator`] of one gateway session.
pub(crate) struct RemoteOperator {
    pub(crate) approvals: Arc<Approvals>,
    pub(crate) live: LiveSink,
    pub(crate) status: Arc<watch::Sender<SessionStatus>>,
    pub(crate) timeout: Duration,
    /// The session's stop signal: `/stop` (or a drain) ends the wait at once, denied.
    pub(crate) stop: Arc<crate::turn::StopSignal>,
}

#[async_trait]
impl Operator for RemoteOperator {
    async fn decide(&self, call: &ToolCall, classification: &Classification) -> Decision {
        self.answer(call, classification).await.decision
    }

    async fn answer(&self, call: &ToolCall, classification: &Classification) -> Answer {
        let (reply, answered) = oneshot::channel();
        self.approvals.lock().insert(call.call_id.clone(), reply);
        let timeout_ms = u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX);
        // Waiting before it is announced: whoever sees the request sees the session waiting.
        self.status.send_modify(|s| s.activity = Activity::Approval);
        (self.live)(&HostEvent::ApprovalRequested {
            call_id: call.call_id.clone(),
            tool: call.name.clone(),
            arguments: call.arguments.clone(),
            classification: classification.clone(),
            timeout_ms,
        });
        let answer = tokio::select! {
            answer = tokio::time::timeout(self.timeout, answered) => Some(answer),
            () = self.stop.raised() => None,
        };
        self.approvals.lock().remove(&call.call_id);
        self.status.send_modify(|s| s.activity = Activity::Turn);
        match answer {
            Some(Ok(Ok(decision))) => Answer {
                decision,
                note: None,
            },
            // Stopped: the call never runs, and the turn ends at its next model call.
            None => Answer {
                decision: Decision::Deny,
                note: None,
            },
            // Timed out, or the table was dropped (the session is closing): a call nobody
            // allowed never runs.
            _ => Answer {
                decision: Decision::Deny,
                note: Some(Note::ApprovalTimedOut {
                    call_id: call.call_id.clone(),
                    tool: call.name.clone(),
                    millis: timeout_ms,
                }),
            },
        }
    }
}
