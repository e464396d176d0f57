//! Closed- and open-loop drivers over a running [`Pipeline`].

use std::cell::RefCell;
use std::rc::Rc;
use std::time::{Duration, Instant};

use futures::future::join_all;
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
        elapsed,
    })
}

/// Offers `rate` calls of `hook` per second for `duration`, spread over `sessions` sessions, each call
/// started on schedule whether or not earlier ones finished (latency includes queueing).
///
/// # Errors
/// The first [`PipelineError`] a call returned.
pub async fn run_open_loop(
    pipeline: &Pipeline,
    hook: BenchHook,
    sessions: usize,
    rate: u64,
    duration: Duration,
    progress: &dyn Progress,
) -> Result<Measured, PipelineError> {
    let histogram = Rc::new(RefCell::new(new_histogram()));
    let sessions: Vec<SessionId> = (0..sessions.max(1))
        .map(|i| SessionId::new(format!("bench-{i}")))
        .collect();
    let interval = Duration::from_nanos(1_000_000_000 / rate.max(1));
    let started = Instant::now();
    let mut handles = Vec::new();
    let mut next = started;
    let mut issued = 0u64;
    while next < started + duration {
        tokio::time::sleep_until(next.into()).await;
        let pipeline = pipeline.clone();
        let session = sessions[(issued % sessions.len() as u64) as usize].clone();
        let histogram = histogram.clone();
        let scheduled = next;
        handles.push(actix_rt::spawn(async move {
            let outcome = hook.call(&pipeline, &session).await;
            let _ = histogram.borrow_mut().record(nanos(scheduled.elapsed()));
            outcome
        }));
        issued += 1;
        next += interval;
        if issued % 1024 == 0 {
            progress.tick(started.elapsed(), duration);
        }
    }
    for handle in handles {
        if let Ok(Err(error)) = handle.await {
            return Err(error);
        }
    }
    let elapsed = started.elapsed();
    let histogram = histogram.borrow().clone();
    Ok(Measured {
        histogram,
        calls: issued,
        elapsed,
    })
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
