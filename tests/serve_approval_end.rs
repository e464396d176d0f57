//! Issue 34 item 2, on the real binary: a session that ends while its turn waits for an
//! operator's approval does not wait for an answer nobody will give. Closing it (`DELETE`), a
//! command that replaces it (`/clear`), and a drain (SIGTERM) each stop the waiting turn at once:
//! the approval is denied with a note saying why (`approval-session-ended`), the tool never runs,
//! the turn ends `cancelled`, and the answer comes long before the approval's 60 s timeout.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "cluster_support/mod.rs"]
mod cluster;

use std::path::Path;
use std::time::{Duration, Instant};

use cluster::{Client, Node};
use hookline::host::store::{FileStore, FileStoreOptions, SessionStore};
use hookline::messages::note::{Note, SessionEnding};
use hookline::messages::record::ArchiveEntry;
use hookline::messages::session::SessionId;
use serde_json::{json, Value};

/// A bound on each wait, far below the approval's default 60 s timeout, which the requests
/// waited for before the fix.
const PROMPT: Duration = Duration::from_secs(8);

/// The turn every test starts: the echo model asks for `write_file`, which the default approval
/// mode asks the operator about.
const ASKING_TURN: &str = r#"call write_file {"path":"never.txt","content":"no"}"#;

/// Starts the asking turn on `key` and waits until the session waits for its approval; the
/// turn's answer arrives on the returned task.
async fn turn_waiting_for_approval(
    node: &Node,
    key: &str,
) -> tokio::task::JoinHandle<Result<(u16, Value), String>> {
    let client = Client::new();
    let (base, key_owned) = (node.url.clone(), key.to_owned());
    let turn = tokio::spawn(async move { client.turn(&base, &key_owned, ASKING_TURN).await });
    let client = Client::new();
    let deadline = Instant::now() + PROMPT;
    loop {
        let (_, shown) = client
            .get(&format!("{}/v1/sessions/{key}", node.url))
            .await
            .unwrap();
        if shown["approvals"].as_array().is_some_and(|a| !a.is_empty()) {
            return turn;
        }
        assert!(Instant::now() < deadline, "no approval was asked: {shown}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Checks that the turn answered 200, ended `cancelled`, and carries exactly one
/// `approval-session-ended` note, naming `by`; returns that note.
fn assert_cancelled_by(turn: Result<(u16, Value), String>, by: &str) -> Value {
    let (status, answer) = turn.unwrap();
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["stopReason"], "cancelled", "{answer}");
    let notes: Vec<&Value> = answer["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["note"]["kind"] == "approval-session-ended")
        .map(|e| &e["note"])
        .collect();
    assert_eq!(notes.len(), 1, "{answer}");
    assert_eq!(notes[0]["by"], by, "{answer}");
    notes[0].clone()
}

fn start(dir: &Path) -> Node {
    let store = dir.join("store");
    Node::start("node", dir, store.to_str().unwrap(), &[])
}

#[tokio::test]
async fn closing_a_session_denies_its_waiting_approval_at_once_and_cancels_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path());
    let client = Client::new();
    let key = client.open(&node.url).await;
    let turn = turn_waiting_for_approval(&node, &key).await;

    let asked = Instant::now();
    let closed = client
        .0
        .delete(format!("{}/v1/sessions/{key}", node.url))
        .send()
        .await
        .unwrap();
    assert_eq!(closed.status(), 200);
    assert!(
        asked.elapsed() < PROMPT,
        "the close waited {:?}",
        asked.elapsed()
    );
    assert_cancelled_by(turn.await.unwrap(), "close");
    assert!(!node.root.join("never.txt").exists(), "the denied tool ran");
}

#[tokio::test]
async fn clear_during_an_approval_wait_stops_the_turn_with_the_note() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path());
    let client = Client::new();
    let key = client.open(&node.url).await;
    let turn = turn_waiting_for_approval(&node, &key).await;

    let asked = Instant::now();
    let (status, cleared) = client
        .post(
            &format!("{}/v1/sessions/{key}/commands", node.url),
            json!({ "command": "/clear" }),
        )
        .await
        .unwrap();
    assert_eq!(status, 200, "{cleared}");
    assert!(
        asked.elapsed() < PROMPT,
        "/clear waited {:?}",
        asked.elapsed()
    );
    let note = assert_cancelled_by(turn.await.unwrap(), "replaced");
    assert_eq!(
        note["call_id"].as_str().map(str::is_empty),
        Some(false),
        "{note}"
    );

    // The session goes on: a fresh one replaced it, and a turn runs on it.
    let (status, next) = client.turn(&node.url, &key, "hello").await.unwrap();
    assert_eq!(status, 200, "{next}");
    assert_eq!(next["stopReason"], "completed", "{next}");
}

#[tokio::test]
async fn a_drain_stops_a_turn_waiting_for_approval_without_spending_its_budget() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    // A drain budget far longer than the wait allowed below: before the fix the turn waited the
    // whole budget (then was stopped), or the approval's 60 s.
    let mut node = Node::start(
        "node",
        dir.path(),
        store.to_str().unwrap(),
        &["--drain-budget-ms", "30000"],
    );
    let client = Client::new();
    let key = client.open(&node.url).await;
    let turn = turn_waiting_for_approval(&node, &key).await;
    let (_, shown) = client
        .get(&format!("{}/v1/sessions/{key}", node.url))
        .await
        .unwrap();
    let session = shown["session"]["sessionId"].as_str().unwrap().to_owned();

    let asked = Instant::now();
    node.terminate();
    assert!(
        asked.elapsed() < PROMPT,
        "the drain took {:?}",
        asked.elapsed()
    );
    // The turn's answer may or may not reach the client before the listener closes; the store
    // says what happened.
    let _ = turn.await;
    let stored = FileStore::open(&store, FileStoreOptions::default())
        .unwrap()
        .read(&SessionId::new(session.as_str()))
        .await
        .unwrap()
        .unwrap();
    let ended: Vec<&Note> = stored
        .archive
        .iter()
        .filter_map(|entry| match entry {
            ArchiveEntry::Note {
                note: note @ Note::ApprovalSessionEnded { .. },
                ..
            } => Some(note),
            _ => None,
        })
        .collect();
    assert!(
        matches!(
            ended.as_slice(),
            [Note::ApprovalSessionEnded {
                by: SessionEnding::Drain,
                ..
            }]
        ),
        "{:?}",
        stored.archive
    );
    assert!(
        stored.archive.iter().any(|entry| matches!(
            entry,
            ArchiveEntry::TurnFinished {
                stop_reason: hookline::messages::user::StopReason::Cancelled
            }
        )),
        "{:?}",
        stored.archive
    );
    assert!(!node.root.join("never.txt").exists(), "the denied tool ran");
}
