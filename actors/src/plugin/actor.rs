//! The actor each plugin runs as. It owns the plugin's registered hooks, its timeouts and its
//! metric handles (calls and latency per hook, resolved once), and runs hook calls under a panic
//! guard (and, for calls that await, a timeout), so a failing plugin becomes a skipped hook, never
//! a dead actor (SPEC P1.4).
//!
//! Calls arrive in batches ([`Relay`] carries many sessions' calls) and leave the same way: each
//! plugin actor runs its hook on every call of the batch, checks each reply against the hook's
//! rule where the reply is made, and hands the batch straight to the next plugin actor in load
//! order (a relay; the last one answers the callers). A synchronous hook runs inline: no future,
//! no box, no task, no timer, no copy of the value. An async hook's future is polled once inline;
//! the calls still pending leave the batch, so the rest of it moves on at once, and finish in
//! one task for the batch, each under its own timeout; those finished by the time that task runs
//! go on together from the next plugin (an external plugin's replies to one write mostly come
//! back in one read), never held up by a slower one.

use std::future::Future;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use actix::{Actor, Addr, Context, Handler};
use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use hookline_messages::hook::{HookContext, HookKind};
use hookline_messages::note::SkipReason;
use metrics::Histogram;
use tokio::sync::Semaphore;
use tracing::Instrument;

use super::dispatch::{edit_owned, Dispatch, EditHook, HookFn, HookTable};
use super::guard::{finish, poll_once, run_now, Answer};
use super::EventHandler;
use super::{HookError, PluginRegistration, Reply, Timeouts};
use crate::metrics::PluginMetrics;
use crate::route::{forward, forward_to, Job, Relay, Route};

/// How many batches may wait in one plugin actor's mailbox. Its handler runs each call once and
/// returns, so the mailbox drains as fast as batches arrive; admission is bounded upstream
/// (`max_pending`), which also bounds the batches in flight.
pub(crate) const PLUGIN_MAILBOX_CAPACITY: usize = 1024;

/// What one plugin call produced: the plugin's reply, or why the call is skipped.
pub type CallResult<T> = Result<Reply<T>, SkipReason>;

/// One loaded plugin, as an actor (one per plugin per shard).
pub struct PluginActor {
    name: Arc<str>,
    table: HookTable,
    timeouts: Timeouts,
    one_at_a_time: Option<Arc<Semaphore>>,
    metrics: PluginMetrics,
    /// Batches handled so far, for sampling their latency.
    batches: u64,
    /// The plugin's gateway event handler, if it registered one (see `crate::events`).
    pub(crate) events: Option<Arc<dyn EventHandler>>,
    /// The timeout of one event handler call.
    pub(crate) event_timeout: Duration,
    /// Per hook (indexed by [`HookKind`]): the actor of the next plugin in load order that
    /// implements it, on this actor's shard, when the pipeline started them together. A batch
    /// goes there directly (no count of the route's `Arc` per hop); without one, by the route.
    pub(crate) next: [Option<Addr<PluginActor>>; HookKind::ALL.len()],
}

impl PluginActor {
    /// An actor for `registration`. Start it with [`Actor::start`] on the arbiter of the
    /// coordinator that will call it: a hop to another thread costs tens of microseconds.
    pub fn new(registration: &PluginRegistration) -> Self {
        let gate = registration
            .one_at_a_time
            .then(|| Arc::new(Semaphore::new(1)));
        Self::with_gate(registration, gate)
    }

