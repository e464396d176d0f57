//! The pipeline coordinator: runs each hook call through the plugin actors that implement the
//! hook, in load order, each seeing the previous accepted value (SPEC P1.1, P1.2, R0.3).
//!
//! Calls are carried in batches: the calls of one hook that arrive while the coordinator drains
//! its mailbox go through the plugins together, one message per plugin per batch. Under load a
//! batch holds many sessions' calls; alone, a call is a batch of one.
//!
//! Ordering and concurrency (written down in `docs/runtime-semantics.md`):
//! - the calls of one session run one after another, in the order the coordinator received them;
//! - calls of different sessions run concurrently;
//! - the coordinator admits at most `max_pending` calls (running or queued); beyond that a call
//!   fails at once with [`PipelineError::Overloaded`] instead of growing a queue without bound.

mod batch;
mod chain;
mod session;

use std::collections::HashMap;
use std::sync::Arc;

use actix::{Actor, ActorContext, Addr, AsyncContext, Context, Handler, Message, ResponseFuture};
use hookline_messages::hook::{Hook, HookKind};
use hookline_messages::note::Note;
use hookline_messages::session::SessionId;
use tokio::sync::oneshot;
use tracing::Instrument;

use crate::error::PipelineError;
use crate::plugin::{Dispatch, PluginActor};
use batch::{Batches, Flush, Pending};
use session::SessionState;

/// How many messages may wait in the coordinator's mailbox.
pub(crate) const COORDINATOR_MAILBOX_CAPACITY: usize = 4096;

/// The default bound on calls admitted at once (running or queued behind their session).
pub const DEFAULT_MAX_PENDING: usize = 100_000;

/// The most calls one batch carries through the plugins.
pub(crate) const MAX_BATCH: usize = 512;

/// One plugin actor that implements a given hook, with the name notes use.
#[derive(Clone)]
pub(crate) struct Step {
    pub(crate) name: Arc<str>,
    pub(crate) addr: Addr<PluginActor>,
}

/// The actor that sends each hook call through the plugin actors in load order.
pub struct PipelineCoordinator {
    /// For each hook, the plugins that implement it, in load order. Plugins that do not
    /// implement a hook are not in its list, so they cost nothing.
    steps: [Arc<[Step]>; HookKind::ALL.len()],
    sessions: HashMap<SessionId, SessionState>,
    batches: Batches,
    pending: usize,
    max_pending: usize,
}

impl PipelineCoordinator {
    /// A coordinator over `steps`, indexed by [`HookKind`] as `usize`.
    pub(crate) fn new(steps: [Arc<[Step]>; HookKind::ALL.len()], max_pending: usize) -> Self {
        Self {
            steps,
            sessions: HashMap::new(),
            batches: Batches::default(),
            pending: 0,
            max_pending,
        }
    }

    /// Adds a call whose session is free to the hook's open batch; the batch leaves when the
    /// coordinator has drained its mailbox (or when it is full).
    fn enqueue<H: Dispatch>(&mut self, call: Pending<H>, ctx: &mut Context<Self>) {
        if let Some(full) = self.batches.push(call, MAX_BATCH) {
            self.launch(full, ctx);
        } else if self.batches.schedule(H::KIND) {
            ctx.notify(Flush::<H>::new());
        }
    }

    /// Sends a batch through the plugins as one task on this arbiter.
    fn launch<H: Dispatch>(&mut self, calls: Vec<Pending<H>>, ctx: &mut Context<Self>) {
        let steps = self.steps[H::KIND as usize].clone();
        let span = tracing::debug_span!("hook", hook = H::KIND.wire_name(), calls = calls.len());
        let slots = calls.into_iter().map(chain::Slot::new).collect();
        actix_rt::spawn(chain::run_from::<H>(steps, 0, slots, ctx.address()).instrument(span));
    }

    /// Answers one finished call and starts its session's next call, if any.
    fn complete<H: Dispatch>(&mut self, done: chain::Done<H>, ctx: &mut Context<Self>) {
        self.pending -= 1;
        let Some(state) = self.sessions.get_mut(&done.session) else {
            return;
        };
        let notes = state.first_seen(done.notes);
        // The caller may have stopped waiting; the call still counted, so a closed channel is fine.
        let _ = done.reply.send(Ok(Outcome {
            value: done.value,
            notes,
            changed_by: done.changed_by,
            failed: done.failed,
        }));
        if let Some(next) = state.queue.pop_front() {
            next(self, ctx);
        } else if state.forget {
            self.sessions.remove(&done.session);
        } else {
            state.running = false;
        }
    }
}

impl Actor for PipelineCoordinator {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(COORDINATOR_MAILBOX_CAPACITY);
    }
}

