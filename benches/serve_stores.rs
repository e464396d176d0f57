//! `hookline serve` on each store, in one run (issue 14 item 6): turn latency through serve with
//! the file store, with PostgreSQL committing appends together (group commit), and with
//! PostgreSQL committing each append alone; then the time node B takes to resume 1,000 sessions
//! after node A was killed. Real processes: each variant is a fresh `hookline serve` child
//! (the binary of this build) on a throwaway PostgreSQL cluster (tests/support/pg.rs, or
//! `HOOKLINE_TEST_DATABASE_URL`), driven over HTTP by `hookline load`'s driver.
//!
//! Run with `cargo bench --bench serve_stores` (a plain timed driver, not criterion: a round is
//! thousands of turns). The variants alternate within each round; medians of the rounds are
//! printed with their ratios to the file store.
#![allow(missing_docs)]
#![allow(clippy::expect_used, clippy::unwrap_used)] // a bench that cannot start has nothing to measure

#[path = "../tests/support/pg.rs"]
mod pg;
mod support;

#[path = "../tests/cluster_support/mod.rs"]
mod cluster_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use cluster_support::{Client, Node};
use futures::StreamExt as _;
use hookline::cli::load::{run as drive, LoadOptions, LoadReport};
use support::median;

const ROUNDS: usize = 3;
/// Sessions at once and turns each, for the turn latency under load.
const LOADED: (usize, usize) = (50, 20);
/// One session's turns one after another, for the latency of a lone turn.
const ALONE: (usize, usize) = (1, 200);
/// Sessions node B resumes after node A dies.
const RESUMED: usize = 1000;
/// Resumes in flight at once.
const RESUME_CONCURRENCY: usize = 64;
/// Node A's lease TTL in the failover part.
const FAILOVER_TTL_MS: u64 = 2000;

#[derive(Clone, Copy, Debug)]
enum Variant {
    Files,
    PgGroup,
    PgSingle,
}

impl Variant {
    const ALL: [Variant; 3] = [Variant::Files, Variant::PgGroup, Variant::PgSingle];

    fn label(self) -> &'static str {
        match self {
            Variant::Files => "file store",
            Variant::PgGroup => "PostgreSQL, group commit",
            Variant::PgSingle => "PostgreSQL, one commit per append",
        }
    }

    fn start(self, dir: &std::path::Path, url: &str, round: usize) -> Node {
        let name = format!("{self:?}-{round}").to_lowercase();
        match self {
            Variant::Files => {
                let store = dir.join(format!("store-{name}"));
                Node::start(&name, dir, store.to_str().unwrap(), &[])
            }
            Variant::PgGroup => Node::start(&name, dir, url, &["--node", &name]),
            Variant::PgSingle => {
                Node::start(&name, dir, url, &["--node", &name, "--no-group-commit"])
            }
        }
    }
}

async fn load(node: &Node, (sessions, turns): (usize, usize)) -> LoadReport {
    let options = LoadOptions::new(node.url.clone(), sessions, turns);
    let report = drive(options, Arc::new(())).await.unwrap();
    assert_eq!(report.error_count(), 0, "{:?}", report.errors);
    report
}

/// Per variant: (lone p50 ms, loaded p50 ms, loaded p99 ms, loaded turns/s), one per round.
type Samples = Vec<[Vec<f64>; 4]>;

async fn turn_latency(dir: &std::path::Path, url: &str) -> Samples {
    let mut samples: Samples = Variant::ALL.iter().map(|_| Default::default()).collect();
    for round in 0..ROUNDS {
        for (i, variant) in Variant::ALL.iter().enumerate() {
            let mut node = variant.start(dir, url, round);
            let alone = load(&node, ALONE).await;
            let loaded = load(&node, LOADED).await;
            node.kill();
            samples[i][0].push(alone.p50_ms);
            samples[i][1].push(loaded.p50_ms);
            samples[i][2].push(loaded.p99_ms);
            samples[i][3].push(loaded.turns_per_second);
        }
    }
    samples
}

/// Node A opens `RESUMED` sessions (one turn each) and is killed; node B resumes them all.
/// Returns (seconds from the kill until B held every session, seconds of the resumes alone once
/// A's leases had expired).
async fn failover(dir: &std::path::Path, url: &str) -> (f64, f64) {
    let ttl = FAILOVER_TTL_MS.to_string();
    let mut a = Node::start(
        "failover-a",
        dir,
        url,
        &["--node", "a", "--lease-ttl-ms", &ttl],
    );
    let b = Node::start("failover-b", dir, url, &["--node", "b"]);
    let client = Client::new();
    let options = LoadOptions {
        keep: true,
        ..LoadOptions::new(a.url.clone(), RESUMED, 1)
    };
    let report = drive(options, Arc::new(())).await.unwrap();
    assert_eq!(report.error_count(), 0, "{:?}", report.errors);
    let (_, listed) = client.get(&format!("{}/v1/sessions", a.url)).await.unwrap();
    let keys: Vec<String> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["key"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(keys.len(), RESUMED);
    a.kill();
    let killed = Instant::now();
    // Every lease A held expires within the TTL of its last renewal.
    tokio::time::sleep(Duration::from_millis(FAILOVER_TTL_MS + 200)).await;
    let started = Instant::now();
    let deadline = started + Duration::from_secs(120);
    let resumed = futures::stream::iter(keys.iter())
        .map(|key| {
            let (client, base) = (client.clone(), b.url.clone());
            async move { client.resume(&base, key, deadline).await }
        })
        .buffer_unordered(RESUME_CONCURRENCY)
        .count()
        .await;
    assert_eq!(resumed, RESUMED);
    let resumes = started.elapsed().as_secs_f64();
    drop(b);
    (killed.elapsed().as_secs_f64(), resumes)
}

fn main() {
    let url = pg::database_url();
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // The schema first (the nodes do not migrate).
    drop(runtime.block_on(cluster_support::reader(&url)));
    let samples = runtime.block_on(turn_latency(dir.path(), &url));
    let (to_resumed, resumes) = runtime.block_on(failover(dir.path(), &url));
    println!(
        "serve_stores: turn latency through `hookline serve`, {ROUNDS} rounds, medians; alone = \
         {} session x {} turns, loaded = {} sessions x {} turns at once",
        ALONE.0, ALONE.1, LOADED.0, LOADED.1
    );
    let base: Vec<f64> = samples[0].iter().map(|s| median(s.clone())).collect();
    for (variant, sample) in Variant::ALL.iter().zip(&samples) {
        let m: Vec<f64> = sample.iter().map(|s| median(s.clone())).collect();
        println!(
            "  {:34} alone p50 {:6.2} ms ({:.2}x) | loaded p50 {:6.2} ms ({:.2}x), p99 {:6.2} ms, \
             {:6.0} turns/s ({:.2}x)",
            variant.label(),
            m[0],
            m[0] / base[0],
            m[1],
            m[1] / base[1],
            m[2],
            m[3],
            m[3] / base[3],
        );
    }
    println!(
        "failover: node B resumed {RESUMED} sessions of killed node A in {resumes:.2} s once A's \
         leases had expired ({:.0} resumes/s, {RESUME_CONCURRENCY} at once); {to_resumed:.2} s \
         from the kill with a {FAILOVER_TTL_MS} ms lease TTL",
        RESUMED as f64 / resumes
    );
}
