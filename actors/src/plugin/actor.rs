//! The actor each plugin runs as. It owns the plugin's code, its timeouts and its latency
//! histograms, and runs hook calls under a timeout and a panic guard, so a failing plugin becomes
//! a skipped hook, never a dead actor (SPEC P1.4).
//!
//! Calls arrive in batches ([`Invoke`] carries many sessions' calls): one message per plugin per
//! batch instead of one per call. Each call's future is polled once inline; most in-process hooks
//! finish there, with no task and no timer. A call that is still pending continues as its own task
//! under its timeout and is answered with that task, so the finished calls of the batch move on
//! at once: a plugin that awaits for one session does not hold up another session's calls.

use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use actix::{Actor, Context, Handler, Message, MessageResult};
use futures::future::BoxFuture;
use futures::FutureExt;
use hookline_messages::hook::{HookContext, HookKind};
use hookline_messages::note::SkipReason;
use metrics::Histogram;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;

use super::dispatch::{Dispatch, Target};
use super::{HookError, HookResult, PluginRegistration, Reply, Timeouts};
use crate::events::EventHandler;

/// How many batches may wait in one plugin actor's mailbox. Its handler polls each call once and
/// returns, so the mailbox drains as fast as batches arrive; admission is bounded upstream.
pub(crate) const PLUGIN_MAILBOX_CAPACITY: usize = 1024;

/// What one plugin call produced: the plugin's reply, or why the call is skipped.
pub type CallResult<T> = Result<Reply<T>, SkipReason>;

/// One loaded plugin, as an actor.
pub struct PluginActor {
    name: Arc<str>,
    target: Target,
    timeouts: Timeouts,
    one_at_a_time: Option<Arc<Semaphore>>,
    latency: Arc<[Histogram]>,
    /// Batches handled so far, for sampling their latency.
    batches: u64,
    /// The plugin's gateway event handler, if it registered one (see `crate::events`).
    pub(crate) events: Option<Arc<dyn EventHandler>>,
    /// The timeout of one event handler call.
    pub(crate) event_timeout: Duration,
}

impl PluginActor {
    /// An actor for `registration`. Start it with [`Actor::start`] on the arbiter of the
    /// coordinator that will call it: a hop to another thread costs tens of microseconds.
    pub fn new(registration: &PluginRegistration) -> Self {
        let name = registration.name.clone();
        let latency = HookKind::ALL
            .iter()
            .map(|hook| {
                metrics::histogram!(
                    "hookline_hook_seconds",
                    "hook" => hook.wire_name(),
                    "plugin" => name.to_string()
                )
            })
            .collect();
        Self {
            name,
            target: Target {
                hooks: registration.hooks.clone(),
                raw_hooks: registration.raw_hooks.clone(),
            },
            timeouts: registration.timeouts,
            one_at_a_time: registration
                .one_at_a_time
                .then(|| Arc::new(Semaphore::new(1))),
            latency,
            batches: 0,
            events: registration.events.clone(),
            event_timeout: registration.event_timeout,
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
}

impl Actor for PluginActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(PLUGIN_MAILBOX_CAPACITY);
    }
}

/// Asks a plugin actor to run hook `H` on a batch of values, one per call (usually one per
/// session). The reply has one [`Invoked`] per call, in the same order.
///
/// Rules are not checked here; the coordinator checks them.
pub struct Invoke<H: Dispatch> {
    /// The calls: each one's context and the value its hook sees.
    pub calls: Vec<(HookContext, H::Value)>,
    _hook: PhantomData<fn() -> H>,
}

impl<H: Dispatch> Invoke<H> {
    /// A request to run `H` on each of `calls`.
    pub fn new(calls: Vec<(HookContext, H::Value)>) -> Self {
        Self {
            calls,
            _hook: PhantomData,
        }
    }
}

impl<H: Dispatch> Message for Invoke<H> {
    type Result = Vec<Invoked<H::Value>>;
}

/// One call's answer to [`Invoke`]: finished inline, or still running as its own task.
pub enum Invoked<T> {
    /// The call finished when first polled.
    Done(CallResult<T>),
    /// The call awaits; its task ends with the result (under the plugin's timeout).
    Later(JoinHandle<CallResult<T>>),
}

impl<H: Dispatch> Handler<Invoke<H>> for PluginActor {
    type Result = MessageResult<Invoke<H>>;

