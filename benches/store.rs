//! Appends/s of the session stores, with and without group commit, in one run (issue 11 item 5,
//! issue 14 item 6): the file store on the machine's disk and `PgStore` on a throwaway
//! PostgreSQL cluster (`tests/support/pg.rs`, or `HOOKLINE_TEST_DATABASE_URL`), both with real
//! syncs (`fsync=on`).
//!
//! Each case runs `SESSIONS` sessions appending at once, each `APPENDS` times (one record and one
//! archive entry, about 300 bytes, per append), three times; it prints the median appends/s, the
//! median per-append latency p50/p99 of the median run, and the ratio with/without group commit.
//! Then: how long a second PostgreSQL node takes to open 1,000 sessions whose leases expired
//! (a node dying leaves its leases to expire; the TTL comes on top).
//!
//! The file store runs with its `commit.log` journal (one sync per append, issue 47) and without
//! it (three), so the two compare within one run.
//!
//! Run with `cargo bench --bench store`; `HOOKLINE_BENCH_SESSIONS` and `HOOKLINE_BENCH_APPENDS`
//! change the load.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/pg.rs"]
mod pg;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use hookline::host::store::{FileStore, FileStoreOptions, NewSession, SessionStore};
use hookline::messages::record::{ArchiveEntry, Record};
use hookline::messages::session::ApprovalMode;
use hookline::postgres::{PgStore, PgStoreOptions};

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn new_session() -> NewSession {
    NewSession {
        workspace_root: "/bench".into(),
        approval_mode: ApprovalMode::AskAboveRead,
        model: None,
        mode: None,
        owner: None,
    }
}

struct Run {
    per_second: f64,
    p50: Duration,
    p99: Duration,
}

/// `sessions` sessions append `appends` times each, all at once.
async fn run(store: Arc<dyn SessionStore>, sessions: usize, appends: usize) -> Run {
    let mut writers = Vec::new();
    for _ in 0..sessions {
        writers.push(store.create(new_session(), &[]).await.unwrap().1);
    }
    let record = Record::Assistant {
        text: "a".repeat(200),
    };
    let entry = ArchiveEntry::TurnFinished {
        stop_reason: hookline::messages::user::StopReason::Completed,
    };
    let start = Instant::now();
    let tasks = writers.into_iter().map(|mut w| {
        let (record, entry) = (record.clone(), entry.clone());
        async move {
            let mut latencies = Vec::with_capacity(appends);
            for _ in 0..appends {
                let t = Instant::now();
                w.append(std::slice::from_ref(&record), std::slice::from_ref(&entry))
                    .await
                    .unwrap();
                latencies.push(t.elapsed());
            }
            w.release().await.unwrap();
            latencies
        }
    });
    let mut latencies: Vec<Duration> = join_all(tasks).await.into_iter().flatten().collect();
    let elapsed = start.elapsed();
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize];
    Run {
        per_second: (sessions * appends) as f64 / elapsed.as_secs_f64(),
        p50: at(0.5),
        p99: at(0.99),
    }
}

async fn median_of_three(
    make: &dyn Fn() -> futures::future::BoxFuture<'static, Arc<dyn SessionStore>>,
    sessions: usize,
    appends: usize,
) -> Run {
    let mut runs = Vec::new();
    for _ in 0..3 {
        runs.push(run(make().await, sessions, appends).await);
    }
    runs.sort_by(|a, b| a.per_second.total_cmp(&b.per_second));
    runs.swap_remove(1)
}

fn print(name: &str, run: &Run) {
    println!(
        "{name:<34} {:>10.0} appends/s   p50 {:>8.2} ms   p99 {:>8.2} ms",
        run.per_second,
        run.p50.as_secs_f64() * 1e3,
        run.p99.as_secs_f64() * 1e3
    );
}

