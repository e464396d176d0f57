//! No resume dance (issue 40 item 2): with the default lease TTL of 30 s, a request sent to node
//! B for a session node A holds is refused with 409 `session-leased` naming A while A runs;
//! once A is killed, the same request, sent again as it was (no `/resume`), is answered by B at
//! once, long before A's lease would have expired, with every turn A acknowledged there.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/pg.rs"]
mod pg;

mod cluster_support;

use std::time::{Duration, Instant};

use cluster_support::{assert_turns_whole, reader, stored, user_texts, Client, Node};
use hookline::host::store::SessionStore as _;

/// Sessions on node A.
const SESSIONS: usize = 4;
/// Well below the default TTL (30 s): a takeover within it is liveness, not expiry.
const TAKEOVER_BOUND: Duration = Duration::from_secs(10);

#[tokio::test]
async fn a_dead_node_s_sessions_answer_on_another_node_without_a_resume() {
    let url = pg::database_url();
    let dir = tempfile::tempdir().unwrap();
    let db = reader(&url).await;
    let mut a = Node::start("a", dir.path(), &url, &["--node", "a", "--migrate"]);
    let b = Node::start("b", dir.path(), &url, &["--node", "b"]);
    let client = Client::new();
    let mut keys = Vec::new();
    for _ in 0..SESSIONS {
        let key = client.open(&a.url).await;
        let (status, body) = client.turn(&a.url, &key, "on a").await.unwrap();
        assert_eq!(status, 200, "{body}");
        keys.push(key);
    }
    // While A runs, B names it.
    for key in &keys {
        let (status, body) = client
            .get(&format!("{}/v1/sessions/{key}", b.url))
            .await
            .unwrap();
        assert_eq!(status, 409, "{body}");
        assert_eq!(body["error"]["code"], "session-leased", "{body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("node a"), "{message}");
    }
    // A session nobody stored is still unknown.
    let (status, body) = client
        .get(&format!("{}/v1/sessions/no-such-session", b.url))
        .await
        .unwrap();
    assert_eq!(status, 404, "{body}");

    a.kill();
    let killed = Instant::now();
    // The client only sends its turn again: B takes each session over and answers it.
    let turns = keys.iter().map(|key| {
        let (client, base) = (client.clone(), b.url.clone());
        async move {
            loop {
                match client.turn(&base, key, "on b").await {
                    Ok((200, _)) => return killed.elapsed(),
                    // The database has not seen A's connections end yet.
                    Ok((409, body)) if body["error"]["code"] == "session-leased" => {}
                    other => panic!("{key} on b: {other:?}"),
                }
                assert!(killed.elapsed() < TAKEOVER_BOUND, "{key} never moved");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    });
    let waits = futures::future::join_all(turns).await;
    eprintln!("kill to first good answer on b: {waits:?}");
    for key in &keys {
        let records = stored(&db, key).await;
        assert_eq!(user_texts(&records), ["on a", "on b"], "{key}");
        assert_turns_whole(key, &records);
        let lease = db
            .lease(&hookline::messages::session::SessionId::new(key.as_str()))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(lease.holder.as_deref(), Some("b"));
        assert!(lease.expires_in_ms.unwrap() > 20_000, "{lease:?}");
    }
}

/// A call the echo model makes, which the default approval mode asks the operator about.
fn write_call(n: usize) -> String {
    format!(r#"call write_file {{"path":"out-{n}.txt","content":"approved {n}"}}"#)
}

/// The approvals `base` lists, as (session, call id, deadline).
async fn approvals(client: &Client, base: &str) -> Vec<(String, String, u64)> {
    let (status, body) = client.get(&format!("{base}/v1/approvals")).await.unwrap();
    assert_eq!(status, 200, "{body}");
    body["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["session"].as_str().unwrap().to_owned(),
                a["callId"].as_str().unwrap().to_owned(),
                a["deadlineMs"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[tokio::test]
async fn an_approval_pending_on_a_killed_node_is_pending_on_the_next_and_its_tool_runs_once() {
    let url = pg::database_url();
    let dir = tempfile::tempdir().unwrap();
    let db = reader(&url).await;
    let timeout = ["--approval-timeout-ms", "60000"];
    let mut a = Node::start(
        "a",
        dir.path(),
        &url,
        &[&["--node", "a", "--migrate"][..], &timeout].concat(),
    );
    let b = Node::start(
        "b",
        dir.path(),
        &url,
        &[&["--node", "b"][..], &timeout].concat(),
    );
    let client = Client::new();
    // Two sessions on A, each with a turn waiting for the operator.
    let mut keys = Vec::new();
    for n in 0..2 {
        let key = client.open(&a.url).await;
        let (client, base, key2) = (client.clone(), a.url.clone(), key.clone());
        // The client's turn: it gets no answer, A dies first.
        tokio::spawn(async move { client.turn(&base, &key2, &write_call(n)).await });
        keys.push(key);
    }
    let deadline = Instant::now() + TAKEOVER_BOUND;
    let asked = loop {
        let asked = approvals(&client, &a.url).await;
        if asked.len() == keys.len() {
            break asked;
        }
        assert!(
            Instant::now() < deadline,
            "the approvals were never asked: {asked:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    a.kill();

    // Session 0: the operator's page on B shows it once the session is read there.
    let (key0, call0, deadline0) = asked.iter().find(|(k, ..)| k == &keys[0]).unwrap().clone();
    let shown = loop {
        let (status, body) = client
            .get(&format!("{}/v1/sessions/{key0}", b.url))
            .await
            .unwrap();
        if status == 200 {
            break body;
        }
        assert_eq!(body["error"]["code"], "session-leased", "{body}");
        assert!(Instant::now() < deadline, "{key0} never moved");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(shown["session"]["activity"], "approval", "{shown}");
    assert_eq!(
        shown["pendingApprovals"],
        serde_json::json!([call0]),
        "{shown}"
    );
    // Same id, and the deadline counted from when A first asked.
    assert!(approvals(&client, &b.url)
        .await
        .contains(&(key0.clone(), call0.clone(), deadline0)));

    // Session 1: the answer itself goes to B (the balancer sent it there) and is taken.
    let (key1, call1, _) = asked.iter().find(|(k, ..)| k == &keys[1]).unwrap().clone();
    for (key, call) in [(&key1, &call1), (&key0, &call0)] {
        let answer = loop {
            let (status, body) = client
                .post(
                    &format!("{}/v1/sessions/{key}/approvals/{call}", b.url),
                    serde_json::json!({ "decision": "allow" }),
                )
                .await
                .unwrap();
            if status != 409 {
                break (status, body);
            }
            assert!(Instant::now() < deadline, "{key} never moved: {body}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(answer.0, 200, "{key}: {}", answer.1);
    }
    // The turns go on on B: each tool ran once, after the answer, and the turn finished.
    for (n, key) in keys.iter().enumerate() {
        let records = loop {
            let (status, body) = client
                .get(&format!("{}/v1/sessions/{key}?limit=1000", b.url))
                .await
                .unwrap();
            assert_eq!(status, 200, "{body}");
            if body["session"]["activity"] == "idle" {
                break stored(&db, key).await;
            }
            assert!(
                Instant::now() < deadline + TAKEOVER_BOUND,
                "{key} never finished: {body}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_turns_whole(key, &records);
        let results: Vec<_> = records
            .iter()
            .filter_map(|r| match r {
                hookline::messages::record::Record::ToolResult { success, .. } => Some(*success),
                _ => None,
            })
            .collect();
        assert_eq!(
            results,
            [true],
            "{key}: one result, of the tool's one run: {records:?}"
        );
        assert!(
            !records
                .iter()
                .any(|r| matches!(r, hookline::messages::record::Record::CutOff { .. })),
            "{key} was continued, not cut off: {records:?}"
        );
        assert_eq!(
            std::fs::read_to_string(b.root.join(format!("out-{n}.txt"))).unwrap(),
            format!("approved {n}")
        );
    }
}

/// Issue 46 item 8: `DELETE /v1/sessions/{id}` sent to B for a session whose node (A) died
/// takes it over and closes it, as a turn or `/resume` would take it over, instead of answering
/// 404: its end hooks run on B (SPEC P3.11), its archive ends with its end, its lease is given
/// up, and B no longer has it open.
#[tokio::test]
async fn a_delete_on_another_node_closes_a_dead_node_s_session() {
    let url = pg::database_url();
    let dir = tempfile::tempdir().unwrap();
    let db = reader(&url).await;
    let mut a = Node::start(
        "a",
        dir.path(),
        &url,
        &["--node", "a", "--migrate", "--demo-plugins"],
    );
    let b = Node::start("b", dir.path(), &url, &["--node", "b", "--demo-plugins"]);
    let client = Client::new();
    let key = client.open(&a.url).await;
    let (status, body) = client.turn(&a.url, &key, "on a").await.unwrap();
    assert_eq!(status, 200, "{body}");

    a.kill();
    let killed = Instant::now();
    let closed = loop {
        let response = client
            .0
            .delete(format!("{}/v1/sessions/{key}", b.url))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let body: serde_json::Value = response.json().await.unwrap_or_default();
        match status {
            200 => break body,
            // The database has not seen A's connections end yet.
            409 if body["error"]["code"] == "session-leased" => {}
            _ => panic!("DELETE of {key} on b: {status} {body}"),
        }
        assert!(killed.elapsed() < TAKEOVER_BOUND, "{key} was never closed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let events = closed["events"].as_array().unwrap();
    assert!(
        events.iter().any(|e| e["event"] == "session-ended"),
        "the end hooks ran: {closed}"
    );
    let id = hookline::messages::session::SessionId::new(key.as_str());
    let session = db.read(&id).await.unwrap().unwrap();
    assert!(
        matches!(
            session.archive.last(),
            Some(hookline::messages::record::ArchiveEntry::SessionEnded(_))
        ),
        "{:?}",
        session.archive.last()
    );
    assert_eq!(user_texts(&session.records), ["on a"]);
    let lease = db.lease(&id).await.unwrap().unwrap();
    assert_eq!(lease.holder, None, "{lease:?}");
    let (status, body) = client
        .get(&format!("{}/v1/sessions/{key}", b.url))
        .await
        .unwrap_or_else(|e| panic!("{e}: {}", b.log_text()));
    assert_eq!(status, 404, "{body}");
}
