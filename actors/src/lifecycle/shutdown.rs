//! The steps of a shutdown, as plain async functions the lifecycle actor runs.

use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use hookline_messages::event::{Event, GatewayStopContext};
use hookline_messages::hook::OnSessionEnded;
use hookline_messages::note::Note;
use hookline_messages::session::SessionInfo;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::error::{PipelineError, Readmit};
use crate::events::EventBus;
use crate::{Outcome, Pipeline};

/// What the host asks for when it shuts the gateway down.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShutdownRequest {
    /// Why (`reason` in the event contexts).
    pub reason: String,
    /// When a restart is expected, in how many milliseconds; `None` means no restart, and no
    /// `gateway:pre-restart` (SPEC G5.7).
    pub restart_expected_ms: Option<u64>,
    /// The sessions still active; each gets its session-end hooks.
    pub active_sessions: Vec<SessionInfo>,
}

/// What the caller gets back once its bounded waits are over.
#[derive(Debug)]
pub struct ShutdownReport {
    /// Notes in the order they arose: skipped handlers, `Stopped waiting ...`, session-end
    /// timeouts and skips.
    pub notes: Vec<Note>,
    /// Resolves once the shared state has been closed.
    pub closed: SharedStateClosed,
}

/// Resolves once the host's shared state has been closed, which happens only after every
/// shutdown handler has really finished (SPEC G2.3).
#[derive(Debug)]
pub struct SharedStateClosed {
    receiver: oneshot::Receiver<()>,
    // Sticky: a oneshot reports its value once, the close is forever (issue 15 defect 6).
    closed: bool,
}

impl SharedStateClosed {
    pub(crate) fn new(receiver: oneshot::Receiver<()>) -> Self {
        Self {
            receiver,
            closed: false,
        }
    }

    /// Whether it has been closed already. Once true, always true.
    pub fn is_closed(&mut self) -> bool {
        if !self.closed {
            self.closed = matches!(self.receiver.try_recv(), Ok(()));
        }
        self.closed
    }

    /// Waits up to `limit` for the close; `true` when it happened (also when an earlier
    /// [`is_closed`](Self::is_closed) already saw it).
    pub async fn wait(self, limit: Duration) -> bool {
        self.closed || matches!(tokio::time::timeout(limit, self.receiver).await, Ok(Ok(())))
    }
}

/// Delivers `event` in its own task and waits for it at most `budget` (SPEC G2.1). The task is
/// returned: it ends when every handler has really finished (G2.2, G2.3).
pub(crate) async fn deliver_bounded(
    bus: &EventBus,
    event: Event,
    budget: Duration,
) -> (Vec<Note>, JoinHandle<()>) {
    let key = event.key();
    let (notes_tx, notes_rx) = oneshot::channel();
    let bus = bus.clone();
    let finished = actix_rt::spawn(async move {
        if let Ok(mut delivery) = bus.dispatch(event).await {
            // The caller may have stopped waiting; the handlers still get awaited below.
            let _ = notes_tx.send(std::mem::take(&mut delivery.notes));
            delivery.handlers_finished().await;
        }
    });
    let notes = match tokio::time::timeout(budget, notes_rx).await {
        Ok(Ok(notes)) => notes,
        Ok(Err(_bus_stopped)) => Vec::new(),
        Err(_elapsed) => vec![Note::EventWaitTimedOut {
            event: key,
            millis: millis(budget),
        }],
    };
    (notes, finished)
}

/// The stop context both lifecycle events carry.
pub(crate) fn stop_context(request: &ShutdownRequest) -> GatewayStopContext {
    GatewayStopContext {
        reason: request.reason.clone(),
        restart_expected_ms: request.restart_expected_ms,
    }
}

/// Runs `on_session_ended` for every session in parallel under one total `budget`.
///
/// No session's end is skipped silently: a call its shard refuses for now
/// ([`PipelineError::Overloaded`]: the shard's admission bound is full, with the turns still
/// draining or more sessions than the bound) asks again within the budget (paced by
/// [`Readmit`]), and one that has not finished when the budget ends, admitted or
/// not, is counted in the `SessionEndTimedOut` note.
pub(crate) async fn end_sessions(
    pipeline: &Pipeline,
    sessions: Vec<SessionInfo>,
    budget: Duration,
) -> Vec<Note> {
    let mut calls: FuturesUnordered<_> = sessions
        .into_iter()
        .map(|session| end_session(pipeline, session))
        .collect();
    let mut notes = Vec::new();
    let drain = async {
        while let Some(outcome) = calls.next().await {
            if let Ok(outcome) = outcome {
                notes.extend(outcome.notes);
            }
        }
    };
    let finished = tokio::time::timeout(budget, drain).await.is_ok();
    if !finished {
        notes.push(Note::SessionEndTimedOut {
            sessions: calls.len(),
            millis: millis(budget),
        });
    }
    notes
}

/// One session's `on_session_ended`, asked again while its shard refuses it for now (the
/// caller bounds the wait).
async fn end_session(
    pipeline: &Pipeline,
    session: SessionInfo,
) -> Result<Outcome<SessionInfo>, PipelineError> {
    let mut readmit = Readmit::default();
    loop {
        match pipeline
            .call::<OnSessionEnded>(&session.session_id, session.clone())
            .await
        {
            Err(PipelineError::Overloaded) => tokio::time::sleep(readmit.next_wait()).await,
            answer => return answer,
        }
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Issue 15 defect 6: once closed, always closed.
    #[test]
    fn is_closed_stays_true_after_reporting_true() {
        let (tx, rx) = oneshot::channel();
        let mut closed = SharedStateClosed::new(rx);
        assert!(!closed.is_closed());
        let _ = tx.send(());
        assert!(closed.is_closed());
        assert!(closed.is_closed(), "is_closed is sticky");
    }

    #[tokio::test]
    async fn wait_is_true_after_is_closed_reported_true() {
        let (tx, rx) = oneshot::channel();
        let mut closed = SharedStateClosed::new(rx);
        let _ = tx.send(());
        assert!(closed.is_closed());
        assert!(
            closed.wait(Duration::ZERO).await,
            "wait agrees with is_closed"
        );
    }
}
