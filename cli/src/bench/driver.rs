//! Closed- and open-loop drivers over a running [`Pipeline`] (and, for the closed loop, over any
//! call: the peers of `super::peers` use the same one).
//!
//! The closed loop runs each session's loop on the arbiter of the session's shard, as a server
//! runs a session's turn there ([`Pipeline::arbiter_for`]). The open loop runs on a thread of its
//! own and sends across threads, so its schedule never waits for the pipeline's threads.

use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;
use std::time::{Duration, Instant};

use actix::Arbiter;
use futures::future::join_all;
use futures::stream::{FuturesUnordered, StreamExt as _};
use futures::FutureExt as _;
use hdrhistogram::Histogram;
use hookline_actors::{Pipeline, PipelineError, SessionKey};
use hookline_messages::session::SessionId;
use tokio::sync::oneshot;

use super::hook::BenchHook;

/// Told about progress while a run goes on (the CLI draws a progress bar with it).
pub trait Progress {
    /// `done` of the run's `total` time has passed.
    fn tick(&self, done: Duration, total: Duration);
}

impl Progress for () {
    fn tick(&self, _: Duration, _: Duration) {}
}

/// What one run measured: latencies in nanoseconds, the calls made, the time taken.
#[derive(Debug)]
pub struct Measured {
    /// Per-call latency, nanoseconds.
    pub histogram: Histogram<u64>,
    /// Calls completed.
    pub calls: u64,
    /// Calls the pipeline refused as overloaded (open loop only; a closed loop never sheds).
    pub shed: u64,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl Measured {
    /// Adds another part of the same run (another arbiter's sessions): histograms added, calls
    /// summed, the longest wall time.
    pub fn merge(&mut self, other: &Measured) {
        let _ = self.histogram.add(&other.histogram);
        self.calls += other.calls;
        self.shed += other.shed;
        self.elapsed = self.elapsed.max(other.elapsed);
    }

    /// Adds a later stretch of the same measurement (another round): histograms added, calls
    /// and wall times summed.
    pub fn extend(&mut self, later: &Measured) {
        let _ = self.histogram.add(&later.histogram);
        self.calls += later.calls;
        self.shed += later.shed;
        self.elapsed += later.elapsed;
    }
}

#[allow(clippy::expect_used)] // constant arguments that hdrhistogram documents as valid
pub(crate) fn new_histogram() -> Histogram<u64> {
    // 1 ns to 60 s at 3 significant figures: every latency this runtime can produce fits.
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid histogram bounds")
}

/// The benchmark's session ids, `bench-0` ...
pub fn session_ids(count: usize) -> Vec<SessionId> {
    (0..count.max(1))
        .map(|i| SessionId::new(format!("bench-{i}")))
        .collect()
}

/// Runs each of `sessions` as a loop of `call`s back to back, on this thread, for `duration`.
///
/// # Errors
/// The first error a call returned.
pub async fn closed_loop<S, E, F, Fut>(
    sessions: &[S],
    duration: Duration,
    progress: &dyn Progress,
    call: F,
) -> Result<Measured, E>
where
    F: Fn(&S) -> Fut,
    Fut: Future<Output = Result<(), E>>,
{
    let histogram = Rc::new(RefCell::new(new_histogram()));
    let started = Instant::now();
    let deadline = started + duration;
    let workers = sessions.iter().enumerate().map(|(i, session)| {
        let (histogram, call) = (histogram.clone(), &call);
        async move {
            let mut calls = 0u64;
            // One clock read per call: a call's end is the next one's start.
            let mut sent = Instant::now();
            while sent < deadline {
                call(session).await?;
                let ended = Instant::now();
                // A value beyond the histogram's range is dropped from it, never a failure.
                let _ = histogram.borrow_mut().record(nanos(ended - sent));
                sent = ended;
                calls += 1;
                if i == 0 && calls % 1024 == 0 {
                    progress.tick(started.elapsed(), duration);
                }
            }
            Ok::<u64, E>(calls)
        }
    });
    let calls = join_all(workers)
        .await
        .into_iter()
        .sum::<Result<u64, E>>()?;
    let elapsed = started.elapsed();
    let histogram = histogram.borrow().clone();
    Ok(Measured {
        histogram,
        calls,
        shed: 0,
        elapsed,
    })
}

/// Runs `work` once per shard of `pipeline`, on that shard's arbiter, with the sessions of
/// `sessions` that map to it; returns what each run returned.
pub async fn on_shards<T, F, Fut>(pipeline: &Pipeline, sessions: Vec<SessionId>, work: F) -> Vec<T>
where
    T: Send + 'static,
    F: Fn(Vec<SessionId>) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = T> + 'static,
{
    let mut groups = vec![Vec::new(); pipeline.shards()];
    for session in sessions {
        groups[pipeline.shard_of(&session)].push(session);
    }
    let runs = groups
        .into_iter()
        .enumerate()
        .filter(|(_, group)| !group.is_empty())
        .filter_map(|(index, group)| {
            let arbiter = pipeline.shard_arbiter(index)?;
            let (done, result) = oneshot::channel();
            let work = work.clone();
            arbiter.spawn_fn(move || {
                actix_rt::spawn(async move {
                    let _ = done.send(work(group).await);
                });
            });
            Some(result)
        });
    join_all(runs)
        .await
        .into_iter()
        .filter_map(Result::ok)
        .collect()
}

/// Opens each of `ids` on `pipeline` ([`Pipeline::open_session`]): the keys their calls are made
/// with, as a host that opened its sessions makes them (no hashing per call).
///
/// # Errors
/// [`PipelineError::Stopped`] when a shard is gone.
pub async fn open_sessions(
    pipeline: &Pipeline,
    ids: &[SessionId],
) -> Result<Vec<SessionKey>, PipelineError> {
    let mut keys = Vec::with_capacity(ids.len());
    for id in ids {
        keys.push(pipeline.open_session(id).await?);
    }
    Ok(keys)
}

/// Runs `sessions` sessions, each issuing calls of `hook` back to back, for `duration`; each
/// session is opened first ([`open_sessions`]) and its loop runs on its shard's arbiter.
///
/// # Errors
/// The first [`PipelineError`] a call returned.
pub async fn run_closed_loop(
    pipeline: &Pipeline,
    hook: BenchHook,
    sessions: usize,
    duration: Duration,
) -> Result<Measured, PipelineError> {
    let runner = pipeline.clone();
    let parts = on_shards(pipeline, session_ids(sessions), move |ids| {
        let pipeline = runner.clone();
        async move {
            let keys = open_sessions(&pipeline, &ids).await?;
            closed_loop(&keys, duration, &(), |key| {
                let (pipeline, key) = (&pipeline, key.clone());
                async move { hook.call(pipeline, key).await }
            })
            .await
        }
    })
    .await;
    merge(parts)
}

/// As [`run_closed_loop`], with each shard's sessions split into callers of at most `batch`
/// sessions, each making its sessions' calls with one [`Pipeline::call_many`] and the next batch
/// when that one is answered (a server that holds many sessions' calls at once). Each call is
/// recorded with its batch's latency.
///
/// # Errors
/// The first [`PipelineError`] other than `Overloaded` that a call returned.
pub async fn run_closed_loop_batched(
    pipeline: &Pipeline,
    hook: BenchHook,
    sessions: usize,
    batch: usize,
    duration: Duration,
) -> Result<Measured, PipelineError> {
    let runner = pipeline.clone();
    let parts = on_shards(pipeline, session_ids(sessions), move |ids| {
        let pipeline = runner.clone();
        async move { batched_loop(&pipeline, hook, &ids, batch, duration).await }
    })
    .await;
    merge(parts)
}

/// One shard's callers of [`run_closed_loop_batched`].
async fn batched_loop(
    pipeline: &Pipeline,
    hook: BenchHook,
    ids: &[SessionId],
    batch: usize,
    duration: Duration,
) -> Result<Measured, PipelineError> {
    let keys = open_sessions(pipeline, ids).await?;
    let histogram = RefCell::new(new_histogram());
    let started = Instant::now();
    let deadline = started + duration;
    let shed = RefCell::new(0u64);
    let callers = keys.chunks(batch.max(1)).map(|group| {
        let (histogram, shed) = (&histogram, &shed);
        async move {
            let mut calls = 0u64;
            let mut sent = Instant::now();
            while sent < deadline {
                let mut refused = 0;
                let made = hook.call_many(pipeline, group, &mut refused).await?;
                let ended = Instant::now();
                let _ = histogram.borrow_mut().record_n(nanos(ended - sent), made);
                *shed.borrow_mut() += refused;
                sent = ended;
                calls += made;
            }
            Ok::<u64, PipelineError>(calls)
        }
    });
    let calls = join_all(callers)
        .await
        .into_iter()
        .sum::<Result<u64, PipelineError>>()?;
    Ok(Measured {
        histogram: histogram.into_inner(),
        calls,
        shed: shed.into_inner(),
        elapsed: started.elapsed(),
    })
}

/// Merges the parts of one run.
///
/// # Errors
/// The first part's error, or [`PipelineError::Stopped`] when no part ran.
pub(super) fn merge<E>(parts: Vec<Result<Measured, E>>) -> Result<Measured, E>
where
    E: From<PipelineError>,
{
    let mut merged: Option<Measured> = None;
    for part in parts {
        let part = part?;
        match &mut merged {
            None => merged = Some(part),
            Some(into) => into.merge(&part),
        }
    }
    merged.ok_or_else(|| PipelineError::Stopped.into())
}

/// Offers `rate` calls of `hook` per second for `duration`, spread over `sessions` sessions
/// round-robin, from a thread of its own; each call is issued on its schedule whether or not
/// earlier ones finished, and its latency is measured from when it was due (so queueing, and any
/// lag of the driver itself, counts: no coordinated omission). Calls refused with
/// [`PipelineError::Overloaded`] are counted as shed, not fatal.
///
/// # Errors
/// The first [`PipelineError`] other than `Overloaded` that a call returned.
pub async fn run_open_loop(
    pipeline: &Pipeline,
    hook: BenchHook,
    sessions: usize,
    rate: u64,
    duration: Duration,
    batch: Option<usize>,
) -> Result<Measured, PipelineError> {
    let driver = Arbiter::new();
    let (done, result) = oneshot::channel();
    let pipeline = pipeline.clone();
    driver.spawn_fn(move || {
        actix_rt::spawn(async move {
            let shape = Shape {
                hook,
                sessions,
                rate,
                duration,
                batch,
            };
            // Out of tokio's cooperative budget: the driver settles thousands of answers per
            // turn, and a spent budget made each answer's poll yield and wake itself again.
            let measured = tokio::task::unconstrained(open_loop(&pipeline, shape)).await;
            let _ = done.send(measured);
        });
    });
    let measured = result.await.unwrap_or(Err(PipelineError::Stopped));
    driver.stop();
    measured
}

/// The open loop itself: checks the schedule each time the runtime gets back to it (it yields
/// between checks) rather than arming a timer per call: tokio's timers tick in milliseconds, far
/// coarser than the microseconds between calls at these rates.
///
/// With `batch`, the calls that fell due since the driver last looked go out together with one
/// [`Pipeline::call_many`] (at most `batch` per call), as a server handing a tick's calls over.
async fn open_loop(pipeline: &Pipeline, shape: Shape) -> Result<Measured, PipelineError> {
    let Shape {
        hook,
        sessions,
        rate,
        duration,
        batch,
    } = shape;
    let mut histogram = new_histogram();
    let sessions = session_ids(sessions);
    let per_call = 1.0 / rate.max(1) as f64;
    let started = Instant::now();
    let mut in_flight = FuturesUnordered::new();
    let (mut issued, mut completed, mut shed) = (0u64, 0u64, 0u64);
    let mut first_error = None;
    let mut settle = |answers: Vec<(Instant, Result<(), PipelineError>)>| {
        for (due, outcome) in answers {
            match outcome {
                Ok(()) => {
                    completed += 1;
                    let _ = histogram.record(nanos(due.elapsed()));
                }
                Err(PipelineError::Overloaded) => shed += 1,
                Err(error) => {
                    first_error.get_or_insert(error);
                }
            }
        }
    };
    let batch = batch.unwrap_or(1).max(1);
    while started.elapsed() < duration {
        let due_now = (started.elapsed().as_secs_f64() / per_call) as u64;
        while issued < due_now {
            let count = (due_now - issued).min(batch as u64);
            let group: Vec<(Instant, SessionId)> = (issued..issued + count)
                .map(|n| {
                    let due = started + Duration::from_secs_f64(n as f64 * per_call);
                    (due, sessions[(n % sessions.len() as u64) as usize].clone())
                })
                .collect();
            issued += count;
            if let [(due, session)] = &group[..] {
                // Admitted (or shed) now, when it is due; only the answer is awaited later.
                let (due, answer) = (*due, hook.issue(pipeline, session));
                in_flight.push(Box::pin(async move { vec![(due, answer.await)] }) as Batch<'_>);
                continue;
            }
            in_flight.push(Box::pin(async move {
                let ids: Vec<SessionId> = group.iter().map(|(_, s)| s.clone()).collect();
                let answers = hook.call_each(pipeline, &ids).await;
                group.iter().map(|(due, _)| *due).zip(answers).collect()
            }));
        }
        while let Some(Some(done)) = in_flight.next().now_or_never() {
            settle(done);
        }
        tokio::task::yield_now().await;
    }
    while let Some(done) = in_flight.next().await {
        settle(done);
    }
    if let Some(error) = first_error {
        return Err(error);
    }
    Ok(Measured {
        histogram,
        calls: completed,
        shed,
        elapsed: started.elapsed(),
    })
}

/// The open loop's shape: what it calls, how often, for how long, and how many calls it hands
/// over at once.
/// The answers of one group of calls the open loop issued, with when each was due.
type Batch<'a> =
    std::pin::Pin<Box<dyn Future<Output = Vec<(Instant, Result<(), PipelineError>)>> + 'a>>;

struct Shape {
    hook: BenchHook,
    sessions: usize,
    rate: u64,
    duration: Duration,
    batch: Option<usize>,
}

/// Runs about `calls` `on_user_message` calls through `pipeline`, spread over `sessions` sessions
/// in flight (each on its shard's arbiter), and returns the wall time scaled to exactly `calls`
/// calls. The criterion benches time their `iter_custom` loops with it.
pub async fn drive_calls(pipeline: &Pipeline, sessions: usize, calls: u64) -> Duration {
    let sessions = sessions.max(1);
    let per_session = calls.div_ceil(sessions as u64).max(1);
    let ids: Vec<SessionId> = (0..sessions)
        .map(|i| SessionId::new(format!("s{i}")))
        .collect();
    let runner = pipeline.clone();
    let started = Instant::now();
    on_shards(pipeline, ids, move |ids| {
        let pipeline = runner.clone();
        async move {
            join_all(ids.iter().map(|session| {
                let pipeline = &pipeline;
                async move {
                    for _ in 0..per_session {
                        let outcome = BenchHook::OnUserMessage.call(pipeline, session).await;
                        std::hint::black_box(outcome.is_ok());
                    }
                }
            }))
            .await;
        }
    })
    .await;
    let made = per_session * sessions as u64;
    started.elapsed().mul_f64(calls as f64 / made as f64)
}

pub(crate) fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}
