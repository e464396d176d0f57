//! Replacing `hookline serve` again and again under load (issue 49 items 5 and 6), with the real
//! binary on the file store: sessions run turns without pause (as JSON or as event streams, each
//! request on a new connection, or over a WebSocket that is reconnected when the server closes it
//! with 1012, each turn with an idempotency key) while the server is replaced, alternating between
//! plugin set A (appends ` [A]` to every user message) and set B (` [B]`). One replacement is
//! asked with SIGHUP, the others with `--replace`; before the first, a successor with a broken
//! plugin set is refused and the old server serves on.
//!
//! Before each replacement a few turns ask for a `write_file` call the operator must allow; the
//! old server's requests end 202 `turn-moved`, the successor asks the same approvals again
//! (same call ids and deadlines), each is answered there once and its call runs once, with the
//! content the old set's `on_tool_call` wrote into it.
//!
//! Checked: zero failed requests; every turn's answer carries exactly one set's marker; once a
//! replacement is over, turns carry the new set's; every acknowledged turn is stored, in order;
//! no old server or plugin process is left; the last successor's resident memory beside the
//! server it replaced, holding the same sessions: each read with the clients holding their
//! turns, as the median of windows of readings 200 ms apart once it stopped falling, the server
//! before it is asked to go, its successor once every session has run two turns there, and the
//! successor's reading less what the turns answered between the two readings added to the
//! histories (the replaced servers' readings against their turns answered give the cost of a
//! turn): within 10% with `HOOKLINE_BIN` (a release binary, the issue's bound), within
//! `MEMORY_RATIO` with the debug build a plain `cargo test` runs. Reported (stderr): each replacement's time from the request to the old
//! process's exit, and the p99 turn latency during replacements beside the p99 outside them.
//!
//! Size: 24 sessions and 4 replacements by default (a plain `cargo test`);
//! `HOOKLINE_REPLACE_LOAD=200x20` runs 200 sessions and 20 replacements.
//!
//! Binary: the one cargo built for this test (a debug build under a plain `cargo test`), or
//! the one `HOOKLINE_BIN` names, to measure what an operator runs (`cargo build --release --bin
//! hookline`, then `HOOKLINE_BIN=target/release/hookline`; docs/performance.md). The test says
//! on stderr which one it ran.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cluster_support;
mod replace_support;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cluster_support::listen_url;
use hookline::host::store::{Log, Store};
use hookline::messages::record::Record;
use hookline::messages::session::SessionId;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use replace_support::{
    acked_texts, alive, anon_kib, answer_after_swap, ask_approvals, assert_in_order, children,
    client, hold_turns, p99_during_and_outside, pending_approvals, release_turns, rss_kib,
    rss_settled, status_kib, wait_turns, Seen, Server, Turn, DEADLINE, MARKER, SAMPLE_EVERY,
};

/// Sessions and replacements: `HOOKLINE_REPLACE_LOAD=SESSIONSxSWAPS`, else 24x4.
fn size() -> (usize, usize) {
    std::env::var("HOOKLINE_REPLACE_LOAD")
        .ok()
        .and_then(|v| {
            let (s, n) = v.split_once('x')?;
            Some((s.parse().ok()?, n.parse().ok()?))
        })
        .unwrap_or((24, 4))
}

/// The `hookline` binary the servers run: `HOOKLINE_BIN` when set, else the one cargo built.
fn binary() -> PathBuf {
    std::env::var_os("HOOKLINE_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_hookline")),
        PathBuf::from,
    )
}

/// How much more resident memory the last successor may hold than the server it replaced,
/// holding the same sessions, each read with no turn running once its memory stopped falling
/// (`rss_settled`), the history added between the readings taken off (`like_for_like`), in the
/// debug build a plain `cargo test` runs: most of its resident memory is the debug binary's
/// text, and its anonymous memory moves with its thread count (22 to 59 threads in two runs of
/// the default size, 0.82 to 1.53 times anonymous memory from one swap to the next). Measured
/// (three runs of the default size): 0.94-1.04 at the last replacement with transparent huge
/// pages off, 0.83-1.16 before. The issue's 10% is what a release binary is held to
/// ([`MEMORY_RATIO_RELEASE`]).
const MEMORY_RATIO: f64 = 1.25;

/// The issue's bound on the last successor beside the server it replaced, once the history the
/// turns between the two readings added is taken off: held by a run of `HOOKLINE_BIN` (an
/// operator's release binary; docs/performance.md, "Replacing a server").
const MEMORY_RATIO_RELEASE: f64 = 1.10;

