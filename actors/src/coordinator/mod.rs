//! The pipeline coordinator: admits each hook call, keeps each session's calls in order, and
//! sends the calls through the plugin actors that implement the hook, in load order, each seeing
//! the previous accepted value (SPEC P1.1, P1.2, R0.3).
//!
//! Calls are carried in batches: the calls of one hook that arrive while the coordinator drains
//! its mailbox go through the plugins together, one message per plugin per batch, relayed from
//! plugin actor to plugin actor. Under load a batch holds many sessions' calls; alone, a call is a
//! batch of one. One [`Job`] is the call from admission to answer.
//!
//! Ordering and concurrency (written down in `docs/runtime-semantics.md`):
//! - the calls of one session run one after another, in the order the coordinator received them;
//! - calls of different sessions run concurrently;
//! - the coordinator admits at most `max_pending` calls (running or queued); beyond that a call
//!   fails at once with [`PipelineError::Overloaded`] instead of growing a queue without bound.

mod batch;
mod job;
mod session;

use std::collections::HashMap;
use std::sync::Arc;

use actix::{Actor, ActorContext, Addr, AsyncContext, Context, Handler, Message, ResponseFuture};
use hookline_messages::hook::HookKind;
use hookline_messages::note::Note;
use hookline_messages::session::SessionId;
use tokio::sync::oneshot;

use crate::error::PipelineError;
use crate::plugin::actor::forward;
use crate::plugin::{Dispatch, PluginActor};
use batch::{Batches, Flush};
pub(crate) use job::Job;
use session::SessionState;

/// How many messages may wait in the coordinator's mailbox.
pub(crate) const COORDINATOR_MAILBOX_CAPACITY: usize = 4096;

/// The default bound on calls admitted at once per shard (running or queued behind their
/// session). Low enough that a backlog is shed early with [`PipelineError::Overloaded`] instead
/// of slowing every call; high enough for thousands of sessions in flight.
pub const DEFAULT_MAX_PENDING: usize = 16_384;

/// The most calls one batch carries through the plugins.
pub(crate) const MAX_BATCH: usize = 512;

/// One plugin actor that implements a given hook, with the name notes use.
#[derive(Clone)]
pub(crate) struct Step {
    pub(crate) name: Arc<str>,
    pub(crate) addr: Addr<PluginActor>,
}

/// One hook's way through the plugins: the actors that implement it in load order, their names
/// (indexed like the steps), and the coordinator that is told when a batch is through.
pub(crate) struct Route {
    pub(crate) steps: Arc<[Step]>,
    pub(crate) names: Arc<[Arc<str>]>,
    pub(crate) coordinator: Addr<PipelineCoordinator>,
}

/// The actor that admits hook calls and sends them through the plugin actors in load order.
pub struct PipelineCoordinator {
    /// For each hook, the plugins that implement it, in load order. Plugins that do not
    /// implement a hook are not in its list, so they cost nothing.
    steps: [Arc<[Step]>; HookKind::ALL.len()],
    /// The routes, built once the coordinator knows its own address.
    routes: Vec<Arc<Route>>,
    sessions: HashMap<SessionId, SessionState>,
    batches: Batches,
    pending: usize,
    max_pending: usize,
    /// `hookline_hook_calls_total` per hook, resolved once.
    calls: Box<[metrics::Counter]>,
}

impl PipelineCoordinator {
    /// A coordinator over `steps`, indexed by [`HookKind`] as `usize`.
    pub(crate) fn new(steps: [Arc<[Step]>; HookKind::ALL.len()], max_pending: usize) -> Self {
        Self {
            steps,
            routes: Vec::new(),
            sessions: HashMap::new(),
            batches: Batches::default(),
            pending: 0,
            max_pending,
            calls: crate::metrics::pipeline_calls(),
        }
    }

    /// Admits `job`: refused when `max_pending` calls are admitted already; queued behind its
    /// session's running call; otherwise into its hook's open batch.
    fn admit<H: Dispatch>(&mut self, job: Job<H>, ctx: &mut Context<Self>) {
        if self.pending >= self.max_pending {
            let _ = job.reply.send(Err(PipelineError::Overloaded));
            return;
        }
        self.pending += 1;
        let state = self.sessions.entry(job.session().clone()).or_default();
        if state.running {
            state
                .queue
                .push_back(Box::new(move |this, ctx| this.enqueue(job, ctx)));
        } else {
            state.running = true;
            self.enqueue(job, ctx);
        }
    }

