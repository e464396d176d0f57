//! The drain of the real `hookline serve` binary (issue 11 items 4 and 6): many clients run turns,
//! SIGTERM arrives mid-load, and afterwards every turn the server acknowledged (a 200 answer) is
//! in the store, and the process exited 0 within its budget.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hookline::host::store::{Log, Store};
use hookline::messages::record::Record;
use hookline::messages::session::SessionId;
use nix::sys::signal::{kill, Signal};
use serde_json::json;

mod cluster_support;
use cluster_support::Node;

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
    let Ok(response) = http
        .post(format!("{url}/v1/sessions"))
        .json(&json!({}))
        .send()
        .await
    else {
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
            let status = answer.status();
            let body = answer.text().await.unwrap_or_default();
            assert_eq!(status, 503, "only a drain may refuse a turn: {body}");
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
    let dir = tempfile::tempdir().unwrap();
    let command = Command::new(env!("CARGO_BIN_EXE_hookline"));
    let budget = DRAIN_BUDGET_MS.to_string();
    let mut server = Node::spawn(
        "drain",
        dir.path(),
        command,
        &["--drain-budget-ms", &budget],
    );
    let url = server.url.clone();
    let http = reqwest::Client::builder()
        .timeout(DEADLINE)
        .build()
        .unwrap();
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
    kill(server.pid(), Signal::SIGTERM).unwrap();
    let signalled_at = Instant::now();
    for client in clients {
        tokio::time::timeout(DEADLINE, client)
            .await
            .expect("a client hung")
            .unwrap();
    }
    let status = loop {
        if let Some(status) = server.exit_status() {
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
        let store = Store::open(server.root.join(".hookline")).unwrap();
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
