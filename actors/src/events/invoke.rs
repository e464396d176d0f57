//! One event handler call, run by the plugin's own actor under the same timeout and panic guard
//! as its hooks.

use std::sync::Arc;
use std::time::Duration;

use actix::{Handler, Message, Response};
use futures::future::BoxFuture;
use hookline_messages::event::Event;
use hookline_messages::note::SkipReason;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::EventReply;
use crate::plugin::guard::{guarded, poll_once};
use crate::plugin::{Answer, HookError, PluginActor};

/// Asks a plugin actor to run its event handler on `event`.
pub struct InvokeEvent {
    /// The event, shared by every handler of one delivery.
    pub event: Arc<Event>,
}

/// The outcome of one handler call.
#[derive(Debug)]
pub struct EventCall {
    /// The handler's reply, or why it was skipped.
    pub result: Result<EventReply, SkipReason>,
    /// A handler that timed out but was not cancelled (SPEC G2.2): done when it really finishes.
    pub still_running: Option<JoinHandle<()>>,
}

impl EventCall {
    /// A call that could not reach the plugin.
    pub(crate) fn unavailable() -> Self {
        Self {
            result: Err(SkipReason::Unavailable),
            still_running: None,
        }
    }
}

impl Message for InvokeEvent {
    type Result = EventCall;
}

impl Handler<InvokeEvent> for PluginActor {
    type Result = Response<EventCall>;

    fn handle(&mut self, msg: InvokeEvent, _: &mut Self::Context) -> Self::Result {
        match self.call_event(msg.event) {
            Answer::Now(call) => Response::reply(call),
            Answer::Later(call) => Response::fut(call),
        }
    }
}

/// Asks a plugin actor to run its event handler on each of `events`, in order: queued events
/// travel in batches, one message per handler per batch (see `deliver_queued`).
pub(crate) struct InvokeEvents {
    pub(crate) events: Vec<Arc<Event>>,
}

impl Message for InvokeEvents {
    type Result = Vec<EventCall>;
}

impl Handler<InvokeEvents> for PluginActor {
    type Result = Response<Vec<EventCall>>;

    fn handle(&mut self, msg: InvokeEvents, _: &mut Self::Context) -> Self::Result {
        let calls: Vec<Answer<EventCall>> = msg
            .events
            .into_iter()
            .map(|event| self.call_event(event))
            .collect();
        if calls.iter().all(|c| matches!(c, Answer::Now(_))) {
            return Response::reply(calls.into_iter().filter_map(now).collect());
        }
        Response::fut(async move {
            let mut answers = Vec::with_capacity(calls.len());
            for call in calls {
                answers.push(call.get().await);
            }
            answers
        })
    }
}

fn now(answer: Answer<EventCall>) -> Option<EventCall> {
    match answer {
        Answer::Now(call) => Some(call),
        Answer::Later(_) => None,
    }
}

impl PluginActor {
    /// Polls the handler once, inline, like a hook call: most handlers answer there, with no task
    /// and no timer. One that is still pending finishes under its timeout (or, for shutdown and
    /// pre-restart, outlives it: SPEC G2.2).
    fn call_event(&self, event: Arc<Event>) -> Answer<EventCall> {
        let Some(handler) = self.events.clone() else {
            return Answer::Now(EventCall::unavailable());
        };
        let limit = self.event_timeout;
        let gate = self.gate();
        if event.key().outlives_timeout() {
            let call = async move { handler.on_event(&event).await };
            return Answer::Later(Box::pin(wait_without_cancelling(call, limit, gate)));
        }
        let call: BoxFuture<'static, _> = Box::pin(async move { handler.on_event(&event).await });
        poll_once(call, gate.as_ref(), limit).map(|result| EventCall {
            result,
            still_running: None,
        })
    }
}

/// SPEC G2.2: the handler runs as its own task, so the timeout ends the wait, not the work. The
/// task is handed back so the gateway can wait for it before closing shared state (G2.3).
async fn wait_without_cancelling(
    call: impl std::future::Future<Output = Result<EventReply, HookError>> + 'static,
    limit: Duration,
    gate: Option<Arc<tokio::sync::Semaphore>>,
) -> EventCall {
    let (done, outcome) = oneshot::channel();
    let task = actix_rt::spawn(async move {
        // Unbounded on purpose: only the caller's wait is bounded (SPEC G2.3 accepts a handler
        // that never ends keeping in-process shutdown from completing).
        let result = guarded(call, Duration::MAX, gate).await;
        let _ = done.send(result);
    });
    match tokio::time::timeout(limit, outcome).await {
        Ok(Ok(result)) => EventCall {
            result,
            still_running: None,
        },
        Ok(Err(_gone)) => EventCall::unavailable(),
        Err(_elapsed) => EventCall {
            result: Err(SkipReason::timed_out(limit)),
            still_running: Some(task),
        },
    }
}
