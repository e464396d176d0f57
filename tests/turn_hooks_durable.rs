//! Issue 34 item 1, on the real binary: a hook that reads a stored record sees a durable one.
//! `on_turn_started` reads the stored user text and `on_turn_finished` the turn's end (SPEC
//! P2.4); a plugin that acts on them (bills, notifies, writes its own log) must never act on a
//! turn that a crash then loses.
//!
//! `hookline run` plays a long scenario with a plugin that appends, and fsyncs, every turn these
//! two hooks show it; the run is killed with SIGKILL at a random point, again and again
//! (`HOOKLINE_DURABLE_KILLS`, default 12; `HOOKLINE_DURABLE_SEED` replays one run's kill points). After each kill, every turn the plugin saw start is
//! stored with its user text, and every turn it saw finish is stored with its `turn-finished`.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hookline::host::store::{FileStore, FileStoreOptions, SessionStore};
use hookline::messages::record::{ArchiveEntry, Record};
use hookline::messages::session::SessionId;

/// Turns in the scenario: more than any run gets through before its kill.
const TURNS: usize = 1500;
/// How long one run may take to reach the point it is killed at.
const DEADLINE: Duration = Duration::from_secs(60);

/// A plugin on the bare protocol: each `on_turn_started` / `on_turn_finished` is appended to
/// the log `SEEN_LOG` names (set when it is installed) and synced before the hook answers.
const PLUGIN: &str = r#"
import json, os, sys
print(json.dumps({"type": "hello", "protocol": 1,
                  "hooks": ["on_turn_started", "on_turn_finished"]}), flush=True)
log = os.open(SEEN_LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
for line in sys.stdin:
    request = json.loads(line)
    if request["type"] == "goodbye":
        break
    if request["type"] != "hook":
        continue
    what = "started" if request["hook"] == "on_turn_started" else "finished"
    os.write(log, (what + " " + request["value"]["userText"] + "\n").encode())
    os.fsync(log)
    print(json.dumps({"type": "keep", "id": request["id"]}), flush=True)
"#;

/// Writes the scenario, its workspace and the plugin into `dir`.
fn prepare(dir: &Path) {
    let plugin = dir.join("plugins/seen");
    std::fs::create_dir_all(&plugin).unwrap();
    std::fs::create_dir_all(dir.join("ws")).unwrap();
    let log = dir.join("seen.log");
    let source = format!("SEEN_LOG = {:?}\n{PLUGIN}", log.to_str().unwrap());
    std::fs::write(plugin.join("plugin.py"), source).unwrap();
    std::fs::write(
        plugin.join("plugin.json"),
        r#"{"entry": "plugin.py", "interpreter": "python3"}"#,
    )
    .unwrap();
    let steps: Vec<serde_json::Value> = (0..TURNS)
        .map(|n| {
            serde_json::json!({
                "user": format!("turn {n}"),
                "replies": [{ "text": format!("answer {n}") }],
            })
        })
        .collect();
    let scenario = serde_json::json!({ "workspace": "ws", "steps": steps });
    std::fs::write(dir.join("scenario.json"), scenario.to_string()).unwrap();
}

/// The plugin's log: the turns it saw start, and the turns it saw finish.
fn seen(log: &Path) -> (Vec<String>, Vec<String>) {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let (mut started, mut finished) = (Vec::new(), Vec::new());
    for line in text.lines() {
        match line.split_once(' ') {
            Some(("started", turn)) => started.push(turn.to_owned()),
            Some(("finished", turn)) => finished.push(turn.to_owned()),
            _ => {}
        }
    }
    (started, finished)
}

/// The user texts stored, and those whose turn's `turn-finished` is stored.
async fn stored(ws: &Path) -> (HashSet<String>, HashSet<String>) {
    let store = FileStore::open(ws.join(".hookline"), FileStoreOptions::default()).unwrap();
    let Some(session) = store.read(&SessionId::new("s1")).await.unwrap() else {
        return Default::default();
    };
    let users = session
        .records
        .iter()
        .filter_map(|r| match r {
            Record::User { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect();
    let mut finished = HashSet::new();
    let mut open: Option<String> = None;
    for entry in &session.archive {
        match entry {
            ArchiveEntry::UserMessage { text, .. } => open = Some(text.clone()),
            ArchiveEntry::TurnFinished { .. } => finished.extend(open.take()),
            _ => {}
        }
    }
    (users, finished)
}

/// One run, killed once the plugin has seen `lines` hook calls.
async fn killed_run(dir: &Path, lines: usize) -> (Vec<String>, Vec<String>) {
    let log = dir.join("seen.log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookline"))
        .arg("run")
        .arg(dir.join("scenario.json"))
        .arg("--plugins")
        .arg(dir.join("plugins"))
        .env("HOOKLINE_HOME", dir.join("home"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + DEADLINE;
    loop {
        let count = std::fs::read_to_string(&log)
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if count >= lines {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it was killed"
        );
        assert!(Instant::now() < deadline, "the run made no progress");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    child.kill().unwrap();
    child.wait().unwrap();
    seen(&log)
}

#[tokio::test]
async fn turns_the_plugin_saw_start_or_finish_survive_a_kill() {
    let kills: usize = std::env::var("HOOKLINE_DURABLE_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let seed = std::env::var("HOOKLINE_DURABLE_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| fastrand::u64(..));
    eprintln!("HOOKLINE_DURABLE_SEED={seed}");
    let mut rng = fastrand::Rng::with_seed(seed);
    for kill in 0..kills {
        let dir = tempfile::tempdir().unwrap();
        prepare(dir.path());
        let (started, finished) = killed_run(dir.path(), rng.usize(2..400)).await;
        let (users, turns_finished) = stored(&dir.path().join("ws")).await;
        for turn in &started {
            assert!(
                users.contains(turn),
                "kill {kill}: the plugin saw '{turn}' start, the store does not hold it"
            );
        }
        for turn in &finished {
            assert!(
                turns_finished.contains(turn),
                "kill {kill}: the plugin saw '{turn}' finish, the store does not hold its end"
            );
        }
    }
}