async fn bench() {
    let sessions = env_or("HOOKLINE_BENCH_SESSIONS", 256);
    let appends = env_or("HOOKLINE_BENCH_APPENDS", 20);
    println!("{sessions} sessions appending at once, {appends} appends each, median of 3 runs\n");
    let dir = tempfile::tempdir().unwrap();
    let mut results = Vec::new();
    // Issue 47: each file case with the journal (one sync per append, the default) and
    // without it (plain commit points, three syncs per append), in the same run.
    for (name, group_commit, n, journal) in [
        ("files, one session (baseline)", false, 1, true),
        ("files, without group commit", false, sessions, true),
        ("files, group commit", true, sessions, true),
        ("files, one session, no journal", false, 1, false),
        ("files, group commit, no journal", true, sessions, false),
    ] {
        let root = dir.path().to_path_buf();
        let make = move || -> futures::future::BoxFuture<'static, Arc<dyn SessionStore>> {
            let root = root.clone();
            Box::pin(async move {
                let options = FileStoreOptions {
                    group_commit,
                    journal,
                    ..FileStoreOptions::default()
                };
                Arc::new(FileStore::open(&root, options).unwrap()) as Arc<dyn SessionStore>
            })
        };
        let appends = if n == 1 { appends * 20 } else { appends };
        let r = median_of_three(&make, n, appends).await;
        print(name, &r);
        results.push(r);
    }
    println!(
        "files: group commit / without = {:.1}x",
        results[2].per_second / results[1].per_second
    );
    println!(
        "files: journal / no journal = {:.2}x one session (p50 {:.3} / {:.3} ms), {:.2}x group commit\n",
        results[0].per_second / results[3].per_second,
        results[0].p50.as_secs_f64() * 1e3,
        results[3].p50.as_secs_f64() * 1e3,
        results[2].per_second / results[4].per_second
    );
    let url = pg::database_url();
    hookline::postgres::migrate_url(&url, None).await.unwrap();
    let mut pg_results = Vec::new();
    for (name, group_commit) in [
        ("postgres, without group commit", false),
        ("postgres, group commit", true),
    ] {
        let url = url.clone();
        let make = move || -> futures::future::BoxFuture<'static, Arc<dyn SessionStore>> {
            let url = url.clone();
            Box::pin(async move {
                let options = PgStoreOptions {
                    group_commit,
                    pool_size: 16,
                    ..PgStoreOptions::default()
                };
                Arc::new(PgStore::connect(&url, options).await.unwrap()) as Arc<dyn SessionStore>
            })
        };
        let r = median_of_three(&make, sessions, appends).await;
        print(name, &r);
        pg_results.push(r);
    }
    println!(
        "postgres: group commit / without = {:.1}x",
        pg_results[1].per_second / pg_results[0].per_second
    );
    println!(
        "group commit: postgres / files = {:.2}x\n",
        pg_results[1].per_second / results[2].per_second
    );
    resume(&url).await;
}

/// Node A holds 1,000 sessions and dies (its leases are left to expire); node B opens them all.
async fn resume(url: &str) {
    const N: usize = 1000;
    let ttl = Duration::from_millis(500);
    let a = PgStore::connect(
        url,
        PgStoreOptions {
            node: "a".into(),
            lease_ttl: ttl,
            renew_every: None,
            ..PgStoreOptions::default()
        },
    )
    .await
    .unwrap();
    let mut ids = Vec::new();
    let record = Record::User {
        text: "hello".into(),
        images: Vec::new(),
    };
    for _ in 0..N {
        let (info, mut w) = a.create(new_session(), &[]).await.unwrap();
        w.append(&[record.clone(), record.clone()], &[])
            .await
            .unwrap();
        ids.push(info.session_id);
        drop(w); // dies holding the lease
    }
    drop(a);
    tokio::time::sleep(ttl + Duration::from_millis(200)).await;
    let b = PgStore::connect(
        url,
        PgStoreOptions {
            node: "b".into(),
            pool_size: 16,
            ..PgStoreOptions::default()
        },
    )
    .await
    .unwrap();
    let start = Instant::now();
    let opened = join_all(ids.iter().map(|id| b.open(id))).await;
    let elapsed = start.elapsed();
    let ok = opened
        .into_iter()
        .filter(|o| matches!(o, Ok(Some((s, _))) if s.records.len() == 2))
        .count();
    println!(
        "node B resumed {ok}/{N} sessions with expired leases in {:.0} ms (plus the lease TTL, \
         30 s by default, from A's death)",
        elapsed.as_secs_f64() * 1e3
    );
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        println!("store bench: run with `cargo bench --bench store`");
        return;
    }
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(bench());
}
