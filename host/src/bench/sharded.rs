//! Runs a benchmark on N arbiters at once, each its own thread with its own pipeline over its own
//! plugins and its own share of the sessions (issue 7: scale across cores by giving separate
//! arbiters separate sessions, never by spreading one pipeline over threads).

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use hookline_actors::Pipeline;

use super::driver::{run_closed_loop, run_open_loop, Measured, Progress};
use super::hook::BenchHook;
use super::source::{start_plugins, Source};

/// What to run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Where the plugins come from.
    pub source: Source,
    /// Plugins per pipeline (ignored for [`Source::Examples`]).
    pub plugins: usize,
    /// The hook called.
    pub hook: BenchHook,
    /// Sessions in flight, summed over all arbiters.
    pub sessions: usize,
    /// Offered calls/s summed over all arbiters (open loop); `None` for a closed loop.
    pub rate: Option<u64>,
    /// How long each arbiter runs.
    pub duration: Duration,
    /// Arbiters (threads), each with its own pipeline.
    pub arbiters: usize,
    /// Where the shipped example plugins are.
    pub examples_dir: PathBuf,
}

/// Runs `plan` on its arbiters and merges what they measured: histograms added, calls summed,
/// the longest arbiter's wall time. Returns the merged measure and the plugins per pipeline.
///
/// # Errors
/// The first arbiter's failure (a plugin that would not start, a pipeline error), as text.
pub fn run(plan: &Plan, progress: &dyn Progress) -> Result<(Measured, usize), String> {
    let arbiters = plan.arbiters.max(1);
    let (sender, results) = mpsc::channel();
    let threads: Vec<_> = (0..arbiters)
        .map(|index| {
            let mut share = plan.clone();
            share.sessions = share_of(plan.sessions.max(1), arbiters, index).max(1);
            share.rate = plan
                .rate
                .map(|rate| (share_of(rate as usize, arbiters, index) as u64).max(1));
            let sender = sender.clone();
            std::thread::spawn(move || {
                let outcome = actix::System::new().block_on(run_one(&share));
                let _ = sender.send(outcome);
            })
        })
        .collect();
    drop(sender);
    let merged = collect(&results, arbiters, plan.duration, progress);
    for thread in threads {
        let _ = thread.join();
    }
    merged
}

/// The `index`th of `parts` near-equal shares of `total`.
fn share_of(total: usize, parts: usize, index: usize) -> usize {
    total / parts + usize::from(index < total % parts)
}

fn collect(
    results: &mpsc::Receiver<Result<(Measured, usize), String>>,
    arbiters: usize,
    duration: Duration,
    progress: &dyn Progress,
) -> Result<(Measured, usize), String> {
    let started = Instant::now();
    let mut merged: Option<(Measured, usize)> = None;
    let mut received = 0;
    while received < arbiters {
        progress.tick(started.elapsed().min(duration), duration);
        let next = match results.recv_timeout(Duration::from_millis(100)) {
            Ok(next) => next?,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err("an arbiter stopped without a result".into())
            }
        };
        received += 1;
        merged = Some(match merged {
            None => next,
            Some((mut into, plugins)) => {
                let _ = into.histogram.add(&next.0.histogram);
                into.calls += next.0.calls;
                into.shed += next.0.shed;
                into.elapsed = into.elapsed.max(next.0.elapsed);
                (into, plugins)
            }
        });
    }
    merged.ok_or_else(|| "no arbiter ran".into())
}

/// One arbiter's run: its plugins, its pipeline, its sessions.
async fn run_one(plan: &Plan) -> Result<(Measured, usize), String> {
    let plugins = start_plugins(plan.source, plan.plugins, &plan.examples_dir).await?;
    let count = plugins.registrations.len();
    let pipeline = Pipeline::builder()
        .plugins(plugins.registrations.clone())
        .start()
        .map_err(|e| e.to_string())?;
    let run = match plan.rate {
        Some(rate) => {
            run_open_loop(
                &pipeline,
                plan.hook,
                plan.sessions,
                rate,
                plan.duration,
                &(),
            )
            .await
        }
        None => run_closed_loop(&pipeline, plan.hook, plan.sessions, plan.duration, &()).await,
    };
    pipeline.stop().await;
    plugins.shutdown().await;
    let measured = run.map_err(|e| e.to_string())?;
    Ok((measured, count))
}

#[cfg(test)]
mod tests {
    use super::share_of;

    #[test]
    fn shares_cover_the_total_and_differ_by_at_most_one() {
        for (total, parts) in [(1000, 2), (1001, 2), (7, 3), (3, 8)] {
            let shares: Vec<_> = (0..parts).map(|i| share_of(total, parts, i)).collect();
            assert_eq!(shares.iter().sum::<usize>(), total);
            let (min, max) = (shares.iter().min(), shares.iter().max());
            assert!(max.zip(min).is_some_and(|(a, b)| a - b <= 1), "{shares:?}");
        }
    }
}
