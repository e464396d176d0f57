//! Issue 22 item 5: `hookline serve` killed with SIGKILL mid-turn, on the file store and on
//! PostgreSQL. One session's turn waits for the operator's approval, another's tool is running
//! (a plugin tool that signals once it started and then never returns); the server is killed,
//! another server starts on the same store and resumes both. Each durable step the turn had
//! reached is stored; the running tool's turn is closed with a failed result for its open call
//! and the cut-off marker, the approval's turn waits for the approval again there (issue 40 item
//! 3) and ends once it is answered; and each session runs another turn, which the echo model
//! answers.
//! (The model-streaming case, where the echo model is too quick to be caught, is in-process in
//! `tests/turn_cut_off.rs`.)
//!
//! Then a crash loop on the file store: one long session whose turns each read a file (a tool
//! call, its result, the answer) runs on a server killed at a random point, again and again
//! (`HOOKLINE_SERVE_CRASH_KILLS`, default 8; `HOOKLINE_SERVE_CRASH_SEED` replays one run; the seed
//! is printed). After every restart and resume: every acknowledged turn is stored once and in
//! order, whole; at most the one turn in flight is beyond them, closed; no tool call or result is
//! stored twice.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "cluster_support/mod.rs"]
mod cluster;
#[path = "support/pg.rs"]
mod pg;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cluster::{Client, Node};
use hookline::host::store::{FileStore, FileStoreOptions, SessionStore};
use hookline::messages::cut_off::CutOff;
use hookline::messages::record::Record;
use hookline::messages::session::SessionId;

/// The bound on every wait.
const DEADLINE: Duration = Duration::from_secs(40);

/// A plugin with one read-only tool, `slow`, that writes `STARTED` and then waits until its host
/// is gone.
const PLUGIN: &str = r#"
import json, os, sys, time
print(json.dumps({"type": "hello", "protocol": 1, "tools": [{"name": "slow",
    "description": "Takes its time.", "risk": "read", "authority": "workspace"}]}), flush=True)
parent = os.getppid()
for line in sys.stdin:
    request = json.loads(line)
    if request["type"] == "goodbye":
        break
    if request["type"] == "tool":
        open("STARTED", "w").write("started")
        while os.getppid() == parent:
            time.sleep(0.05)
        sys.exit(0)
"#;

/// Installs the plugin in the plugins home of node `name` under `dir`; returns its `STARTED`.
fn install(dir: &Path, name: &str) -> PathBuf {
    let plugin = dir.join(format!("home-{name}/plugins/slow"));
    std::fs::create_dir_all(&plugin).unwrap();
    std::fs::write(plugin.join("plugin.py"), PLUGIN).unwrap();
    std::fs::write(
        plugin.join("plugin.json"),
        r#"{"entry": "plugin.py", "interpreter": "python3"}"#,
    )
    .unwrap();
    plugin.join("STARTED")
}