    /// Adds a call whose session is free to the hook's open batch; the batch leaves when the
    /// coordinator has drained its mailbox (or when it is full).
    fn enqueue<H: Dispatch>(&mut self, job: Job<H>, ctx: &mut Context<Self>) {
        match self.batches.push(job, MAX_BATCH) {
            Ok(Some(full)) => self.launch(full),
            Ok(None) => {
                if self.batches.schedule(H::KIND) {
                    ctx.notify(Flush::<H>::new());
                }
            }
            Err(job) => self.launch(vec![job]),
        }
    }

    /// Sends a batch to the first plugin that implements its hook; the plugins relay it on.
    fn launch<H: Dispatch>(&mut self, jobs: Vec<Job<H>>) {
        self.calls[H::KIND as usize].increment(jobs.len() as u64);
        let route = self.routes[H::KIND as usize].clone();
        forward(jobs, route, 0);
    }

    /// Marks one of `session`'s calls finished and starts its next call, if any.
    fn release(&mut self, session: &SessionId, ctx: &mut Context<Self>) {
        self.pending -= 1;
        let Some(state) = self.sessions.get_mut(session) else {
            return;
        };
        if let Some(next) = state.queue.pop_front() {
            next(self, ctx);
        } else if state.forget {
            self.sessions.remove(session);
        } else {
            state.running = false;
        }
    }
}

impl Actor for PipelineCoordinator {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(COORDINATOR_MAILBOX_CAPACITY);
        let coordinator = ctx.address();
        self.routes = self
            .steps
            .iter()
            .map(|steps| {
                Arc::new(Route {
                    steps: steps.clone(),
                    names: steps.iter().map(|s| s.name.clone()).collect(),
                    coordinator: coordinator.clone(),
                })
            })
            .collect();
    }
}

/// Admits one call whose answer goes to the oneshot it carries: what [`Pipeline::call`]
/// sends (with `try_send`, so admission costs no reply channel of actix's).
///
/// [`Pipeline::call`]: crate::Pipeline::call
pub(crate) struct Admit<H: Dispatch>(pub(crate) Job<H>);

impl<H: Dispatch> Message for Admit<H> {
    type Result = ();
}

impl<H: Dispatch> Handler<Admit<H>> for PipelineCoordinator {
    type Result = ();

    fn handle(&mut self, Admit(job): Admit<H>, ctx: &mut Self::Context) {
        self.admit(job, ctx);
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
        self.admit(
            Job::<H>::new(call.session, call.context, call.value, reply),
            ctx,
        );
        Box::pin(async move { answer.await.unwrap_or(Err(PipelineError::Stopped)) })
    }
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
    /// The value the hook was given, when a replacement changed it: moved aside by the first
    /// change, never copied (`None` when no plugin changed the value).
    pub before: Option<T>,
    /// Plugins skipped on this call (error, panic, timeout, undecodable or refused reply), in
    /// load order, whether or not the session had seen the note before. Fail-closed guards
    /// decide on it.
    pub failed: Vec<Arc<str>>,
}

impl<H: Dispatch> Handler<Flush<H>> for PipelineCoordinator {
    type Result = ();

    fn handle(&mut self, _: Flush<H>, _: &mut Self::Context) {
        if let Some(jobs) = self.batches.take::<H>() {
            self.launch(jobs);
        }
    }
}

/// A batch's report from the last plugin: the sessions whose calls it answered, and the calls
/// with notes, which the coordinator answers (it keeps each session's seen notes).
pub(crate) struct Completed<H: Dispatch> {
    pub(crate) done: Vec<SessionId>,
    pub(crate) noted: Vec<Job<H>>,
    pub(crate) route: Arc<Route>,
}

impl<H: Dispatch> Message for Completed<H> {
    type Result = ();
}

impl<H: Dispatch> Handler<Completed<H>> for PipelineCoordinator {
    type Result = ();

    fn handle(&mut self, completed: Completed<H>, ctx: &mut Self::Context) {
        for session in &completed.done {
            self.release(session, ctx);
        }
        for mut job in completed.noted {
            let notes = std::mem::take(&mut job.notes);
            let notes = match self.sessions.get_mut(job.session()) {
                Some(state) => state.first_seen(notes),
                None => notes,
            };
            let session = job.session().clone();
            job.answer(notes, &completed.route.names);
            self.release(&session, ctx);
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