    /// An actor sharing `gate` with the plugin's actors on other shards: a plugin that takes one
    /// call at a time does so across every shard.
    pub(crate) fn with_gate(
        registration: &PluginRegistration,
        gate: Option<Arc<Semaphore>>,
    ) -> Self {
        let name = registration.name.clone();
        Self {
            metrics: PluginMetrics::new(&name, registration.implements()),
            name,
            table: registration.table.clone(),
            timeouts: registration.timeouts,
            one_at_a_time: gate,
            batches: 0,
            events: registration.events.clone(),
            event_timeout: registration.event_timeout,
            next: std::array::from_fn(|_| None),
        }
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The gate of a plugin that takes one call at a time; event handler calls share it.
    pub(crate) fn gate(&self) -> Option<Arc<Semaphore>> {
        self.one_at_a_time.clone()
    }

    /// Runs one call of `hook`: inline for a synchronous hook (unless a one-at-a-time plugin is
    /// busy elsewhere), polled once inline for an async one.
    fn call<H: Dispatch>(
        &self,
        hook: &HookFn<H>,
        cx: &HookContext,
        value: &H::Value,
    ) -> Answer<CallResult<H::Value>> {
        let limit = self.timeouts.get(H::KIND);
        match hook {
            HookFn::Sync(f) => match &self.one_at_a_time {
                None => Answer::Now(run_now(|| f(cx, value))),
                Some(gate) => match gate.clone().try_acquire_owned() {
                    Ok(_permit) => Answer::Now(run_now(|| f(cx, value))),
                    Err(_busy) => {
                        let (f, cx, value) = (f.clone(), cx.clone(), value.clone());
                        let call = async move { f(&cx, &value) };
                        Answer::Later(Box::pin(finish(call, None, Some(gate.clone()), limit)))
                    }
                },
            },
            // Only reached for an in-place hook that cannot run on the call's own value.
            HookFn::Edit(f) => Answer::Now(run_now(|| edit_owned::<H>(&**f, cx, value.clone()))),
            // An async hook owns its value: the one copy the slow path makes.
            HookFn::Async(f) => poll_once(
                f(cx.clone(), value.clone()),
                self.one_at_a_time.as_ref(),
                limit,
            ),
        }
    }

    /// Runs an in-place hook on `job`'s own value, inline. A plugin that takes one call at a time
    /// and is busy elsewhere gets a copy instead, later: the future is returned.
    fn edit<H: Dispatch>(
        &self,
        f: &Arc<EditHook<H>>,
        job: &mut Job<H>,
        spare: &mut Option<H::Value>,
        (at, name): (usize, &str),
    ) -> Option<BoxFuture<'static, CallResult<H::Value>>> {
        let _permit = match &self.one_at_a_time {
            None => None,
            Some(gate) => match gate.clone().try_acquire_owned() {
                Ok(permit) => Some(permit),
                Err(_busy) => {
                    let (f, cx, value) = (f.clone(), job.cx.clone(), job.value.clone());
                    let call = async move { edit_owned::<H>(&*f, &cx, value) };
                    let limit = self.timeouts.get(H::KIND);
                    return Some(Box::pin(finish(call, None, Some(gate.clone()), limit)));
                }
            },
        };
        job.edit(at, name, spare, |cx, draft| run_now(|| f(cx, draft)));
        None
    }

    /// Hands the batch on to step `next` of its route: straight to the next plugin's actor when
    /// this one holds it (see [`PluginActor::next`]), else through the route.
    fn pass_on<H: Dispatch>(
        &self,
        jobs: Vec<Job<H>>,
        spare: Option<H::Value>,
        route: Arc<Route<H>>,
        next: usize,
    ) {
        match &self.next[H::KIND as usize] {
            Some(addr) => forward_to(addr, jobs, spare, route, next),
            None => forward(jobs, spare, route, next),
        }
    }

    /// Finishes the calls of a batch that await, all in one task (each still under its own
    /// timeout and panic guard), and sends them on from the next plugin in groups: every call
    /// that has finished by the time the task runs goes on in one batch. Replies read together
    /// (an external plugin answers a burst in one write) thus travel on together: one task, one
    /// wake-up and one message to the next plugin per group, not per call (issue 35). A call
    /// that finishes late does not hold up the others; calls of one batch are of distinct
    /// sessions, so no session's order changes.
    fn resume<H: Dispatch>(&self, waiting: Vec<Waiting<H>>, route: Arc<Route<H>>, at: usize) {
        let latency = self.metrics.latency(H::KIND).clone();
        let started = Instant::now();
        let mut calls: FuturesUnordered<_> = waiting
            .into_iter()
            .map(|Waiting { job, later, step }| {
                let latency = latency.clone();
                let span = step.clone();
                async move {
                    let result = later.await;
                    latency.record(started.elapsed());
                    (job, result, step)
                }
                .instrument(span)
            })
            .collect();
        actix_rt::spawn(async move {
            while let Some(finished) = ready_now(&mut calls).await {
                let name = &route.names[at];
                let jobs = finished
                    .into_iter()
                    .map(|(mut job, result, step)| {
                        job.absorb(at, name, result);
                        job.record_step(&step, at);
                        job
                    })
                    .collect();
                forward(jobs, None, route.clone(), at + 1);
            }
        });
    }
}

