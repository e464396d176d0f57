//! The remote operator of a gateway session: an approval the policy gives to the operator becomes
//! a [`HostEvent::ApprovalRequested`] on the session's live feed, and waits for an answer through
//! [`Approvals::answer`] (a server's client). No answer within the timeout denies, with a note
//! (`Note::ApprovalTimedOut`); a session that ends while an approval waits (closed, replaced,
//! drained) denies it at once, with a note (`Note::ApprovalSessionEnded`). What waits is kept in full ([`PendingApproval`]), so a client that
//! was not listening when an approval was asked can still show and answer it (issue 24 item 4).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use hookline_messages::approval::{Authority, Classification, Risk};
use hookline_messages::note::Note;
use hookline_messages::record::Decision;
use hookline_messages::tool::ToolCall;
use serde::Serialize;
use tokio::sync::{oneshot, watch};

use super::status::{Activity, SessionStatus};
use crate::approval::{Answer, Operator};
use crate::shared::Clock;
use crate::state::{HostEvent, LiveSink};

/// The approvals a session waits for, by call id.
#[derive(Default)]
pub struct Approvals {
    waiting: Mutex<HashMap<String, Waiting>>,
    /// The turn waiting here was handed over to the server that replaced this one (issue 49):
    /// nothing is answered here any more, the new server asks again.
    detached: AtomicBool,
}

/// One approval in the table: what was asked, and where its answer goes.
struct Waiting {
    asked: PendingApproval,
    reply: oneshot::Sender<(Decision, Option<String>)>,
}

/// An approval that waits for an operator's answer, as `approval-requested` announced it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingApproval {
    /// The call's id: the key the answer names.
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The arguments it would run with.
    pub arguments: serde_json::Value,
    /// The call's risk, after the approval hooks.
    pub risk: Risk,
    /// Where the call acts.
    pub authority: Authority,
    /// The one-line summary shown to the operator.
    pub summary: String,
    /// When it is denied unanswered, in milliseconds since the Unix epoch.
    pub deadline_ms: u64,
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
        self.answer_as(call_id, decision, None)
    }

    /// Answers as [`Approvals::answer`], naming who answered (issue 48: archived with the
    /// decision).
    ///
    /// # Errors
    /// As [`Approvals::answer`].
    pub fn answer_as(
        &self,
        call_id: &str,
        decision: Decision,
        by: Option<String>,
    ) -> Result<(), NotWaiting> {
        let waiting = {
            let mut table = self.lock();
            if self.is_detached() {
                None
            } else {
                table.remove(call_id)
            }
        };
        match waiting.map(|waiting| waiting.reply.send((decision, by))) {
            Some(Ok(())) => Ok(()),
            _ => Err(NotWaiting {
                call_id: call_id.to_owned(),
            }),
        }
    }

    /// The call ids waiting for an answer.
    pub fn pending(&self) -> Vec<String> {
        if self.is_detached() {
            return Vec::new();
        }
        let mut ids: Vec<String> = self.lock().keys().cloned().collect();
        ids.sort();
        ids
    }

    /// Every approval waiting for an answer, soonest deadline first (then by call id).
    pub fn pending_in_full(&self) -> Vec<PendingApproval> {
        if self.is_detached() {
            return Vec::new();
        }
        let mut all: Vec<PendingApproval> = self.lock().values().map(|w| w.asked.clone()).collect();
        all.sort_by(|a, b| (a.deadline_ms, &a.call_id).cmp(&(b.deadline_ms, &b.call_id)));
        all
    }

    /// Hands the waiting turn over (issue 49): from now on no answer is taken here, and the
    /// turn's wait never ends here (its task drops it). False when no approval waits: the
    /// turn is not at a point where it can move.
    pub(super) fn detach(&self) -> bool {
        let table = self.lock();
        if table.is_empty() {
            return false;
        }
        self.detached.store(true, Ordering::Release);
        true
    }

    /// Whether the waiting turn was handed over.
    pub(super) fn is_detached(&self) -> bool {
        self.detached.load(Ordering::Acquire)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiting>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl RemoteOperator {
    /// When the session ends under the wait, nobody will answer: the turn stops (it ends
    /// `cancelled`) and the denial says why (issue 34 item 2).
    fn session_ended(&self, call: &ToolCall) -> Option<Note> {
        let by = self.stop.ending()?;
        self.stop.raise();
        Some(Note::ApprovalSessionEnded {
            call_id: call.call_id.clone(),
            tool: call.name.clone(),
            by,
        })
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
    /// The gateway's clock, for the deadline a waiting approval shows.
    pub(crate) clock: Arc<dyn Clock>,
}

#[async_trait]
impl Operator for RemoteOperator {
    async fn decide(&self, call: &ToolCall, classification: &Classification) -> Decision {
        self.answer(call, classification).await.decision
    }

    async fn answer(&self, call: &ToolCall, classification: &Classification) -> Answer {
        self.answer_asked(call, classification, self.clock.now_ms())
            .await
    }

    /// Issue 40 item 3: the deadline counts from when the call was first asked.
    async fn answer_asked(
        &self,
        call: &ToolCall,
        classification: &Classification,
        asked_ms: u64,
    ) -> Answer {
        let (reply, answered) = oneshot::channel();
        let timeout_ms = u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX);
        let deadline_ms = asked_ms.saturating_add(timeout_ms);
        let left = Duration::from_millis(deadline_ms.saturating_sub(self.clock.now_ms()));
        let asked = PendingApproval {
            call_id: call.call_id.clone(),
            tool: call.name.clone(),
            arguments: call.arguments.clone(),
            risk: classification.risk,
            authority: classification.authority,
            summary: classification.summary.clone(),
            deadline_ms,
        };
        self.approvals
            .lock()
            .insert(call.call_id.clone(), Waiting { asked, reply });
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
            answer = tokio::time::timeout(left, answered) => Some(answer),
            () = self.stop.raised_or_ending() => None,
        };
        self.approvals.lock().remove(&call.call_id);
        if self.approvals.is_detached() {
            // Handed over (issue 49): the call stays stored as it waits; whatever woke this wait
            // (its deadline, a stop) is the new server's to see. The session's task drops this
            // turn without running another step of it.
            std::future::pending::<()>().await;
        }
        self.status.send_modify(|s| s.activity = Activity::Turn);
        match answer {
            Some(Ok(Ok((decision, answered_by)))) => Answer {
                decision,
                note: None,
                answered_by,
            },
            // Stopped: the call never runs, and the turn ends at its next model call.
            None => Answer {
                decision: Decision::Deny,
                note: self.session_ended(call),
                answered_by: None,
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
                answered_by: None,
            },
        }
    }
}
