//! The pipeline coordinator: admits each hook call, keeps each session's calls in order, and
//! sends the calls through the plugin actors that implement the hook, in load order, each seeing
//! the previous accepted value (SPEC P1.1, P1.2, R0.3).
//!
//! Calls are carried in batches: the calls of one hook that arrive while the coordinator drains
//! its mailbox go through the plugins together, one message per plugin per batch, relayed from
//! plugin actor to plugin actor. Under load a batch holds many sessions' calls; alone, a call is a
//! batch of one. One `Job` is the call from admission to answer.
//!
//! Ordering and concurrency (written down in `docs/runtime-semantics.md`):
//! - the calls of one session run one after another, in the order the coordinator received them;
//! - calls of different sessions run concurrently;
//! - a shard admits at most `max_pending` calls (running or queued); beyond that a call fails at
//!   once with [`PipelineError::Overloaded`] instead of growing a queue without bound. The count
//!   (`Admission`) is shared with the callers, who take it before sending: a call that would
//!   find the mailbox full is shed at the door too, never parked in its caller.

mod admission;
mod batch;
pub(crate) mod local;
mod session;

use std::rc::Rc;
use std::sync::Arc;

use actix::{
    Actor, ActorContext, Addr, AsyncContext, Context, Handler, Message, MessageResult,
    ResponseFuture,
};
use hookline_messages::hook::HookKind;
use hookline_messages::session::SessionId;
use tokio::sync::oneshot;

use crate::error::PipelineError;
use crate::plugin::{Dispatch, PluginActor};
pub use crate::route::Outcome;
use crate::route::{forward, Completed, Job, ReplyTo, Route, NO_SLOT};
pub(crate) use admission::Admission;
use batch::{Flush, Lanes};
use local::Local;

/// Room in the coordinator's mailbox beyond `max_pending`, for batch reports and control messages:
/// admitted calls alone never fill it.
const MAILBOX_HEADROOM: usize = 4096;

/// The default bound on calls admitted at once per shard (running or queued behind their
/// session). Low enough that a backlog is shed early with [`PipelineError::Overloaded`] instead
/// of slowing every call; high enough for thousands of sessions in flight.
pub const DEFAULT_MAX_PENDING: usize = 16_384;

/// The most calls one batch carries through the plugins.
/// 64, like the batched relay peer: a batch's calls (jobs and their texts) then stay in the
/// cache from one plugin to the next (at 512 they did not; issue 23's profile).
pub(crate) const MAX_BATCH: usize = 64;

/// One plugin actor that implements a given hook, with the name notes use.
#[derive(Clone)]
pub(crate) struct Step {
    pub(crate) name: Arc<str>,
    pub(crate) addr: Addr<PluginActor>,
}

/// The actor that admits hook calls and sends them through the plugin actors in load order.
pub struct PipelineCoordinator {
    /// For each hook, the plugins that implement it, in load order. Plugins that do not
    /// implement a hook are not in its list, so they cost nothing.
    steps: [Arc<[Step]>; HookKind::ALL.len()],
    /// Shared on this shard's thread ([`Local`]): each session's state in a dense table (a call
    /// finds its slot at admission, from its `SessionKey` without hashing, else by its id, and
    /// is released by it), the routes, and the admission count shared with the callers.
    local: Rc<Local>,
    /// Per hook: its route through the plugin actors and its open batch.
    lanes: Lanes,
    /// Calls admitted to this shard, shared with the callers ([`Admission`]).
    admission: Arc<Admission>,
}

impl PipelineCoordinator {
    /// A coordinator over `steps`, indexed by [`HookKind`] as `usize`.
    pub(crate) fn new(
        steps: [Arc<[Step]>; HookKind::ALL.len()],
        admission: Arc<Admission>,
    ) -> Self {
        Self {
            steps,
            local: Rc::new(Local::new(admission.clone())),
            lanes: Lanes::default(),
            admission,
        }
    }

    /// Admits `job`, already counted in [`Admission`]: queued behind its session's running call,
    /// otherwise into its hook's open batch.
    fn admit<H: Dispatch>(&mut self, mut job: Job<H>, ctx: &mut Context<Self>) {
        let hint = (job.slot != NO_SLOT).then_some(job.slot);
        let mut sessions = self.local.sessions.borrow_mut();
        job.slot = sessions.slot(job.session(), hint);
        let Some(state) = sessions.get_mut(job.slot) else {
            // Cannot happen (the slot was just given); refuse rather than lose the call.
            drop(sessions);
            self.admission.release();
            return job.reply.send(Err(PipelineError::Stopped));
        };
        if state.running {
            state
                .queue
                .push_back(Box::new(move |this, ctx| this.enqueue(job, ctx)));
            return;
        }
        state.running = true;
        drop(sessions);
        self.enqueue(job, ctx);
    }