    /// Answers at once: calls that finished inline with their result, the others with the task
    /// that finishes them, so the caller can move the finished ones on without waiting.
    fn handle(&mut self, msg: Invoke<H>, _: &mut Self::Context) -> Self::Result {
        // Inline calls are timed in one batch of every `LATENCY_SAMPLE_EVERY`: two clock reads
        // per batch were ~8% of a single call's cost. Calls that await are always timed.
        let sampled = self.batches % LATENCY_SAMPLE_EVERY == 0;
        self.batches = self.batches.wrapping_add(1);
        let started = sampled.then(Instant::now);
        let latency = &self.latency[H::KIND as usize];
        let limit = self.timeouts.get(H::KIND);
        let answers = msg
            .calls
            .into_iter()
            .map(|(cx, value)| {
                let call = H::dispatch(&self.target, cx, value);
                match poll_once(call, self.one_at_a_time.as_ref()) {
                    Polled::Ready(result) => Invoked::Done(result),
                    Polled::Pending(call, permit) => {
                        let gate = self.one_at_a_time.clone();
                        let latency = latency.clone();
                        let started = started.unwrap_or_else(Instant::now);
                        Invoked::Later(actix_rt::spawn(async move {
                            let result = finish(call, permit, gate, limit).await;
                            latency.record(started.elapsed());
                            result
                        }))
                    }
                }
            })
            .collect::<Vec<_>>();
        if let Some(started) = started {
            let inline = answers
                .iter()
                .filter(|a| matches!(a, Invoked::Done(_)))
                .count();
            record_share(latency, started.elapsed(), inline);
        }
        MessageResult(answers)
    }
}

/// One batch in this many has its inline calls timed for the latency histograms.
const LATENCY_SAMPLE_EVERY: u64 = 16;

/// Records a sampled batch's inline time as each inline call's share of it: two clock reads per
/// sampled batch, not two per call, on the hot path.
fn record_share(latency: &Histogram, elapsed: Duration, count: usize) {
    let share = elapsed / u32::try_from(count.max(1)).unwrap_or(u32::MAX);
    for _ in 0..count {
        latency.record(share);
    }
}

/// A call polled once: its result, or the call (and the gate's permit, if it took it) to finish
/// later.
pub(crate) enum Polled<T> {
    Ready(Result<T, SkipReason>),
    Pending(
        BoxFuture<'static, HookResult<T>>,
        Option<OwnedSemaphorePermit>,
    ),
}

/// Polls a plugin call once, on this thread, under a panic guard. A plugin that takes one call at
/// a time is polled only if no earlier call of it is still running; otherwise it waits its turn
/// on the slow path.
pub(crate) fn poll_once<T>(
    mut call: BoxFuture<'static, HookResult<T>>,
    gate: Option<&Arc<Semaphore>>,
) -> Polled<T> {
    let permit = match gate.map(|g| g.clone().try_acquire_owned()) {
        None => None,
        Some(Ok(permit)) => Some(permit),
        Some(Err(_busy)) => return Polled::Pending(call, None),
    };
    let mut cx = TaskContext::from_waker(futures::task::noop_waker_ref());
    match catch_unwind(AssertUnwindSafe(|| call.as_mut().poll(&mut cx))) {
        Err(_panic) => Polled::Ready(Err(SkipReason::Panicked)),
        Ok(Poll::Ready(result)) => Polled::Ready(settle(result)),
        Ok(Poll::Pending) => Polled::Pending(call, permit),
    }
}

/// Runs one plugin call (a hook or an event handler) under its timeout, a panic guard, and (if
/// any) its one-at-a-time gate. The timeout covers waiting at the gate: no wait is unbounded.
pub(crate) async fn guarded<T>(
    call: impl std::future::Future<Output = HookResult<T>>,
    limit: Duration,
    gate: Option<Arc<Semaphore>>,
) -> Result<T, SkipReason> {
    finish(call, None, gate, limit).await
}

/// Finishes a call that did not complete inline: under its timeout (which also bounds the wait
/// for a one-at-a-time plugin's turn) and a panic guard. `permit` is the gate's permit when the
/// call already holds it.
pub(crate) async fn finish<T>(
    call: impl std::future::Future<Output = HookResult<T>>,
    permit: Option<OwnedSemaphorePermit>,
    gate: Option<Arc<Semaphore>>,
    limit: Duration,
) -> Result<T, SkipReason> {
    let run = async move {
        let _permit = match (permit, gate) {
            (Some(permit), _) => Some(permit),
            (None, Some(gate)) => gate.acquire_owned().await.ok(),
            (None, None) => None,
        };
        AssertUnwindSafe(call).catch_unwind().await
    };
    match tokio::time::timeout(limit, run).await {
        Err(_elapsed) => Err(SkipReason::timed_out(limit)),
        Ok(Err(_panic)) => Err(SkipReason::Panicked),
        Ok(Ok(result)) => settle(result),
    }
}

fn settle<T>(result: HookResult<T>) -> Result<T, SkipReason> {
    result.map_err(HookError::into_skip_reason)
}
