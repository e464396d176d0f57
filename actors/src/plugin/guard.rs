//! The one "answered now or later" type and the guards every plugin call runs under: a panic
//! guard for a call that answers inline, and a timeout, a panic guard and the one-at-a-time gate
//! for a call that awaits. Hook calls and event handler calls both use them.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::FutureExt;
use hookline_messages::note::SkipReason;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{HookError, HookResult};

/// A plugin call's answer: ready now (no task, no timer), or a future that finishes it later
/// (already under its timeout and panic guard). The one "now or later" type of the actor layer,
/// like actix's `Response::reply` / `Response::fut`.
pub enum Answer<T> {
    /// The call finished inline.
    Now(T),
    /// The call awaits; the future ends with its result.
    Later(BoxFuture<'static, T>),
}

impl<T: Send + 'static> Answer<T> {
    /// Waits for the answer, whichever it is.
    pub async fn get(self) -> T {
        match self {
            Self::Now(value) => value,
            Self::Later(future) => future.await,
        }
    }

    /// Maps the answer, now or later.
    pub fn map<U>(self, f: impl FnOnce(T) -> U + Send + 'static) -> Answer<U> {
        match self {
            Self::Now(value) => Answer::Now(f(value)),
            Self::Later(future) => Answer::Later(Box::pin(future.map(f))),
        }
    }
}

/// Runs a synchronous plugin call under a panic guard (SPEC P1.4: a panic is a skipped hook).
pub(crate) fn run_now<T>(call: impl FnOnce() -> HookResult<T>) -> Result<T, SkipReason> {
    match catch_unwind(AssertUnwindSafe(call)) {
        Err(_panic) => Err(SkipReason::Panicked),
        Ok(result) => settle(result),
    }
}

/// Polls an awaiting plugin call once, on this thread, under a panic guard: most in-process calls
/// finish there. One that does not finishes later under `limit` and the gate. A plugin that takes
/// one call at a time is polled only if no earlier call of it is still running; otherwise it
/// waits its turn on the slow path (the wait counts toward its timeout).
pub(crate) fn poll_once<T: Send + 'static>(
    mut call: BoxFuture<'static, HookResult<T>>,
    gate: Option<&Arc<Semaphore>>,
    limit: Duration,
) -> Answer<Result<T, SkipReason>> {
    let permit = match gate.map(|g| g.clone().try_acquire_owned()) {
        None => None,
        Some(Ok(permit)) => Some(permit),
        Some(Err(_busy)) => {
            let gate = gate.cloned();
            return Answer::Later(Box::pin(finish(call, None, gate, limit)));
        }
    };
    let mut cx = TaskContext::from_waker(futures::task::noop_waker_ref());
    match catch_unwind(AssertUnwindSafe(|| call.as_mut().poll(&mut cx))) {
        Err(_panic) => Answer::Now(Err(SkipReason::Panicked)),
        Ok(Poll::Ready(result)) => Answer::Now(settle(result)),
        Ok(Poll::Pending) => {
            let gate = gate.cloned();
            Answer::Later(Box::pin(finish(call, permit, gate, limit)))
        }
    }
}

/// Runs one plugin call under its timeout, a panic guard, and (if any) its one-at-a-time gate.
/// The timeout covers waiting at the gate: no wait is unbounded.
pub(crate) async fn guarded<T>(
    call: impl Future<Output = HookResult<T>>,
    limit: Duration,
    gate: Option<Arc<Semaphore>>,
) -> Result<T, SkipReason> {
    finish(call, None, gate, limit).await
}

/// Finishes a call that did not complete inline: under its timeout (which also bounds the wait
/// for a one-at-a-time plugin's turn) and a panic guard. `permit` is the gate's permit when the
/// call already holds it.
pub(crate) async fn finish<T>(
    call: impl Future<Output = HookResult<T>>,
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