/// Polls `check` every 20 ms until it holds or the deadline passes.
async fn until(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + DEADLINE;
    while !check().await {
        assert!(Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Where sessions are stored, and how the test reads them without a lease.
enum Backend {
    Files(PathBuf),
    Postgres(String),
}

impl Backend {
    fn store_arg(&self) -> String {
        match self {
            Self::Files(dir) => dir.display().to_string(),
            Self::Postgres(url) => url.clone(),
        }
    }

    fn args(&self) -> Vec<&'static str> {
        match self {
            Self::Files(_) => vec![],
            Self::Postgres(_) => vec!["--migrate", "--lease-ttl-ms", "900"],
        }
    }

    async fn records(&self, key: &str) -> Vec<Record> {
        let id = SessionId::new(key);
        match self {
            Self::Files(dir) => {
                FileStore::open(dir, FileStoreOptions::default())
                    .unwrap()
                    .read(&id)
                    .await
                    .unwrap()
                    .unwrap()
                    .records
            }
            Self::Postgres(url) => cluster::stored(&cluster::reader(url).await, key).await,
        }
    }
}

/// The records after the user message `text`, without the system text.
fn after_user(records: &[Record], text: &str) -> Vec<Record> {
    let start = records
        .iter()
        .position(|r| matches!(r, Record::User { text: t, .. } if t == text))
        .unwrap_or_else(|| panic!("'{text}' is not stored: {records:?}"));
    records[start + 1..]
        .iter()
        .filter(|r| !matches!(r, Record::System { .. }))
        .cloned()
        .collect()
}

fn made_up(call_id: &str, name: &str, text: &str) -> Record {
    Record::ToolResult {
        call_id: call_id.into(),
        name: name.into(),
        text: text.into(),
        images: Vec::new(),
        success: false,
    }
}

const WRITE: &str = r#"call write_file {"path":"a.txt","content":"x"}"#;

async fn killed_mid_turn_then_resumed(backend: Backend, dir: &Path) {
    let started = install(dir, "a");
    install(dir, "b");
    let client = Client::new();
    let mut a = Node::start("a", dir, &backend.store_arg(), &backend.args());
    let waiting = client.open(&a.url).await;
    let running = client.open(&a.url).await;
    let turn = |key: &str, text: &str| {
        let (client, base, key, text) = (
            client.clone(),
            a.url.clone(),
            key.to_owned(),
            text.to_owned(),
        );
        tokio::spawn(async move { client.turn(&base, &key, &text).await })
    };
    let approval = turn(&waiting, WRITE);
    let status = format!("{}/v1/sessions/{waiting}", a.url);
    until("the turn waits for approval", async || {
        let (_, body) = client.get(&status).await.unwrap();
        body["session"]["activity"] == "approval"
    })
    .await;
    let tool = turn(&running, "call slow {}");
    until("the tool started", async || started.exists()).await;
    a.kill();
    // Neither turn was acknowledged.
    assert!(approval.await.unwrap().is_err());
    assert!(tool.await.unwrap().is_err());

    let b = Node::start("b", dir, &backend.store_arg(), &backend.args());
    let deadline = Instant::now() + DEADLINE;
    // Issue 40 item 3: the turn that waited for the operator is the one not closed: it waits
    // again on b, with the same call id; denied there, its call never runs and the turn ends.
    let status = client.resume(&b.url, &waiting, deadline).await;
    assert_eq!(status["activity"], "approval", "{status}");
    let (code, answer) = client
        .post(
            &format!("{}/v1/sessions/{waiting}/approvals/call-2", b.url),
            serde_json::json!({ "decision": "deny" }),
        )
        .await
        .unwrap();
    assert_eq!(code, 200, "{answer}");
    until("the continued turn ends", async || {
        let (_, body) = client
            .get(&format!("{}/v1/sessions/{waiting}", b.url))
            .await
            .unwrap();
        body["session"]["activity"] == "idle"
    })
    .await;
    let records = backend.records(&waiting).await;
    let steps = after_user(&records, WRITE);
    assert!(
        matches!(&steps[..2], [Record::ToolCall { call_id, .. }, Record::ToolResult { success: false, .. }] if call_id == "call-2"),
        "{steps:?}"
    );
    assert!(
        !steps.iter().any(|r| matches!(r, Record::CutOff { .. })),
        "{steps:?}"
    );
    for (key, text, call_id, name, at, result) in [(
        &running,
        "call slow {}",
        "call-2",
        "slow",
        CutOff::ToolStarted {
            call_id: "call-2".into(),
            name: "slow".into(),
        },
        "The turn was cut off while this call ran; its result was not stored.",
    )] {
        let status = client.resume(&b.url, key, deadline).await;
        assert_eq!(status["key"], key.as_str(), "{status}");
        let records = backend.records(key).await;
        let Some(Record::ToolCall { arguments, .. }) = after_user(&records, text).first().cloned()
        else {
            panic!("{key}: the tool call was not durable: {records:?}")
        };
        assert_eq!(
            after_user(&records, text),
            vec![
                Record::ToolCall {
                    call_id: call_id.into(),
                    name: name.into(),
                    arguments,
                },
                made_up(call_id, name, result),
                Record::CutOff { at },
            ],
            "{key}"
        );
        let (code, answer) = client.turn(&b.url, key, "next").await.unwrap();
        assert_eq!(code, 200, "{answer}");
        let records = backend.records(key).await;
        assert_eq!(
            after_user(&records, "next"),
            vec![Record::Assistant {
                text: "echo: next".into()
            }],
            "{key}: the next turn answers the new message"
        );
        cluster::assert_turns_whole(key, &records);
    }
    cluster::assert_turns_whole(&waiting, &backend.records(&waiting).await);
    assert!(
        !b.root.join("a.txt").exists(),
        "the call waiting for approval never ran"
    );
}

#[tokio::test]
async fn a_killed_server_s_turns_are_closed_on_resume_on_the_file_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("root/.hookline");
    killed_mid_turn_then_resumed(Backend::Files(store), dir.path()).await;
}

#[tokio::test]
async fn a_killed_server_s_turns_are_closed_on_resume_on_postgres() {
    let dir = tempfile::tempdir().unwrap();
    killed_mid_turn_then_resumed(Backend::Postgres(pg::database_url()), dir.path()).await;
}

/// splitmix64: a tiny deterministic generator, so a seed replays the same kill points.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Kills in the crash loop.
fn kills() -> usize {
    std::env::var("HOOKLINE_SERVE_CRASH_KILLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(8)
}

/// Checks the long session after a restart: acknowledged turns once each and in order, then at
/// most the turn in flight; every turn closed; no call or result stored twice.
fn check_loop(records: &[Record], acked: &[String], in_flight: Option<&String>) {
    let texts = cluster::user_texts(records);
    assert!(
        texts.starts_with(acked),
        "acknowledged turns lost or reordered: stored {texts:?}, acknowledged {acked:?}"
    );
    let extra = &texts[acked.len()..];
    assert!(
        extra.is_empty() || (extra.len() == 1 && Some(&extra[0]) == in_flight),
        "beyond the acknowledged turns: {extra:?} (in flight: {in_flight:?})"
    );
    cluster::assert_turns_whole("loop", records);
    let mut calls = std::collections::HashSet::new();
    let mut results = std::collections::HashSet::new();
    for record in records {
        match record {
            Record::ToolCall { call_id, .. } => {
                assert!(calls.insert(call_id.clone()), "call {call_id} stored twice")
            }
            Record::ToolResult { call_id, .. } => {
                assert!(
                    results.insert(call_id.clone()),
                    "result {call_id} stored twice"
                )
            }
            _ => {}
        }
    }
}

#[tokio::test]
async fn a_server_killed_again_and_again_loses_no_acknowledged_step_and_stores_none_twice() {
    let seed = std::env::var("HOOKLINE_SERVE_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        });
    eprintln!("HOOKLINE_SERVE_CRASH_SEED={seed}");
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("root/.hookline");
    let backend = Backend::Files(store);
    std::fs::create_dir_all(dir.path().join("root")).unwrap();
    std::fs::write(dir.path().join("root/notes.txt"), "three little words").unwrap();
    let client = Client::new();
    let mut acked: Vec<String> = Vec::new();
    let mut key: Option<String> = None;
    for kill in 0..kills() {
        let mut node = Node::start(&format!("n{kill}"), dir.path(), &backend.store_arg(), &[]);
        let key = match &key {
            Some(key) => {
                let deadline = Instant::now() + DEADLINE;
                client.resume(&node.url, key, deadline).await;
                key.clone()
            }
            None => key.insert(client.open(&node.url).await).clone(),
        };
        let in_flight = std::sync::Arc::new(std::sync::Mutex::new(None::<String>));
        let done = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let runner = {
            let (client, base, key) = (client.clone(), node.url.clone(), key.clone());
            let (in_flight, done) = (in_flight.clone(), done.clone());
            tokio::spawn(async move {
                for turn in 0.. {
                    let text = format!(
                        "kill {kill} turn {turn}\ncall read_file {{\"path\":\"notes.txt\"}}"
                    );
                    *in_flight.lock().unwrap() = Some(text.clone());
                    match client.turn(&base, &key, &text).await {
                        Ok((200, _)) => done.lock().unwrap().push(text),
                        Ok((status, body)) => panic!("turn refused: {status} {body}"),
                        Err(_) => return,
                    }
                }
            })
        };
        // A random point: anywhere from before the first turn to several turns in.
        tokio::time::sleep(Duration::from_millis(rng.next() % 400)).await;
        node.kill();
        tokio::time::timeout(DEADLINE, runner)
            .await
            .expect("the client hung after the kill")
            .unwrap();
        let flight = in_flight.lock().unwrap().clone();
        acked.extend(done.lock().unwrap().drain(..));
        // The next server resumes it (and closes a cut-off turn); the check reads after that.
        let node = Node::start(&format!("r{kill}"), dir.path(), &backend.store_arg(), &[]);
        let deadline = Instant::now() + DEADLINE;
        client.resume(&node.url, &key, deadline).await;
        let records = backend.records(&key).await;
        check_loop(&records, &acked, flight.as_ref());
        // A turn stored but not acknowledged counts from now on as stored: it is in the records.
        let texts = cluster::user_texts(&records);
        acked = texts;
        drop(node);
    }
    let key = key.unwrap();
    let records = backend.records(&key).await;
    let cut = records
        .iter()
        .filter(|r| matches!(r, Record::CutOff { .. }))
        .count();
    eprintln!(
        "{} kills: {} turns stored, {cut} of them cut off and closed on resume",
        kills(),
        acked.len()
    );
    assert!(acked.len() >= kills(), "too few turns ran: {}", acked.len());
}