/// One hook call for one session.
///
/// `context` carries the facts the hook's rule needs (for most hooks `()`; the session's images
/// for `rebuild_model`; the turn's image support for `on_tool_result`).
pub struct Call<H: Dispatch> {
    /// The session the call belongs to; its calls complete in the order they arrive.
    pub session: SessionId,
    /// Facts the rule needs.
    pub context: H::Context,
    /// The value the first plugin sees.
    pub value: H::Value,
}

impl<H: Dispatch> Message for Call<H> {
    type Result = Result<Outcome<H::Value>, PipelineError>;
}

/// What a hook call produced: the final value, the notes new to this session, and which plugins
/// changed the value (in load order).
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome<T> {
    /// The value after every plugin that implements the hook.
    pub value: T,
    /// Notes recorded by this call that the session has not seen before (SPEC P1.4: once per
    /// session, not once per call).
    pub notes: Vec<Note>,
    /// Plugins whose accepted replacement changed the value (SPEC R5.7 needs this for raw hooks).
    pub changed_by: Vec<Arc<str>>,
    /// Plugins skipped on this call (error, panic, timeout, undecodable or refused reply), in
    /// load order, whether or not the session had seen the note before. Fail-closed guards
    /// decide on it.
    pub failed: Vec<Arc<str>>,
}

/// Where a call's outcome goes.
pub(crate) type ReplyTo<H> = oneshot::Sender<Result<Outcome<<H as Hook>::Value>, PipelineError>>;

impl<H: Dispatch> Handler<Call<H>> for PipelineCoordinator {
    type Result = ResponseFuture<Result<Outcome<H::Value>, PipelineError>>;

    fn handle(&mut self, call: Call<H>, ctx: &mut Self::Context) -> Self::Result {
        if self.pending >= self.max_pending {
            return Box::pin(async { Err(PipelineError::Overloaded) });
        }
        self.pending += 1;
        metrics::counter!("hookline_hook_calls_total", "hook" => H::KIND.wire_name()).increment(1);
        let (reply, rx) = oneshot::channel();
        let pending = Pending::<H>::new(call, reply);
        let state = self.sessions.entry(pending.session().clone()).or_default();
        if state.running {
            state
                .queue
                .push_back(Box::new(move |this, ctx| this.enqueue(pending, ctx)));
        } else {
            state.running = true;
            self.enqueue(pending, ctx);
        }
        Box::pin(async move { rx.await.unwrap_or(Err(PipelineError::Stopped)) })
    }
}

impl<H: Dispatch> Handler<Flush<H>> for PipelineCoordinator {
    type Result = ();

    fn handle(&mut self, _: Flush<H>, ctx: &mut Self::Context) {
        if let Some(calls) = self.batches.take::<H>() {
            self.launch(calls, ctx);
        }
    }
}

/// A batch's (or a part of a batch's) report back to the coordinator.
pub(crate) struct Completed<H: Dispatch> {
    pub(crate) done: Vec<chain::Done<H>>,
}

impl<H: Dispatch> Message for Completed<H> {
    type Result = ();
}

impl<H: Dispatch> Handler<Completed<H>> for PipelineCoordinator {
    type Result = ();

    fn handle(&mut self, completed: Completed<H>, ctx: &mut Self::Context) {
        for done in completed.done {
            self.complete(done, ctx);
        }
    }
}

/// Drops a session's state (its queue position and the notes it has seen) once its calls finish.
/// Send it when a session closes.
pub struct ForgetSession(pub SessionId);

impl Message for ForgetSession {
    type Result = ();
}

impl Handler<ForgetSession> for PipelineCoordinator {
    type Result = ();

    fn handle(&mut self, ForgetSession(session): ForgetSession, _: &mut Self::Context) {
        match self.sessions.get_mut(&session) {
            Some(state) if state.running => state.forget = true,
            Some(_) => {
                self.sessions.remove(&session);
            }
            None => {}
        }
    }
}

/// Asks how many calls the coordinator has admitted (running or queued) and its bound. A soak
/// samples it to check the bound holds under load.
pub struct AdmittedCalls;

/// The answer to [`AdmittedCalls`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, actix::MessageResponse)]
pub struct Admitted {
    /// Calls admitted now (running or queued behind their session).
    pub calls: usize,
    /// The most calls it admits at once (`max_pending`).
    pub bound: usize,
}

impl Message for AdmittedCalls {
    type Result = Admitted;
}

impl Handler<AdmittedCalls> for PipelineCoordinator {
    type Result = Admitted;

    fn handle(&mut self, _: AdmittedCalls, _: &mut Self::Context) -> Admitted {
        Admitted {
            calls: self.pending,
            bound: self.max_pending,
        }
    }
}

/// Stops the coordinator. Calls still running are answered with [`PipelineError::Stopped`].
pub struct StopPipeline;

impl Message for StopPipeline {
    type Result = ();
}

impl Handler<StopPipeline> for PipelineCoordinator {
    type Result = ();

    fn handle(&mut self, _: StopPipeline, ctx: &mut Self::Context) {
        ctx.stop();
    }
}
