//! Crash safety of `Log` (issue 4 item 7, issue 8 item 3): a child process appends records and
//! reports each synced sequence number on stdout; the parent SIGKILLs it at random points,
//! reopens the log, and checks that every record reported synced is there, that no corrupt
//! record was accepted, and that a torn tail is detected and repaired.
//!
//! The child is this same test binary, re-invoked on `crash_child_appends_until_killed` with
//! `HOOKLINE_CRASH_CHILD_LOG` set. Two kinds of kill:
//! - *random*: after a random number of reported appends plus a random delay of up to 2 ms, so
//!   the kill lands anywhere: while the child starts, opens and repairs the log, serializes,
//!   writes or syncs.
//! - *mid-frame* (one kill in four): the child writes a random prefix of a real frame, as a
//!   `write` cut short by the crash would leave it, reports `tearing`, and is killed there. A
//!   SIGKILL rarely tears a write by itself (the kernel copies a write to the page cache almost
//!   at once), so this is what makes the torn-tail path run on every suite run.
//!
//! The suite runs 200 kills; the documented longer run is
//! `HOOKLINE_CRASH_ITERATIONS=1000 cargo test --test store_crash`, and `HOOKLINE_CRASH_SEED=n`
//! replays one sequence of kill points (the seed is printed).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use hookline::host::store::{Log, Recovery};
use serde::{Deserialize, Serialize};

const CHILD_ENV: &str = "HOOKLINE_CRASH_CHILD_LOG";
/// When set, the child tears a frame after this many appends (see the module docs).
const TEAR_ENV: &str = "HOOKLINE_CRASH_CHILD_TEAR_AFTER";
const CHILD_TEST: &str = "crash_child_appends_until_killed";
/// Kills per log file before starting a fresh one (keeps every reopen cheap).
const KILLS_PER_LOG: usize = 5;
/// A child that stops reporting for this long is stuck: fail rather than hang.
const CHILD_DEADLINE: Duration = Duration::from_secs(20);

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Record {
    seq: u64,
    body: String,
}

/// splitmix64: a tiny deterministic generator, so a seed replays the same kill points.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.0)
    }
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The one record a sequence number may hold; one in eight is large (up to 256 KiB).
fn record(seq: u64) -> Record {
    let h = mix(seq);
    let len = if h % 8 == 0 {
        (h >> 8) % 256_000
    } else {
        (h >> 8) % 2_000
    };
    let body = char::from(b'a' + (seq % 26) as u8)
        .to_string()
        .repeat(len as usize);
    Record { seq, body }
}

#[test]
fn crash_child_appends_until_killed() {
    // Only does work as the child of `sigkill_during_appends_loses_no_synced_record`.
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let path = PathBuf::from(path);
    let tear_after: Option<u64> = std::env::var(TEAR_ENV).ok().and_then(|n| n.parse().ok());
    let (mut log, recovery) = Log::<Record>::open(&path).unwrap();
    let mut seq = recovery.records.len() as u64;
    // Bounded, so an orphaned child stops by itself.
    for appends in 0..10_000u64 {
        if tear_after == Some(appends) {
            return tear_and_wait(&path, seq);
        }
        let batch = 1 + mix(seq ^ 0xABCD) % 3;
        let records: Vec<Record> = (seq..seq + batch).map(record).collect();
        if batch == 1 {
            log.append(&records[0]).unwrap();
        } else {
            log.append_all(&records).unwrap();
        }
        seq += batch;
        report(&format!("synced {}", seq - 1));
    }
}

fn report(line: &str) {
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{line}").unwrap();
    stdout.flush().unwrap();
}

/// Appends a strict prefix of record `seq`'s real frame behind the log's back, then waits to be
/// killed (bounded, in case the parent is gone).
fn tear_and_wait(path: &Path, seq: u64) {
    let scratch = path.with_extension("frame");
    let _ = std::fs::remove_file(&scratch);
    let (mut one, _) = Log::<Record>::open(&scratch).unwrap();
    one.append(&record(seq)).unwrap();
    let frame = std::fs::read(&scratch).unwrap();
    let cut = 1 + (mix(seq ^ 0x7EA4) as usize) % (frame.len() - 1);
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(&frame[..cut]).unwrap();
    file.sync_all().unwrap();
    report("tearing");
    std::thread::sleep(CHILD_DEADLINE);
}

fn iterations() -> usize {
    std::env::var("HOOKLINE_CRASH_ITERATIONS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(200)
}

fn seed() -> u64 {
    std::env::var("HOOKLINE_CRASH_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            now.map_or(1, |d| d.as_nanos() as u64)
        })
}

/// How one child is killed.
#[derive(Clone, Copy, Debug)]
enum Kill {
    /// After `reports` synced appends and `delay`.
    Random { reports: u64, delay: Duration },
    /// While a frame is half written, after `reports` synced appends.
    MidFrame { reports: u64 },
}

/// What the parent saw before the kill.
struct Killed {
    /// The highest sequence number the child reported synced.
    synced: Option<u64>,
    /// Whether the child reported tearing a frame.
    tore: bool,
}