/// A call of a batch that did not finish inline, with the step's span.
struct Waiting<H: Dispatch> {
    job: Job<H>,
    later: BoxFuture<'static, CallResult<H::Value>>,
    step: tracing::Span,
}

/// Waits until at least one of `calls` has finished, then takes every one finished by then;
/// `None` once all are done.
async fn ready_now<F: Future>(calls: &mut FuturesUnordered<F>) -> Option<Vec<F::Output>> {
    std::future::poll_fn(|cx| {
        let mut ready = Vec::new();
        loop {
            match calls.poll_next_unpin(cx) {
                Poll::Ready(Some(output)) => ready.push(output),
                // All done: what was taken goes on, then the next poll ends the loop.
                Poll::Ready(None) if ready.is_empty() => return Poll::Ready(None),
                Poll::Ready(None) | Poll::Pending if !ready.is_empty() => {
                    return Poll::Ready(Some(ready))
                }
                Poll::Ready(None) | Poll::Pending => return Poll::Pending,
            }
        }
    })
    .await
}

impl Actor for PluginActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(PLUGIN_MAILBOX_CAPACITY);
    }
}

impl<H: Dispatch> Handler<Relay<H>> for PluginActor {
    type Result = ();

    fn handle(&mut self, relay: Relay<H>, _: &mut Self::Context) {
        let Relay {
            mut jobs,
            mut spare,
            route,
            at,
        } = relay;
        // Inline calls are timed in one batch of every `LATENCY_SAMPLE_EVERY`: two clock reads
        // per batch were a measurable share of a single call. Calls that await are always timed.
        let sampled = self.batches % LATENCY_SAMPLE_EVERY == 0;
        self.batches = self.batches.wrapping_add(1);
        let started = sampled.then(Instant::now);
        let name = &route.names[at];
        let Some(hook) = H::slot(&self.table) else {
            for job in &mut jobs {
                let reason = HookError::msg("it does not implement this hook.").into_skip_reason();
                job.absorb(at, name, Err(reason));
            }
            return self.pass_on(jobs, spare, route, at + 1);
        };
        // Every call of the batch is this plugin's to handle: one add for the whole batch.
        self.metrics.called(H::KIND, jobs.len());
        let mut waiting = Vec::new();
        let mut index = 0;
        while index < jobs.len() {
            let job = &mut jobs[index];
            // The step's span (none at all when no subscriber wants the call's): a plugin that
            // logs or calls out does so under it.
            let step = job.step_span(name);
            let entered = step.as_ref().map(tracing::Span::enter);
            let answer = match hook {
                HookFn::Edit(f) => self.edit(f, job, &mut spare, (at, name)),
                _ => match self.call(hook, &job.cx, &job.value) {
                    Answer::Now(result) => {
                        job.absorb(at, name, result);
                        None
                    }
                    Answer::Later(later) => Some(later),
                },
            };
            match answer {
                None => {
                    if let Some(step) = &step {
                        job.record_step(step, at);
                    }
                    index += 1;
                }
                Some(later) => {
                    drop(entered);
                    waiting.push(Waiting {
                        job: jobs.remove(index),
                        later,
                        step: step.unwrap_or_else(tracing::Span::none),
                    });
                }
            }
        }
        if let Some(started) = started {
            record_share(self.metrics.latency(H::KIND), started.elapsed(), jobs.len());
        }
        if !waiting.is_empty() {
            self.resume(waiting, route.clone(), at);
        }
        self.pass_on(jobs, spare, route, at + 1);
    }
}

/// One batch in this many has its inline calls timed for the latency histograms.
const LATENCY_SAMPLE_EVERY: u64 = 64;

/// Records a sampled batch's inline time as each inline call's share of it: two clock reads per
/// sampled batch, not two per call, on the hot path.
fn record_share(latency: &Histogram, elapsed: Duration, count: usize) {
    let share = elapsed / u32::try_from(count.max(1)).unwrap_or(u32::MAX);
    for _ in 0..count {
        latency.record(share);
    }
}
