//! Closed- and open-loop drivers over a running [`Pipeline`].

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use futures::stream::{FuturesUnordered, StreamExt as _};
use futures::FutureExt as _;
use hdrhistogram::Histogram;
use hookline_actors::{Pipeline, PipelineError};
use hookline_messages::session::SessionId;

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

#[allow(clippy::expect_used)] // constant arguments that hdrhistogram documents as valid
pub(super) fn new_histogram() -> Histogram<u64> {
    // 1 ns to 60 s at 3 significant figures: every latency this runtime can produce fits.
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("valid histogram bounds")
}

/// Runs `sessions` sessions, each issuing calls of `hook` back to back, for `duration`.
///
/// # Errors
/// The first [`PipelineError`] a call returned.
pub async fn run_closed_loop(
    pipeline: &Pipeline,
    hook: BenchHook,
    sessions: usize,
    duration: Duration,
    progress: &dyn Progress,
) -> Result<Measured, PipelineError> {
    let histogram = Rc::new(RefCell::new(new_histogram()));
    let started = Instant::now();
    let deadline = started + duration;
    let workers = (0..sessions.max(1)).map(|i| {
        let session = SessionId::new(format!("bench-{i}"));
        let histogram = histogram.clone();
        async move {
            let mut calls = 0u64;
            while Instant::now() < deadline {
                one_call(pipeline, hook, &session, &histogram).await?;
                calls += 1;
                if i == 0 && calls % 1024 == 0 {
                    progress.tick(started.elapsed(), duration);
                }
            }
            Ok::<u64, PipelineError>(calls)
        }
    });
    let calls = join_all(workers)
        .await
        .into_iter()
        .sum::<Result<u64, _>>()?;
    let elapsed = started.elapsed();
    let histogram = histogram.borrow().clone();
    Ok(Measured {
        histogram,
        calls,
        shed: 0,
        elapsed,
    })
}

/// Offers `rate` calls of `hook` per second for `duration`, spread over `sessions` sessions
/// round-robin; each call is issued on its schedule whether or not earlier ones finished, and its
/// latency is measured from when it was due (so queueing, and any lag of the driver itself, counts:
/// no coordinated omission). Calls refused with [`PipelineError::Overloaded`] are counted as shed,
/// not fatal.
///
/// The driver checks the schedule each time the runtime gets back to it (it yields between
/// checks) rather than arming a timer per call: tokio's timers tick in milliseconds, far coarser
/// than the microseconds between calls at these rates.
///
/// # Errors
/// The first [`PipelineError`] other than `Overloaded` that a call returned.
pub async fn run_open_loop(
    pipeline: &Pipeline,
    hook: BenchHook,
    sessions: usize,
    rate: u64,
    duration: Duration,
    progress: &dyn Progress,
) -> Result<Measured, PipelineError> {
    let mut histogram = new_histogram();
    let sessions: Vec<SessionId> = (0..sessions.max(1))
        .map(|i| SessionId::new(format!("bench-{i}")))
        .collect();
    let per_call = 1.0 / rate.max(1) as f64;
    let started = Instant::now();
    let mut in_flight = FuturesUnordered::new();
    let (mut issued, mut completed, mut shed) = (0u64, 0u64, 0u64);
    let mut first_error = None;
    let mut settle = |(due, outcome): (Instant, Result<(), PipelineError>)| match outcome {
        Ok(()) => {
            completed += 1;
            let _ = histogram.record(nanos(due.elapsed()));
        }
        Err(PipelineError::Overloaded) => shed += 1,
        Err(error) => {
            first_error.get_or_insert(error);
        }
    };
    while started.elapsed() < duration {
        let due_now = (started.elapsed().as_secs_f64() / per_call) as u64;
        while issued < due_now {
            let due = started + Duration::from_secs_f64(issued as f64 * per_call);
            let session = &sessions[(issued % sessions.len() as u64) as usize];
            in_flight.push(async move { (due, hook.call(pipeline, session).await) });
            issued += 1;
            if issued % 4096 == 0 {
                progress.tick(started.elapsed(), duration);
            }
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

/// Runs about `calls` `on_user_message` calls through `pipeline`, spread over `sessions` sessions
/// in flight, and returns the wall time scaled to exactly `calls` calls. The criterion benches
/// time their `iter_custom` loops with it.
pub async fn drive_calls(pipeline: &Pipeline, sessions: usize, calls: u64) -> Duration {
    let sessions = sessions.max(1);
    let per_session = calls.div_ceil(sessions as u64).max(1);
    let started = Instant::now();
    join_all((0..sessions).map(|i| {
        let session = SessionId::new(format!("s{i}"));
        async move {
            for _ in 0..per_session {
                let outcome = BenchHook::OnUserMessage.call(pipeline, &session).await;
                std::hint::black_box(outcome.is_ok());
            }
        }
    }))
    .await;
    let made = per_session * sessions as u64;
    started.elapsed().mul_f64(calls as f64 / made as f64)
}

async fn one_call(
    pipeline: &Pipeline,
    hook: BenchHook,
    session: &SessionId,
    histogram: &RefCell<Histogram<u64>>,
) -> Result<(), PipelineError> {
    let started = Instant::now();
    hook.call(pipeline, session).await?;
    // A value beyond the histogram's range is dropped from it, never a failure.
    let _ = histogram.borrow_mut().record(nanos(started.elapsed()));
    Ok(())
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}
