//! A pipeline shard's arbiter bounds its blocking pool (issue 49, docs/performance.md "Replacing
//! a server"): the sessions placed on a shard do their file store I/O there, and tokio's default
//! bound (512 threads) let a server taking 200 sessions over run up to 110 threads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hookline::actors::Pipeline;

/// More blocking jobs at once than the bound (32) lets run.
const JOBS: usize = 48;

#[actix_rt::test]
async fn a_further_shards_blocking_pool_runs_at_most_32_threads() {
    let pipeline = Pipeline::builder().shards(2).start().unwrap();
    let arbiter = pipeline.shard_arbiter(1).unwrap();
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let (done, finished) = tokio::sync::oneshot::channel();
    let (r, m) = (running.clone(), most.clone());
    assert!(arbiter.spawn(async move {
        let jobs: Vec<_> = (0..JOBS)
            .map(|_| {
                let (running, most) = (r.clone(), m.clone());
                tokio::task::spawn_blocking(move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    // The job's work: long enough that every job is queued before one ends.
                    std::thread::sleep(Duration::from_millis(200));
                    running.fetch_sub(1, Ordering::SeqCst);
                })
            })
            .collect();
        for job in jobs {
            job.await.unwrap();
        }
        let _ = done.send(());
    }));
    tokio::time::timeout(Duration::from_secs(30), finished)
        .await
        .expect("the jobs did not finish")
        .unwrap();
    let most = most.load(Ordering::SeqCst);
    assert!(
        most <= 32,
        "{most} blocking threads ran at once on the shard"
    );
    assert!(most >= 16, "the jobs should have run side by side: {most}");
}
