//! Issue 22 item 5: `hookline serve` killed with SIGKILL mid-turn, on the file store and on
//! PostgreSQL. One session's turn waits for the operator's approval, another's tool is running
//! (a plugin tool that signals once it started and then never returns); the server is killed,
//! another server starts on the same store and resumes both. Each durable step the turn had
//! reached is stored, the turn is closed with a failed result for its open call and the
//! cut-off marker, and the session runs another turn, which the echo model answers.
//! (The model-streaming case, where the echo model is too quick to be caught, is in-process in
//! `tests/turn_cut_off.rs`.)
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
    for (key, text, call_id, name, at, result) in [
        (
            &waiting,
            WRITE,
            "call-2",
            "write_file",
            CutOff::BeforeTool {
                call_id: "call-2".into(),
                name: "write_file".into(),
            },
            "The turn was cut off before this call ran; it did not run.",
        ),
        (
            &running,
            "call slow {}",
            "call-2",
            "slow",
            CutOff::ToolStarted {
                call_id: "call-2".into(),
                name: "slow".into(),
            },
            "The turn was cut off while this call ran; its result was not stored.",
        ),
    ] {
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