/// One reading of a server's resident memory and the turns answered by then.
#[derive(Clone, Copy, Debug)]
struct Reading {
    kib: u64,
    turns: usize,
}

/// What a turn answered adds to a server's resident memory, in KiB: the least-squares slope of
/// the replaced servers' readings against their turns answered (each read steady, before it was
/// asked to go); none when there are fewer than two or it does not grow.
#[allow(clippy::cast_precision_loss)]
fn kib_per_turn(replaced: &[Reading]) -> f64 {
    let n = replaced.len() as f64;
    if replaced.len() < 2 {
        return 0.0;
    }
    let mean_x = replaced.iter().map(|r| r.turns as f64).sum::<f64>() / n;
    let mean_y = replaced.iter().map(|r| r.kib as f64).sum::<f64>() / n;
    let (mut cov, mut var) = (0.0, 0.0);
    for r in replaced {
        let dx = r.turns as f64 - mean_x;
        cov += dx * (r.kib as f64 - mean_y);
        var += dx * dx;
    }
    if var > 0.0 {
        (cov / var).max(0.0)
    } else {
        0.0
    }
}

/// The successor's reading beside the replaced server's, less what the turns answered between
/// the two added at `per_turn` KiB each.
#[allow(clippy::cast_precision_loss)]
fn like_for_like(replaced: Reading, successor: Reading, per_turn: f64) -> f64 {
    let grown = successor.turns.saturating_sub(replaced.turns) as f64 * per_turn;
    (successor.kib as f64 - grown) / replaced.kib.max(1) as f64
}

/// Readings in one window of resident memory (their median, [`SAMPLE_EVERY`] apart).
const WINDOW: usize = 8;
/// Windows a successor's memory may take to stop falling ([`rss_settled`]): a bounded wait.
const SETTLE_WINDOWS: usize = 10;

/// `a` over `b`.
#[allow(clippy::cast_precision_loss)]
fn ratio(a: u64, b: u64) -> f64 {
    a as f64 / b.max(1) as f64
}

struct Deployment {
    dir: tempfile::TempDir,
    plugins: PathBuf,
}

impl Deployment {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let plugins = dir.path().join("plugins");
        std::fs::create_dir_all(dir.path().join("root")).unwrap();
        let deployment = Self { dir, plugins };
        deployment.use_set("A");
        std::fs::write(
            deployment.plugins.join("marker/plugin.json"),
            r#"{"entry": "plugin.py", "interpreter": "python3"}"#,
        )
        .unwrap();
        deployment
    }

    /// Makes the plugin directory set `set` (what the next server loads).
    fn use_set(&self, set: &str) {
        let dir = self.plugins.join("marker");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("plugin.py"), MARKER.replace("@SET@", set)).unwrap();
    }

    /// `hookline serve` with this deployment's line, `--replace` when `replace`, and `extra`.
    fn spawn(&self, name: &str, replace: bool, extra: &[&str]) -> (Server, Option<String>) {
        let log = self.dir.path().join(format!("{name}.log"));
        let mut command = Command::new(binary());
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--workspace-root"])
            .arg(self.dir.path().join("root"))
            .arg("--plugins")
            .arg(&self.plugins)
            .args(["--drain-budget-ms", "5000"])
            .args(extra)
            .env("HOOKLINE_HOME", self.dir.path().join("home"))
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap());
        if replace {
            command.arg("--replace");
        }
        let mut child = command.spawn().unwrap();
        let url = listen_url(&mut child);
        let pid = i32::try_from(child.id()).unwrap();
        (
            Server {
                pid,
                child: Some(child),
                log,
            },
            url,
        )
    }

    fn store(&self) -> PathBuf {
        self.dir.path().join("root/.hookline")
    }
}

