//! The actor each plugin runs as. It owns the plugin's code, its timeouts and its latency
//! histograms, and runs each hook call under a timeout and a panic guard, so a failing plugin
//! becomes a skipped hook, never a dead actor (SPEC P1.4).

use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::{Actor, Context, Handler, Message, ResponseFuture};
use futures::FutureExt;
use hookline_messages::hook::{HookContext, HookKind};
use hookline_messages::note::SkipReason;
use metrics::Histogram;
use tokio::sync::Semaphore;

use super::dispatch::{Dispatch, Target};
use super::{HookResult, PluginRegistration, Reply, Timeouts};

/// How many hook calls may wait in one plugin actor's mailbox. Its handler only starts a task,
/// so the mailbox drains as fast as calls arrive; the bound is on admitted calls upstream.
pub(crate) const PLUGIN_MAILBOX_CAPACITY: usize = 4096;

/// One loaded plugin, as an actor.
pub struct PluginActor {
    name: Arc<str>,
    target: Target,
    timeouts: Timeouts,
    one_at_a_time: Option<Arc<Semaphore>>,
    latency: Arc<[Histogram]>,
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
        }
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl Actor for PluginActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(PLUGIN_MAILBOX_CAPACITY);
    }
}

/// Asks a plugin actor to run hook `H` on `value`.
///
/// The reply is the plugin's [`Reply`] or the reason the call is skipped: the plugin's error, a
/// panic, or its timeout. Rules are not checked here; the coordinator checks them.
pub struct Invoke<H: Dispatch> {
    /// The call's context.
    pub context: HookContext,
    /// The value the hook sees.
    pub value: H::Value,
    _hook: PhantomData<fn() -> H>,
}

impl<H: Dispatch> Invoke<H> {
    /// A request to run `H` on `value`.
    pub fn new(context: HookContext, value: H::Value) -> Self {
        Self {
            context,
            value,
            _hook: PhantomData,
        }
    }
}

impl<H: Dispatch> Message for Invoke<H> {
    type Result = Result<Reply<H::Value>, SkipReason>;
}

impl<H: Dispatch> Handler<Invoke<H>> for PluginActor {
    type Result = ResponseFuture<Result<Reply<H::Value>, SkipReason>>;

    /// Starts the call as its own task, so a plugin that awaits for one session does not hold up
    /// another session's calls (unless it runs one call at a time).
    fn handle(&mut self, msg: Invoke<H>, _: &mut Self::Context) -> Self::Result {
        let call = H::dispatch(&self.target, msg.context, msg.value);
        let limit = self.timeouts.get(H::KIND);
        let gate = self.one_at_a_time.clone();
        let latency = self.latency[H::KIND as usize].clone();
        Box::pin(async move {
            let started = Instant::now();
            let outcome = guarded(call, limit, gate).await;
            latency.record(started.elapsed());
            outcome
        })
    }
}

/// Runs one plugin call under its timeout, a panic guard, and (if any) its one-at-a-time gate.
/// The timeout covers waiting at the gate: no wait is unbounded.
async fn guarded<T>(
    call: impl std::future::Future<Output = HookResult<Reply<T>>>,
    limit: Duration,
    gate: Option<Arc<Semaphore>>,
) -> Result<Reply<T>, SkipReason> {
    let run = async move {
        let _permit = match &gate {
            Some(gate) => Some(gate.acquire().await),
            None => None,
        };
        AssertUnwindSafe(call).catch_unwind().await
    };
    match tokio::time::timeout(limit, run).await {
        Err(_elapsed) => Err(SkipReason::timed_out(limit)),
        Ok(Err(_panic)) => Err(SkipReason::Panicked),
        Ok(Ok(Err(error))) => Err(SkipReason::failed(error.message())),
        Ok(Ok(Ok(reply))) => Ok(reply),
    }
}