    /// Adds a call whose session is free to the hook's open batch; the batch leaves when the
    /// coordinator has drained its mailbox (or when it is full).
    fn enqueue<H: Dispatch>(&mut self, job: Job<H>, ctx: &mut Context<Self>) {
        let steps = &self.steps[H::KIND as usize];
        let uid = self.admission.uid();
        let mut made = false;
        let Some(lane) = self.lanes.lane::<H>(|| {
            made = true;
            route_of(steps, uid, ctx)
        }) else {
            job.reply.send(Err(PipelineError::Stopped));
            return;
        };
        if made {
            self.local.set_route(&lane.route);
        }
        if lane.is_empty() {
            self.local.batch_opened(H::KIND as usize);
        }
        if let Some(full) = lane.push(job, MAX_BATCH) {
            let route = lane.route.clone();
            self.launch(full, route);
        } else if lane.schedule() {
            ctx.notify(Flush::<H>::new());
        }
    }

    /// Admits a caller's batch of calls as it is (see [`AdmitMany`]): the calls whose sessions
    /// are free, from the first on, are marked running where they lie and leave together as a
    /// batch of their own, without a move per call; from the first call whose session is busy
    /// (a session's earlier call running, or twice in the batch) on, each is admitted alone and
    /// waits its turn as usual.
    fn admit_batch<H: Dispatch>(&mut self, mut jobs: Vec<Job<H>>, ctx: &mut Context<Self>) {
        let mut free = 0;
        {
            let mut sessions = self.local.sessions.borrow_mut();
            for job in &mut jobs {
                let hint = (job.slot != NO_SLOT).then_some(job.slot);
                job.slot = sessions.slot(job.session(), hint);
                match sessions.get_mut(job.slot) {
                    Some(state) if !state.running => state.running = true,
                    _ => break,
                }
                free += 1;
            }
        }
        let rest = (free < jobs.len()).then(|| jobs.split_off(free));
        if !jobs.is_empty() {
            let steps = &self.steps[H::KIND as usize];
            let uid = self.admission.uid();
            let mut made = false;
            match self.lanes.lane::<H>(|| {
                made = true;
                route_of(steps, uid, ctx)
            }) {
                Some(lane) => {
                    let route = lane.route.clone();
                    if made {
                        self.local.set_route(&route);
                    }
                    self.local.batch_opened(H::KIND as usize);
                    self.launch(jobs, route);
                }
                // Cannot happen (the lane is `H`'s); refuse rather than lose the calls.
                None => {
                    for job in jobs {
                        self.release(job.slot, ctx);
                        job.reply.send(Err(PipelineError::Stopped));
                    }
                }
            }
        }
        for job in rest.into_iter().flatten() {
            self.admit(job, ctx);
        }
    }

    /// Sends a batch to the first plugin that implements its hook; the plugins relay it on.
    fn launch<H: Dispatch>(&mut self, jobs: Vec<Job<H>>, route: Arc<Route<H>>) {
        self.local.calls[H::KIND as usize].increment(jobs.len() as u64);
        forward(jobs, None, route, 0);
    }

    /// Marks one call of the session in `slot` finished and starts its next call, if any.
    fn release(&mut self, slot: u32, ctx: &mut Context<Self>) {
        self.admission.release();
        let mut sessions = self.local.sessions.borrow_mut();
        let Some(state) = sessions.get_mut(slot) else {
            return;
        };
        if let Some(next) = state.queue.pop_front() {
            drop(sessions);
            next(self, ctx);
        } else if state.forget {
            sessions.close(slot);
        } else {
            state.running = false;
        }
    }
}

impl Actor for PipelineCoordinator {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(self.admission.bound().saturating_add(MAILBOX_HEADROOM));
        self.local.register();
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        self.local.unregister();
    }
}

/// Hook `H`'s route through `steps`, reporting back to this coordinator.
fn route_of<H: Dispatch>(
    steps: &[Step],
    shard: u64,
    ctx: &Context<PipelineCoordinator>,
) -> Route<H> {
    Route {
        steps: steps.iter().map(|s| s.addr.clone().recipient()).collect(),
        names: steps.iter().map(|s| s.name.clone()).collect(),
        coordinator: ctx.address().recipient(),
        shard,
    }
}

/// Admits one call whose answer goes to the oneshot it carries: what [`Pipeline::call`]
/// sends (with `try_send`, so admission costs no reply channel of actix's), after counting the
/// call in the shard's [`Admission`].
///
/// [`Pipeline::call`]: crate::Pipeline::call
pub(crate) struct Admit<H: Dispatch>(pub(crate) Job<H>);

impl<H: Dispatch> Message for Admit<H> {
    type Result = ();
}

impl<H: Dispatch> Handler<Admit<H>> for PipelineCoordinator {
    type Result = ();

    fn handle(&mut self, Admit(job): Admit<H>, ctx: &mut Self::Context) {
        self.admission.received();
        self.admit(job, ctx);
    }
}

/// Admits many calls of one hook at once, each already counted in the shard's [`Admission`]:
/// what [`Pipeline::call_many`](crate::Pipeline::call_many) sends, one message per shard, its
/// calls in batches of at most [`MAX_BATCH`] that go through the plugins as they are.
pub(crate) struct AdmitMany<H: Dispatch>(pub(crate) Vec<Vec<Job<H>>>);

impl<H: Dispatch> Message for AdmitMany<H> {
    type Result = ();
}

