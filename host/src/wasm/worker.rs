//! The threads a component plugin's calls run on (docs/wasm.md "A component"): one per core (at
//! most [`MAX_WORKERS`]), each with an instance of its own (made at its first call; the first
//! thread's is the one the hello came from), fed through one bounded queue. A component's WASI
//! bindings drive a Tokio runtime of their own, which cannot be entered from an arbiter's
//! thread; and an interpreted guest (CPython, a JavaScript engine) is slow enough per call that
//! a thread hop does not show.
//!
//! A call whose caller has gone (its timeout passed while it queued, or the turn was cancelled)
//! is dropped unrun. A fault drops the instance; the next call gets a fresh one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use hookline_messages::note::SkipReason;
use hookline_messages::protocol::{ReplyBody, RequestId};
use tokio::sync::oneshot;
use wasmtime::component::InstancePre;

use super::component::{ComponentGuest, ComponentState, Grants};
use super::guest::{Fault, Limits};
use super::WasmError;

/// Calls queued for one component plugin at most; more are skipped as unavailable.
pub const QUEUE_BOUND: usize = 1024;

/// The most threads (and so instances) one component plugin runs on.
pub const MAX_WORKERS: usize = 4;

/// One queued call.
struct Job {
    id: RequestId,
    request: Vec<u8>,
    limit: Duration,
    reply: oneshot::Sender<Result<ReplyBody, Fault>>,
}

/// A component plugin's worker threads.
pub(crate) struct Worker {
    jobs: SyncSender<Job>,
    memory: Vec<Arc<AtomicUsize>>,
}

/// What the thread owns.
struct Runner {
    pre: InstancePre<ComponentState>,
    limits: Arc<Limits>,
    grants: Grants,
    guest: Option<ComponentGuest>,
    memory: Arc<AtomicUsize>,
}

impl Worker {
    /// Starts the threads, the first with `first` (the instance the hello came from).
    ///
    /// # Errors
    /// No thread could be started.
    pub(crate) fn start(
        pre: InstancePre<ComponentState>,
        limits: Arc<Limits>,
        grants: Grants,
        first: ComponentGuest,
    ) -> Result<Self, WasmError> {
        let (jobs, queue) = sync_channel(QUEUE_BOUND);
        let queue = Arc::new(Mutex::new(queue));
        let threads = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .clamp(1, MAX_WORKERS);
        let mut first = Some(first);
        let mut memory = Vec::with_capacity(threads);
        for index in 0..threads {
            let guest = first.take();
            let bytes = Arc::new(AtomicUsize::new(
                guest.as_ref().map_or(0, ComponentGuest::memory_bytes),
            ));
            let runner = Runner {
                pre: pre.clone(),
                limits: limits.clone(),
                grants: grants.clone(),
                guest,
                memory: bytes.clone(),
            };
            let queue = queue.clone();
            let started = std::thread::Builder::new()
                .name(format!("hookline-wasm-{}-{index}", limits.name))
                .spawn(move || runner.serve(&queue));
            match started {
                Ok(_) => memory.push(bytes),
                // One thread is enough to serve; none is a plugin that cannot run.
                Err(error) if memory.is_empty() => {
                    return Err(WasmError::Instantiate(format!(
                        "its thread could not start: {error}"
                    )))
                }
                Err(_) => break,
            }
        }
        Ok(Self { jobs, memory })
    }

    /// The linear memory of its instances, in bytes, as of their last calls.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.memory.iter().map(|m| m.load(Ordering::Relaxed)).sum()
    }

    /// Runs request `id` on the thread within `limit`.
    ///
    /// # Errors
    /// The call's [`Fault`]; a full queue or a stopped thread is [`SkipReason::Unavailable`].
    pub(crate) async fn call(
        &self,
        id: RequestId,
        request: Vec<u8>,
        limit: Duration,
    ) -> Result<ReplyBody, Fault> {
        let (reply, answer) = oneshot::channel();
        let job = Job {
            id,
            request,
            limit,
            reply,
        };
        match self.jobs.try_send(job) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                return Err(Fault::answer(SkipReason::Unavailable));
            }
        }
        answer
            .await
            .unwrap_or_else(|_| Err(Fault::answer(SkipReason::Unavailable)))
    }
}

impl Runner {
    /// Runs the queued calls until the plugin is dropped; the threads take turns waiting on
    /// the queue.
    fn serve(mut self, queue: &Mutex<Receiver<Job>>) {
        loop {
            let next = queue.lock().unwrap_or_else(PoisonError::into_inner).recv();
            let Ok(job) = next else { return };
            if job.reply.is_closed() {
                continue;
            }
            let result = self.run(job.id, &job.request, job.limit);
            let _ = job.reply.send(result);
        }
    }

    fn run(&mut self, id: RequestId, request: &[u8], limit: Duration) -> Result<ReplyBody, Fault> {
        let mut guest = match self.guest.take() {
            Some(guest) => guest,
            None => ComponentGuest::new(&self.pre, &self.limits, &self.grants).map_err(|error| {
                tracing::warn!(plugin = %self.limits.name, %error, "a fresh instance could not be made");
                Fault::answer(SkipReason::Unavailable)
            })?,
        };
        let result = guest.call(id, request, limit);
        self.memory.store(guest.memory_bytes(), Ordering::Relaxed);
        if result.is_ok() {
            // The instance may be anywhere in its work after a fault: never used again.
            self.guest = Some(guest);
        }
        result
    }
}
