//! The drain of the real `hookline serve` binary (issue 11 items 4 and 6): many clients run turns,
//! SIGTERM arrives mid-load, and afterwards every turn the server acknowledged (a 200 answer) is
//! in the store, and the process exited 0 within its budget.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::io::BufRead as _;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hookline::host::store::{Log, Store};
use hookline::messages::session::SessionId;
use hookline::messages::record::Record;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::json;

/// Clients running turns at once.
const CLIENTS: usize = 24;
/// Acknowledged turns before the signal.
const BEFORE_SIGNAL: usize = 60;
/// The drain budget the server is given.
const DRAIN_BUDGET_MS: u64 = 2_000;
/// The exit must come within the drain budget, `gateway:shutdown`'s 5 s and the session ends'
/// 2 s, plus start-up slack.
const EXIT_WITHIN: Duration = Duration::from_secs(15);
const DEADLINE: Duration = Duration::from_secs(30);

/// Kills the server if the test ends early.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Starts the binary on an ephemeral port and reads the address it prints.
fn start(root: &std::path::Path, home: &std::path::Path) -> (Server, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hookline"))
        .args(["serve", "--listen", "127.0.0.1:0", "--workspace-root"])
        .arg(root)
        .args(["--drain-budget-ms", &DRAIN_BUDGET_MS.to_string()])
        .env("HOOKLINE_HOME", home)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let server = Server(child);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = std::io::BufReader::new(stdout).lines();
        if let Some(Ok(line)) = lines.next() {
            let _ = tx.send(line);
        }
        // Keep reading so the child never blocks on a full pipe.
        for _ in lines {}
    });
    let line = rx.recv_timeout(DEADLINE).expect("the server never said where it listens");
    let url = line
        .rsplit(' ')
        .next()
        .expect("an address")
        .trim()
        .to_owned();
    (server, url)
}

/// What the clients saw acknowledged: session id -> user texts.
type Acked = Arc<Mutex<HashMap<String, Vec<String>>>>;

async fn client(
    http: reqwest::Client,
    url: String,
    c: usize,
    acked: Acked,
    count: Arc<AtomicUsize>,
    signalled: Arc<tokio::sync::Notify>,
) {
    let Ok(response) = http.post(format!("{url}/v1/sessions")).json(&json!({})).send().await else {
        return;
    };
    let Ok(session) = response.json::<serde_json::Value>().await else {
        return;
    };
    let Some(key) = session["key"].as_str().map(str::to_owned) else {
        return;
    };
    for n in 0.. {
        let text = format!("client {c} turn {n}");
        let answer = http
            .post(format!("{url}/v1/sessions/{key}/turns"))
            .json(&json!({ "text": text }))
            .send()
            .await;
        let Ok(answer) = answer else { return };
        if answer.status() != 200 {
            // Refused while draining (503): this client is done.
            assert_eq!(answer.status(), 503, "only a drain may refuse a turn");
            return;
        }
        let Ok(body) = answer.json::<serde_json::Value>().await else {
            return;
        };
        let id = body["sessionId"].as_str().unwrap().to_owned();
        acked.lock().unwrap().entry(id).or_default().push(text);
        if count.fetch_add(1, Ordering::SeqCst) + 1 == BEFORE_SIGNAL {
            signalled.notify_one();
        }
    }
}

#[tokio::test]
async fn sigterm_mid_load_loses_no_acknowledged_turn_and_exits_zero() {
    let root = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let (mut server, url) = start(root.path(), home.path());
    let http = reqwest::Client::builder().timeout(DEADLINE).build().unwrap();
    let acked: Acked = Arc::default();
    let count = Arc::new(AtomicUsize::new(0));
    let signalled = Arc::new(tokio::sync::Notify::new());
    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            tokio::spawn(client(
                http.clone(),
                url.clone(),
                c,
                acked.clone(),
                count.clone(),
                signalled.clone(),
            ))
        })
        .collect();
    tokio::time::timeout(DEADLINE, signalled.notified())
        .await
        .expect("the clients never got their turns answered");
    let pid = Pid::from_raw(i32::try_from(server.0.id()).unwrap());
    kill(pid, Signal::SIGTERM).unwrap();
    let signalled_at = Instant::now();
    for client in clients {
        tokio::time::timeout(DEADLINE, client)
            .await
            .expect("a client hung")
            .unwrap();
    }
    let status = loop {
        if let Some(status) = server.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            signalled_at.elapsed() < EXIT_WITHIN,
            "the server did not exit within {EXIT_WITHIN:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(status.code(), Some(0), "the drain must exit 0");
    let acked = acked.lock().unwrap().clone();
    let total: usize = acked.values().map(Vec::len).sum();
    assert!(total >= BEFORE_SIGNAL, "{total} turns acknowledged");
    for (session, texts) in &acked {
        let store = Store::open(root.path().join(".hookline")).unwrap();
        let log = store
            .session_dir(&SessionId::new(session.as_str()))
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
        for text in texts {
            assert!(
                stored.contains(&text.as_str()),
                "session {session}: acknowledged '{text}' is not in the store"
            );
        }
    }
}
