//! `hookline serve` out of file descriptors (issue 11 item 2: never a 500 for what a client can
//! send): the real binary under a small `ulimit -n` is asked for sessions until the store cannot
//! open a file. The refusal is a 503 `out-of-descriptors` with `Retry-After`, the server goes on
//! serving the sessions it holds, and once some are closed it opens new ones again.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::Duration;

use serde_json::json;

mod cluster_support;
use cluster_support::Node;

/// The server's descriptor limit: room for its own start (plugins, listener, store) and a few
/// dozen sessions, one lock file each.
const DESCRIPTORS: u32 = 64;
/// More opens than the limit can hold.
const MOST_OPENS: usize = 200;
const DEADLINE: Duration = Duration::from_secs(30);

/// Starts the binary with `ulimit -n DESCRIPTORS` on an ephemeral port.
fn start(dir: &std::path::Path) -> Node {
    let mut shell = Command::new("/bin/sh");
    shell
        .arg("-c")
        .arg(format!("ulimit -n {DESCRIPTORS} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_hookline"));
    Node::spawn("small", dir, shell, &[])
}

#[tokio::test]
async fn a_server_out_of_descriptors_refuses_with_a_503_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path());
    let url = &server.url;
    let http = reqwest::Client::builder()
        .timeout(DEADLINE)
        .build()
        .unwrap();
    let open = || async {
        http.post(format!("{url}/v1/sessions"))
            .json(&json!({}))
            .send()
            .await
            .unwrap()
    };

    let mut opened = Vec::new();
    let refusal = loop {
        assert!(
            opened.len() < MOST_OPENS,
            "{MOST_OPENS} sessions opened under a limit of {DESCRIPTORS} descriptors"
        );
        let response = open().await;
        if response.status() != 201 {
            break response;
        }
        let body: serde_json::Value = response.json().await.unwrap();
        opened.push(body["key"].as_str().unwrap().to_owned());
    };
    assert!(opened.len() >= 2, "only {} sessions opened", opened.len());
    assert_eq!(refusal.status(), 503);
    assert!(refusal.headers().contains_key("retry-after"));
    let body: serde_json::Value = refusal.json().await.unwrap();
    assert_eq!(body["error"]["code"], "out-of-descriptors", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("The server is out of file descriptors ("),
        "{body}"
    );

    // Closing two sessions gives their descriptors back: a new session opens and runs a turn.
    for key in &opened[..2] {
        let closed = http
            .delete(format!("{url}/v1/sessions/{key}"))
            .send()
            .await
            .unwrap();
        assert_eq!(closed.status(), 200, "closing {key}");
    }
    let reopened = open().await;
    assert_eq!(reopened.status(), 201);
    let key = reopened.json::<serde_json::Value>().await.unwrap()["key"]
        .as_str()
        .unwrap()
        .to_owned();
    let turn = http
        .post(format!("{url}/v1/sessions/{key}/turns"))
        .json(&json!({ "text": "still here" }))
        .send()
        .await
        .unwrap();
    assert_eq!(turn.status(), 200);
    let records = http
        .get(format!("{url}/v1/sessions/{key}"))
        .send()
        .await
        .unwrap()
        .json::<serde_json::Value>()
        .await
        .unwrap();
    assert!(records.to_string().contains("still here"), "{records}");
}