impl<H: Dispatch> Handler<AdmitMany<H>> for PipelineCoordinator {
    type Result = ();

    fn handle(&mut self, AdmitMany(batches): AdmitMany<H>, ctx: &mut Self::Context) {
        self.admission.received();
        for jobs in batches {
            self.admit_batch(jobs, ctx);
        }
    }
}

/// One hook call for one session, for actix programs that `send` it to a coordinator
/// themselves (see [`Pipeline::coordinator_for`](crate::Pipeline::coordinator_for)).
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

impl<H: Dispatch> Handler<Call<H>> for PipelineCoordinator {
    type Result = ResponseFuture<Result<Outcome<H::Value>, PipelineError>>;

    fn handle(&mut self, call: Call<H>, ctx: &mut Self::Context) -> Self::Result {
        let (reply, answer) = oneshot::channel();
        if !self.admission.try_admit() {
            return Box::pin(async { Err(PipelineError::Overloaded) });
        }
        self.admit(
            Job::<H>::new(
                call.session,
                NO_SLOT,
                call.context,
                call.value,
                ReplyTo::One(reply),
            ),
            ctx,
        );
        Box::pin(async move { answer.await.unwrap_or(Err(PipelineError::Stopped)) })
    }
}

impl<H: Dispatch> Handler<Flush<H>> for PipelineCoordinator {
    type Result = ();

    fn handle(&mut self, _: Flush<H>, ctx: &mut Self::Context) {
        let steps = &self.steps[H::KIND as usize];
        let uid = self.admission.uid();
        let Some(lane) = self.lanes.lane::<H>(|| route_of(steps, uid, ctx)) else {
            return;
        };
        if let Some(jobs) = lane.take() {
            let route = lane.route.clone();
            self.launch(jobs, route);
        }
    }
}

impl<H: Dispatch> Handler<Completed<H>> for PipelineCoordinator {
    type Result = ();

    fn handle(&mut self, completed: Completed<H>, ctx: &mut Self::Context) {
        for slot in completed.done {
            self.release(slot, ctx);
        }
        for mut job in completed.noted {
            let notes = std::mem::take(&mut job.notes);
            let notes = match self.local.sessions.borrow_mut().get_mut(job.slot) {
                Some(state) => state.first_seen(notes),
                None => notes.into_iter().collect(),
            };
            let slot = job.slot;
            job.answer(notes, &completed.route.names);
            self.release(slot, ctx);
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
        let mut sessions = self.local.sessions.borrow_mut();
        let Some(slot) = sessions.find(&session) else {
            return;
        };
        match sessions.get_mut(slot) {
            Some(state) if state.running => state.forget = true,
            Some(_) => sessions.close(slot),
            None => {}
        }
    }
}

/// Gives a session its slot in the shard's table (what [`Pipeline::open_session`] sends): the
/// answer is the slot, which a [`SessionKey`] carries so its calls are admitted without hashing,
/// and a copy of the id made on the shard's thread, which the key carries too.
///
/// Every call clones its session's id into the call and drops it at the answer: two atomic
/// counts on the id's allocation. An id allocated elsewhere may share a cache line with another
/// shard's session ids, and then each count moves the line between the cores (issue 23's
/// profile: a third of `call_many`'s time); the shard's own copy sits among its own allocations.
///
/// [`Pipeline::open_session`]: crate::Pipeline::open_session
/// [`SessionKey`]: crate::SessionKey
pub(crate) struct OpenSession(pub(crate) SessionId);

impl Message for OpenSession {
    type Result = (u32, SessionId);
}

impl Handler<OpenSession> for PipelineCoordinator {
    type Result = MessageResult<OpenSession>;

    fn handle(&mut self, OpenSession(session): OpenSession, _: &mut Self::Context) -> Self::Result {
        // Allocated here, on the shard's thread.
        let id = SessionId::new(session.as_str());
        let slot = self.local.sessions.borrow_mut().slot(&id, None);
        MessageResult((slot, id))
    }
}

/// Asks how many calls the coordinator has admitted (running or queued) and its bound, and how
/// many sessions its table holds. A soak samples it to check the bound holds under load and that
/// closed sessions are forgotten.
pub struct AdmittedCalls;

/// The answer to [`AdmittedCalls`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, actix::MessageResponse)]
pub struct Admitted {
    /// Calls admitted now (running or queued behind their session).
    pub calls: usize,
    /// The most calls it admits at once (`max_pending`).
    pub bound: usize,
    /// Sessions holding a slot in the session table (opened or seen in a call, and not forgotten
    /// yet: [`Pipeline::forget_session`](crate::Pipeline::forget_session)).
    pub sessions: usize,
}

impl Message for AdmittedCalls {
    type Result = Admitted;
}

impl Handler<AdmittedCalls> for PipelineCoordinator {
    type Result = Admitted;

    fn handle(&mut self, _: AdmittedCalls, _: &mut Self::Context) -> Admitted {
        Admitted {
            calls: self.admission.admitted(),
            bound: self.admission.bound(),
            sessions: self.local.sessions.borrow().len(),
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