#[test]
fn replaced_again_and_again_under_load_nothing_fails_and_each_turn_has_one_plugin_set() {
    if Command::new("python3").arg("--version").output().is_err() {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: needs python3 for the plugin sets"
        );
        return;
    }
    let (sessions, swaps) = size();
    let _ = writeln!(std::io::stderr(), "binary: {}", binary().display());
    let deployment = Deployment::new();
    let (mut current, url) = deployment.spawn("s0", false, &[]);
    let base = url.unwrap_or_else(|| panic!("{}", current.log_text()));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Seen::default());
    let clients: Vec<_> = (0..sessions)
        .map(|n| runtime.spawn(client(base.clone(), n, false, stop.clone(), seen.clone())))
        .collect();
    wait_turns(&seen, sessions * 3);
    let first_rss = rss_kib(current.pid);
    let mut plugin_pids: Vec<i32> = children(current.pid);
    let mut windows: Vec<(Instant, Instant)> = Vec::new();
    // Resident memory like for like: the server replaced, just before it is asked to go, beside
    // its successor once every session has run two turns there (the same sessions, the same
    // histories but those two turns).
    let mut memory: Vec<(Reading, Reading)> = Vec::new();
    let mut set = "A";
    for swap in 1..=swaps {
        if swap == 1 {
            // A successor with a broken plugin set is refused; the old one serves on.
            std::fs::create_dir_all(deployment.plugins.join("broken")).unwrap();
            std::fs::write(deployment.plugins.join("broken/plugin.json"), "{ nope").unwrap();
            let (mut broken, _) = deployment.spawn("broken", true, &[]);
            assert_ne!(broken.exited(), Some(0), "{}", broken.log_text());
            std::fs::remove_dir_all(deployment.plugins.join("broken")).unwrap();
            assert!(alive(current.pid));
            wait_turns(&seen, sessions);
        }
        // Some turns wait for an approval across this replacement.
        let waiting = ask_approvals(&runtime, &base, &base, swap, (sessions / 12).max(2));
        let approvals = pending_approvals(&runtime, &base, &waiting.keys);
        let old_set = set;
        set = if set == "A" { "B" } else { "A" };
        deployment.use_set(set);
        let old_plugins = children(current.pid);
        // Like for like (issue 49 item 5): each server is read with the same sessions and no
        // turn running (the clients hold their next turns; the approvals asked above wait), over
        // windows of readings until its memory stopped falling. Here before it is asked to go.
        hold_turns(&seen);
        let (replaced_rss, _) = rss_settled(current.pid, WINDOW, SETTLE_WINDOWS);
        let replaced_anon = anon_kib(current.pid);
        let replaced_threads = status_kib(current.pid, "Threads:");
        // Turns answered so far: the sessions' histories grow between the two measurements.
        let replaced_turns = seen.turns.lock().unwrap().len();
        release_turns(&seen);
        let asked = Instant::now();
        let mut next = if swap == 2 {
            kill(Pid::from_raw(current.pid), Signal::SIGHUP).unwrap();
            let code = current.exited();
            assert!(matches!(code, Some(0) | None), "{}", current.log_text());
            let log = current.log_text();
            let pid: i32 = log
                .rsplit("handed over to pid ")
                .next()
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|id| id.parse().ok())
                .unwrap_or_else(|| panic!("no successor in:\n{log}"));
            Server {
                pid,
                child: None,
                log: current.log.clone(),
            }
        } else {
            let (next, url) = deployment.spawn(&format!("s{swap}"), true, &[]);
            assert_eq!(url.as_deref(), Some(base.as_str()), "{}", next.log_text());
            next
        };
        if swap != 2 {
            // None: a server SIGHUP started is not our child; its exit status is not ours to see.
            let code = current.exited();
            assert!(
                matches!(code, Some(0) | None),
                "{code:?}: {}",
                current.log_text()
            );
        }
        let took = asked.elapsed();
        windows.push((asked, Instant::now()));
        let _ = writeln!(
            std::io::stderr(),
            "swap {swap} to set {set}{}: {} ms from the request to the old process's exit",
            if swap == 2 { " (SIGHUP)" } else { "" },
            took.as_millis()
        );
        for id in &old_plugins {
            let deadline = Instant::now() + DEADLINE;
            while alive(*id) {
                assert!(
                    Instant::now() < deadline,
                    "plugin {id} of the old server still runs"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        std::mem::swap(&mut current, &mut next);
        drop(next);
        answer_after_swap(
            &runtime,
            &base,
            &base,
            &deployment.dir.path().join("root"),
            waiting,
            &approvals,
            old_set,
        );
        plugin_pids.extend(children(current.pid));
        // Turns after the swap carry the new set's marker.
        let from = seen.turns.lock().unwrap().len();
        wait_turns(&seen, sessions * 2);
        // Once adoption settled: its memory peaks while it takes the sessions over and falls
        // for a few seconds after.
        hold_turns(&seen);
        let (successor_rss, windows_taken) = rss_settled(current.pid, WINDOW, SETTLE_WINDOWS);
        let successor_anon = anon_kib(current.pid);
        let successor_threads = status_kib(current.pid, "Threads:");
        let successor_turns = seen.turns.lock().unwrap().len();
        release_turns(&seen);
        memory.push((
            Reading {
                kib: replaced_rss,
                turns: replaced_turns,
            },
            Reading {
                kib: successor_rss,
                turns: successor_turns,
            },
        ));
        let _ = writeln!(
            std::io::stderr(),
            "swap {swap}: resident memory (no turn running; median of {WINDOW} readings {} ms apart, once it stopped falling) of the server replaced {replaced_rss} KiB ({replaced_anon} KiB anonymous), of its successor {successor_rss} KiB after {windows_taken} windows ({successor_anon} KiB anonymous; {:.2}x, anonymous {:.2}x); threads {replaced_threads}, {successor_threads}; turns answered {replaced_turns}, {successor_turns}",
            SAMPLE_EVERY.as_millis(),
            ratio(successor_rss, replaced_rss),
            ratio(successor_anon, replaced_anon),
        );
        let turns = seen.turns.lock().unwrap();
        let after_exit = windows.last().unwrap().1;
        for turn in turns[from..]
            .iter()
            .filter(|t| t.started > after_exit && !t.marker.is_empty())
        {
            assert_eq!(
                turn.marker, set,
                "{}: '{}' after swap {swap}",
                turn.session, turn.sent
            );
        }
    }
    stop.store(true, Ordering::Release);
    runtime.block_on(async {
        for client in clients {
            client.await.unwrap();
        }
    });
    let last_rss = rss_kib(current.pid);
    let failed = seen.failed.lock().unwrap().clone();
    let turns = std::mem::take(&mut *seen.turns.lock().unwrap());
    let _ = writeln!(
        std::io::stderr(),
        "{sessions} sessions, {swaps} replacements: {} turns, {} failed; {}; resident memory first {first_rss} KiB, last {last_rss} KiB",
        turns.len(),
        failed.len(),
        p99_during_and_outside(&turns, &windows),
    );
    assert!(
        failed.is_empty(),
        "{} failed: {:?}",
        failed.len(),
        &failed[..failed.len().min(5)]
    );
    // Issue 49: the last process beside the first, compared like for like: the last successor
    // beside the server it replaced, holding the same sessions with the same histories
    // (docs/serve.md).
    let replaced: Vec<Reading> = memory.iter().map(|(replaced, _)| *replaced).collect();
    let per_turn = kib_per_turn(&replaced);
    let like: Vec<String> = memory
        .iter()
        .map(|(replaced, successor)| {
            format!("{:.2}", like_for_like(*replaced, *successor, per_turn))
        })
        .collect();
    let _ = writeln!(
        std::io::stderr(),
        "successor beside the server it replaced, less the turns answered between the readings at {per_turn:.2} KiB a turn: {}",
        like.join(", ")
    );
    if let Some((replaced, successor)) = memory.last() {
        let bound = if std::env::var_os("HOOKLINE_BIN").is_some() {
            MEMORY_RATIO_RELEASE
        } else {
            MEMORY_RATIO
        };
        assert!(
            like_for_like(*replaced, *successor, per_turn) <= bound,
            "the last successor holds {successor:?} KiB, the server it replaced {replaced:?} KiB ({per_turn:.2} KiB a turn)"
        );
    }
    kill(Pid::from_raw(current.pid), Signal::SIGTERM).unwrap();
    let _ = current.exited();
    for id in &plugin_pids {
        let deadline = Instant::now() + DEADLINE;
        while alive(*id) {
            assert!(Instant::now() < deadline, "plugin {id} still runs");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    assert_stored_in_order(&deployment.store(), &turns);
}

/// Every acknowledged turn's user message is stored, in the order acknowledged.
fn assert_stored_in_order(store: &Path, turns: &[Turn]) {
    let store = Store::open(store).unwrap();
    for (session, texts) in acked_texts(turns) {
        let log = store
            .session_dir(&SessionId::new(session))
            .unwrap()
            .join("records.log");
        let (_, recovery) = Log::<Record>::open(&log).unwrap();
        let stored: Vec<&str> = recovery
            .records
            .iter()
            .filter_map(|r| match r {
                Record::User { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_in_order(session, &stored, &texts);
    }
}