fn spawn_child(path: &Path, kill: Kill) -> std::process::Child {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args([
            CHILD_TEST,
            "--exact",
            "--nocapture",
            "--test-threads=1",
            "--quiet",
        ])
        .env(CHILD_ENV, path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Kill::MidFrame { reports } = kill {
        command.env(TEAR_ENV, reports.to_string());
    }
    command.spawn().unwrap()
}

/// Runs one child on `path` and SIGKILLs it as `kill` says.
fn run_and_kill(path: &Path, kill: Kill) -> Killed {
    let mut child = spawn_child(path, kill);
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // The test harness prints lines of its own; pass on only the child's reports.
        let reports = BufReader::new(stdout).lines().map_while(Result::ok);
        for line in reports.filter(|l| l.starts_with("synced ") || l == "tearing") {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let wanted = match kill {
        Kill::Random { reports, .. } => reports,
        Kill::MidFrame { reports } => reports + 1,
    };
    let mut lines = Vec::new();
    while (lines.len() as u64) < wanted {
        match rx.recv_timeout(CHILD_DEADLINE) {
            Ok(line) => lines.push(line),
            Err(e) => {
                let _ = child.kill();
                panic!(
                    "the child stopped reporting ({e:?}) after {lines:?}: {:?}",
                    child.wait()
                );
            }
        }
    }
    if let Kill::Random { delay, .. } = kill {
        // Not synchronisation: a random offset so the kill lands anywhere in the next append.
        std::thread::sleep(delay);
    }
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();
    // Lines the child printed before it died were synced before the kill too.
    lines.extend(rx.try_iter());
    let synced = lines
        .iter()
        .filter_map(|l| l.strip_prefix("synced ")?.parse().ok())
        .max();
    Killed {
        synced,
        tore: lines.iter().any(|l| l == "tearing"),
    }
}

/// Reopens after a kill and checks the log; returns whether a torn tail was repaired.
fn check_after_kill(path: &Path, killed: &Killed, context: &str) -> bool {
    let (log, Recovery { records, torn }) = Log::<Record>::open(path).unwrap();
    drop(log);
    for (i, r) in records.iter().enumerate() {
        // No corrupt record accepted: each one is exactly what was written, in order.
        assert!(
            *r == record(i as u64),
            "{context}: record {i} is not what was written"
        );
    }
    if let Some(max) = killed.synced {
        let kept = records.len();
        assert!(
            kept as u64 > max,
            "{context}: synced record {max} lost ({kept} kept)"
        );
    }
    assert!(
        !killed.tore || torn.is_some(),
        "{context}: a half-written frame was not detected"
    );
    let Some(torn) = torn else { return false };
    let len = std::fs::metadata(path).unwrap().len();
    assert_eq!(
        len, torn.offset,
        "{context}: the torn tail was not truncated: {torn}"
    );
    assert!(torn.dropped_bytes > 0, "{context}: {torn}");
    assert!(
        torn.to_string().contains("torn or corrupt"),
        "{context}: {torn}"
    );
    let (_, again) = Log::<Record>::open(path).unwrap();
    assert_eq!(again.torn, None, "{context}: the repair did not last");
    assert_eq!(
        again.records.len(),
        records.len(),
        "{context}: the repair changed the records"
    );
    true
}

/// A SIGKILL loses nothing the kernel already holds, so fsync's cost on a disk adds time but no
/// coverage: use memory-backed `/dev/shm` where there is one, else the temp directory.
fn scratch_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("hookline-crash")
        .tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap()
}

fn random_kill(rng: &mut Rng) -> Kill {
    let reports = rng.next() % 6;
    if rng.next() % 4 == 0 {
        Kill::MidFrame { reports }
    } else {
        Kill::Random {
            reports,
            delay: Duration::from_micros(rng.next() % 2_000),
        }
    }
}

#[test]
fn sigkill_during_appends_loses_no_synced_record() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return;
    }
    let (iterations, seed) = (iterations(), seed());
    let (mut rng, dir, started) = (Rng(seed), scratch_dir(), Instant::now());
    let (mut torn_tails, mut mid_frame, mut path) = (0, 0, PathBuf::new());
    for i in 0..iterations {
        if i % KILLS_PER_LOG == 0 {
            path = dir.path().join(format!("log-{i}"));
        }
        let kill = random_kill(&mut rng);
        mid_frame += usize::from(matches!(kill, Kill::MidFrame { .. }));
        let killed = run_and_kill(&path, kill);
        let context = format!("seed {seed}, kill {i} ({kill:?})");
        torn_tails += usize::from(check_after_kill(&path, &killed, &context));
    }
    eprintln!(
        "{iterations} kills ({mid_frame} mid-frame, seed {seed}) in {:.1?}: {torn_tails} torn tails \
         detected and repaired",
        started.elapsed()
    );
    assert!(
        torn_tails >= mid_frame,
        "every mid-frame kill leaves a torn tail"
    );
}
