//! Issue 22 item 3 through the real binary: idempotency keys are stored with the session, so
//! they hold after `hookline serve` is stopped (SIGTERM, a drain) or killed (SIGKILL) and the
//! session is resumed by a new process, on the file store and on PostgreSQL. A repeated keyed
//! turn or command gets its first answer and runs nothing; a turn cut off by the kill is answered
//! 409 `request-interrupted` and never runs again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "cluster_support/mod.rs"]
mod cluster;
#[path = "support/pg.rs"]
mod pg;

use std::path::Path;
use std::time::{Duration, Instant};

use cluster::{Client, Node};
use serde_json::json;

/// A tool call that runs without an approval (a read).
const READ: &str = r#"call list_dir {"path":"."}"#;
/// A tool call that waits for the operator.
const WRITE: &str = r#"call write_file {"path":"out.txt","content":"once"}"#;

/// POSTs `body` to `base{path}` with `Idempotency-Key: key`: the status, whether the answer is
/// marked as replayed, whether it has `Retry-After`, and the JSON answer.
async fn keyed(
    client: &Client,
    url: &str,
    key: &str,
    body: serde_json::Value,
) -> (u16, bool, bool, serde_json::Value) {
    let response = client
        .0
        .post(url)
        .header("idempotency-key", key)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let replayed = response.headers().get("idempotent-replayed").is_some();
    let retry = response.headers().get("retry-after").is_some();
    (status, replayed, retry, response.json().await.unwrap())
}

/// The session's user turns and its stored tool results.
async fn counts(client: &Client, base: &str, key: &str) -> (u64, usize) {
    let (status, shown) = client
        .get(&format!("{base}/v1/sessions/{key}?limit=1000"))
        .await
        .unwrap();
    assert_eq!(status, 200, "{shown}");
    let results = shown["records"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "tool-result")
        .count();
    (shown["session"]["turns"].as_u64().unwrap(), results)
}

async fn keys_hold_after_a_drain_and_a_resume(dir: &Path, store: &str, extra: &[&str]) {
    let client = Client::new();
    let mut node = Node::start("a", dir, store, extra);
    let key = client.open(&node.url).await;
    let turns = format!("/v1/sessions/{key}/turns");
    let commands = format!("/v1/sessions/{key}/commands");
    let (status, _, _, first) = keyed(
        &client,
        &format!("{}{turns}", node.url),
        "t-1",
        json!({ "text": READ }),
    )
    .await;
    assert_eq!(status, 200, "{first}");
    let (status, _, _, command) = keyed(
        &client,
        &format!("{}{commands}", node.url),
        "c-1",
        json!({ "command": "/mode plan" }),
    )
    .await;
    assert_eq!(status, 200, "{command}");
    assert_eq!(counts(&client, &node.url, &key).await, (1, 1));
    node.terminate();
    drop(node);

    let node = Node::start("a", dir, store, extra);
    let deadline = Instant::now() + Duration::from_secs(20);
    client.resume(&node.url, &key, deadline).await;
    let (status, replayed, _, again) = keyed(
        &client,
        &format!("{}{turns}", node.url),
        "t-1",
        json!({ "text": READ }),
    )
    .await;
    assert_eq!((status, replayed), (200, true), "{again}");
    assert_eq!(again, first);
    assert_eq!(counts(&client, &node.url, &key).await, (1, 1));
    let (status, replayed, _, again) = keyed(
        &client,
        &format!("{}{commands}", node.url),
        "c-1",
        json!({ "command": "/mode plan" }),
    )
    .await;
    assert_eq!((status, replayed), (200, true), "{again}");
    assert_eq!(again, command);
    // Another body under a stored key is still refused, and a new key runs.
    let (status, _, _, refused) = keyed(
        &client,
        &format!("{}{turns}", node.url),
        "t-1",
        json!({ "text": "something else" }),
    )
    .await;
    assert_eq!(status, 422, "{refused}");
    let (status, replayed, _, _) = keyed(
        &client,
        &format!("{}{turns}", node.url),
        "t-2",
        json!({ "text": READ }),
    )
    .await;
    assert_eq!((status, replayed), (200, false));
    assert_eq!(counts(&client, &node.url, &key).await, (2, 2));
}

