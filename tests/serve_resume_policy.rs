//! Issue 26, as a user met it: a session opened with `{"approvalMode": "ask-all"}` runs two
//! turns, `hookline serve` is stopped with SIGTERM and started again on the same store, and
//! `POST /v1/sessions/{id}/resume` answers the session as it was (ask-all, its model, 2 turns),
//! on the file store and on PostgreSQL. A server whose `--workspace-root` no longer holds the
//! session's workspace refuses the resume with 403 instead of running it elsewhere.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "cluster_support/mod.rs"]
mod cluster;
#[path = "support/pg.rs"]
mod pg;

use std::path::Path;
use std::time::{Duration, Instant};

use cluster::{Client, Node};
use serde_json::json;

async fn restart_keeps_the_policy(dir: &Path, store: &str, extra: &[&str]) {
    let client = Client::new();
    let mut node = Node::start("a", dir, store, extra);
    let (status, opened) = client
        .post(
            &format!("{}/v1/sessions", node.url),
            json!({"approvalMode": "ask-all", "model": "gpt"}),
        )
        .await
        .unwrap();
    assert_eq!(status, 201, "{opened}");
    let key = opened["key"].as_str().unwrap().to_owned();
    for text in ["one", "two"] {
        let (status, body) = client.turn(&node.url, &key, text).await.unwrap();
        assert_eq!(status, 200, "{body}");
    }
    node.terminate();
    drop(node);

    // The same root and store: the session resumes as it was.
    let node = Node::start("a", dir, store, extra);
    let deadline = Instant::now() + Duration::from_secs(20);
    let resumed = client.resume(&node.url, &key, deadline).await;
    assert_eq!(resumed["approvalMode"], "ask-all", "{resumed}");
    assert_eq!(resumed["model"], "gpt", "{resumed}");
    assert_eq!(resumed["turns"], 2, "{resumed}");
    assert_eq!(resumed["workspace"], opened["workspace"], "{resumed}");
}

#[actix_rt::test]
async fn a_restarted_server_resumes_an_ask_all_session_as_ask_all_on_the_file_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let store = store.to_str().unwrap();
    restart_keeps_the_policy(dir.path(), store, &[]).await;

    // Node b serves another root: the stored workspace is outside it, so the resume is a 403
    // and the session is not run there.
    let elsewhere = tempfile::tempdir().unwrap();
    let b = Node::start("b", elsewhere.path(), store, &[]);
    let key = {
        let sessions = std::fs::read_dir(Path::new(store).join("sessions")).unwrap();
        let first = sessions.filter_map(Result::ok).next().unwrap();
        first.file_name().to_string_lossy().into_owned()
    };
    let (status, body) = Client::new()
        .post(&format!("{}/v1/sessions/{key}/resume", b.url), json!({}))
        .await
        .unwrap();
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["code"], "workspace-outside-root", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!(
            "Session '{key}' cannot be resumed: its workspace '"
        )) && message.ends_with("' is outside this server's workspace root."),
        "{message}"
    );
}

#[actix_rt::test]
async fn a_restarted_server_resumes_an_ask_all_session_as_ask_all_on_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let url = pg::database_url();
    restart_keeps_the_policy(dir.path(), &url, &["--migrate", "--node", "a"]).await;
}
