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