async fn a_killed_turn_is_interrupted_not_run_again(dir: &Path, store: &str, extra: &[&str]) {
    let client = Client::new();
    let mut node = Node::start("a", dir, store, extra);
    let key = client.open(&node.url).await;
    let url = format!("{}/v1/sessions/{key}/turns", node.url);
    let waiting = {
        let request = client
            .0
            .post(&url)
            .header("idempotency-key", "w-1")
            .json(&json!({ "text": WRITE }));
        tokio::spawn(request.send())
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let asked = loop {
        let (_, shown) = client
            .get(&format!("{}/v1/sessions/{key}", node.url))
            .await
            .unwrap();
        if shown["session"]["activity"] == "approval" {
            break shown["pendingApprovals"].clone();
        }
        assert!(Instant::now() < deadline, "the turn never asked: {shown}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    node.kill();
    // The client of the killed request loses its connection; it never got an answer.
    assert!(waiting.await.unwrap().is_err());
    drop(node);

    let node = Node::start("b", dir, store, extra);
    let deadline = Instant::now() + Duration::from_secs(20);
    client.resume(&node.url, &key, deadline).await;
    let url = format!("{}/v1/sessions/{key}/turns", node.url);
    let (status, replayed, retry, answer) =
        keyed(&client, &url, "w-1", json!({ "text": WRITE })).await;
    assert_eq!((status, replayed, retry), (409, true, false), "{answer}");
    assert_eq!(answer["error"]["code"], "request-interrupted");
    assert_eq!(
        answer["error"]["message"],
        format!(
            "The request with Idempotency-Key 'w-1' was cut off when the process running it \
             stopped, and it is not run again; GET /v1/sessions/{key} shows what it stored."
        )
    );
    // The answer is stored: the same again, and the tool never ran.
    let (status, replayed, _, again) = keyed(&client, &url, "w-1", json!({ "text": WRITE })).await;
    assert_eq!((status, replayed), (409, true));
    assert_eq!(again, answer);
    assert!(!node.root.join("out.txt").exists());
    let (_, shown) = client
        .get(&format!("{}/v1/sessions/{key}", node.url))
        .await
        .unwrap();
    // The turn the request started is not run again either: it waits for the same approval
    // again on this node (issue 40 item 3), and its tool runs only once that is answered.
    assert_eq!(shown["session"]["activity"], "approval", "{shown}");
    assert_eq!(shown["pendingApprovals"], asked, "{shown}");
}

#[actix_rt::test]
async fn keys_hold_after_a_drain_and_a_resume_on_the_file_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    keys_hold_after_a_drain_and_a_resume(dir.path(), store.to_str().unwrap(), &[]).await;
}

#[actix_rt::test]
async fn keys_hold_after_a_drain_and_a_resume_on_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let url = pg::database_url();
    keys_hold_after_a_drain_and_a_resume(dir.path(), &url, &["--migrate", "--node", "a"]).await;
}

#[actix_rt::test]
async fn a_killed_keyed_turn_is_interrupted_not_run_again_on_the_file_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    a_killed_turn_is_interrupted_not_run_again(dir.path(), store.to_str().unwrap(), &[]).await;
}

#[actix_rt::test]
async fn a_killed_keyed_turn_is_interrupted_not_run_again_on_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let url = pg::database_url();
    let extra = ["--migrate", "--lease-ttl-ms", "900"];
    a_killed_turn_is_interrupted_not_run_again(dir.path(), &url, &extra).await;
}

#[actix_rt::test]
async fn idempotency_ttl_and_keys_are_flags_and_bad_values_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let store = store.to_str().unwrap();
    for (flag, value) in [
        ("--idempotency-ttl", "soon"),
        ("--idempotency-ttl", "1 fortnight"),
        ("--idempotency-keys", "0"),
    ] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_hookline"))
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--store",
                store,
                flag,
                value,
            ])
            .env("HOOKLINE_HOME", dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{flag} {value}: {stderr}");
        assert!(stderr.contains(flag), "{stderr}");
    }
    // A short lifetime: the key is remembered, then forgotten and its request runs again.
    let client = Client::new();
    let node = Node::start("a", dir.path(), store, &["--idempotency-ttl", "2s"]);
    let key = client.open(&node.url).await;
    let url = format!("{}/v1/sessions/{key}/turns", node.url);
    let body = json!({ "text": "hello" });
    let (status, replayed, ..) = keyed(&client, &url, "k", body.clone()).await;
    assert_eq!((status, replayed), (200, false));
    let (status, replayed, ..) = keyed(&client, &url, "k", body.clone()).await;
    assert_eq!((status, replayed), (200, true));
    // Waiting for the key's lifetime to pass (the store compares wall-clock times).
    tokio::time::sleep(Duration::from_millis(2200)).await;
    let (status, replayed, ..) = keyed(&client, &url, "k", body).await;
    assert_eq!((status, replayed), (200, false));
    assert_eq!(counts(&client, &node.url, &key).await.0, 2);
}
