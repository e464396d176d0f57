//! Runs a benchmark: hookline as one [`Pipeline`] sharded over N arbiters (each session's loop on
//! its shard's arbiter, the open loop on a thread of its own), and the peers on N arbiters, each
//! with its own chain and its share of the sessions.

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use hookline_actors::Pipeline;

use super::driver::{
    run_closed_loop, run_closed_loop_batched, run_open_loop, session_ids, Measured, Progress,
};
use super::hook::BenchHook;
use super::peers::{run_peer, Peer};
use super::source::{start_plugins, PluginMemory, Source};

/// What to run.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Where the plugins come from.
    pub source: Source,
    /// Plugins per call (ignored for [`Source::Examples`]).
    pub plugins: usize,
    /// The hook called.
    pub hook: BenchHook,
    /// Sessions in flight.
    pub sessions: usize,
    /// Offered calls/s (open loop); `None` for a closed loop.
    pub rate: Option<u64>,
    /// How long each run lasts.
    pub duration: Duration,
    /// Arbiters: the pipeline's shards (and each peer's chains).
    pub arbiters: usize,
    /// The pipeline's admission bound per shard (`None`: the default).
    pub max_pending: Option<usize>,
    /// Where the shipped example plugins are.
    pub examples_dir: PathBuf,
    /// Closed loop: callers of this many sessions each, making their calls with
    /// `Pipeline::call_many` (answered per batch); open loop: the calls due at once handed over
    /// with one `call_many` (at most this many). `None`: one `Pipeline::call` per call.
    pub batch: Option<usize>,
}

/// What a run went through, beside what it measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ran {
    /// Plugins per call.
    pub plugins: usize,
    /// What each WebAssembly plugin cost in memory ([`Source::Wasm`] only).
    pub memory: Option<PluginMemory>,
}

/// Runs `plan` through hookline. Returns what was measured and what it went through.
///
/// # Errors
/// A plugin that would not start, or a pipeline error, as text.
pub fn run(plan: &Plan, progress: &dyn Progress) -> Result<(Measured, Ran), String> {
    let share = plan.clone();
    on_thread(plan.duration, progress, move || {
        actix::System::new().block_on(run_pipeline(&share))
    })
}

/// Runs `plan`'s sessions through a `peer` chain of appenders on each of `plan.arbiters`
/// arbiters (closed loop; the sessions split between them).
///
/// # Errors
/// An actor that stopped, as text.
pub fn run_peers(peer: Peer, plan: &Plan) -> Result<Measured, String> {
    let arbiters = plan.arbiters.max(1);
    let ids = session_ids(plan.sessions);
    let threads: Vec<_> = (0..arbiters)
        .map(|index| {
            let mine: Vec<_> = ids.iter().skip(index).step_by(arbiters).cloned().collect();
            let (plugins, duration) = (plan.plugins, plan.duration);
            std::thread::spawn(move || {
                actix::System::new().block_on(run_peer(peer, plugins, &mine, duration))
            })
        })
        .collect();
    let mut merged: Option<Measured> = None;
    for thread in threads {
        let part = thread
            .join()
            .map_err(|_| "a peer's thread panicked".to_owned())??;
        match &mut merged {
            None => merged = Some(part),
            Some(into) => into.merge(&part),
        }
    }
    merged.ok_or_else(|| "no arbiter ran".into())
}

/// Runs `work` on a thread of its own and ticks `progress` until it returns.
pub(super) fn on_thread<T: Send + 'static>(
    duration: Duration,
    progress: &dyn Progress,
    work: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    let (sender, result) = mpsc::channel();
    let thread = std::thread::spawn(move || {
        let _ = sender.send(work());
    });
    let started = Instant::now();
    let outcome = loop {
        progress.tick(started.elapsed().min(duration), duration);
        match result.recv_timeout(Duration::from_millis(100)) {
            Ok(outcome) => break outcome,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                break Err("the benchmark stopped without a result".into())
            }
        }
    };
    let _ = thread.join();
    outcome
}

/// hookline's run: its plugins, one pipeline over `plan.arbiters` shards, its sessions.
async fn run_pipeline(plan: &Plan) -> Result<(Measured, Ran), String> {
    let plugins = start_plugins(plan.source, plan.plugins, &plan.examples_dir).await?;
    let ran = Ran {
        plugins: plugins.registrations.len(),
        memory: plugins.memory,
    };
    let mut builder = Pipeline::builder()
        .plugins(plugins.registrations.clone())
        .shards(plan.arbiters.max(1));
    if let Some(bound) = plan.max_pending {
        builder = builder.max_pending(bound);
    }
    let pipeline = builder.start().map_err(|e| e.to_string())?;
    let run = match plan.rate {
        Some(rate) => {
            let (hook, sessions, duration) = (plan.hook, plan.sessions, plan.duration);
            run_open_loop(&pipeline, hook, sessions, rate, duration, plan.batch).await
        }
        None => match plan.batch {
            Some(batch) => {
                let (hook, sessions, duration) = (plan.hook, plan.sessions, plan.duration);
                run_closed_loop_batched(&pipeline, hook, sessions, batch, duration).await
            }
            None => run_closed_loop(&pipeline, plan.hook, plan.sessions, plan.duration).await,
        },
    };
    pipeline.stop().await;
    plugins.shutdown().await;
    let measured = run.map_err(|e| e.to_string())?;
    Ok((measured, ran))
}

/// The `index`th of `parts` near-equal shares of `total`.
#[cfg(test)]
fn share_of(total: usize, parts: usize, index: usize) -> usize {
    total / parts + usize::from(index < total % parts)
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
