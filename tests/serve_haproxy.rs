//! The balancer configuration of docs/deploy.md, tested (issue 14 item 7): HAProxy with the
//! committed `deploy/haproxy.cfg` in front of two `hookline serve` nodes on one PostgreSQL
//! store. Every request of a session lands on the node that holds it; once that node is killed,
//! the balancer sends the session to the other node, which resumes it with every turn and goes
//! on. Needs `haproxy` on the PATH (Debian: `apt-get install -y haproxy`): without it the test
//! says so and skips, and fails instead under `HOOKLINE_REQUIRE_SYSTEM_TESTS=1`, which `.ci/run`
//! sets after installing it (tests/support/system.rs).
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/balancer.rs"]
mod balancer;
#[path = "support/pg.rs"]
mod pg;
#[path = "support/system.rs"]
mod system;

mod cluster_support;

use std::time::{Duration, Instant};

use balancer::{haproxy, start_balancer};

use cluster_support::{reader, stored, user_texts, Client, Node};

/// Sessions opened through the balancer (round robin spreads them over both nodes).
const SESSIONS: usize = 6;
/// Turns each session runs before the kill.
const TURNS: usize = 3;
const LEASE_TTL_MS: &str = "900";
const DEADLINE: Duration = Duration::from_secs(40);

/// Which node has `key` open: asks both directly.
async fn holder<'n>(client: &Client, nodes: [&'n Node; 2], key: &str) -> Vec<&'n str> {
    let mut holders = Vec::new();
    for node in nodes {
        if let Ok((200, _)) = client.get(&format!("{}/v1/sessions/{key}", node.url)).await {
            holders.push(node.name.as_str());
        }
    }
    holders
}

#[tokio::test]
async fn the_balancer_keeps_each_session_on_its_node_and_moves_it_when_the_node_dies() {
    let Some(haproxy) = haproxy("the balancer test (tests/serve_haproxy.rs)") else {
        return;
    };
    let url = pg::database_url();
    let deadline = Instant::now() + DEADLINE;
    let dir = tempfile::tempdir().unwrap();
    let db = reader(&url).await;
    let args = |name| {
        [
            "--node",
            name,
            "--lease-ttl-ms",
            LEASE_TTL_MS,
            "--arbiters",
            "2",
        ]
    };
    let mut a = Node::start("a", dir.path(), &url, &args("a"));
    let mut b = Node::start("b", dir.path(), &url, &args("b"));
    let client = Client::new();
    let (_balancer, lb) = start_balancer(&haproxy, dir.path(), [a.port(), b.port()], &client).await;

    // Sessions opened through the balancer, each on one node; every request of a session
    // lands there (on the other node it would be a 404).
    let mut keys = Vec::new();
    for _ in 0..SESSIONS {
        keys.push(client.open(&lb).await);
    }
    let mut owners = Vec::new();
    for key in &keys {
        for n in 0..TURNS {
            let (status, body) = client
                .turn(&lb, key, &format!("{key} turn {n}"))
                .await
                .unwrap();
            assert_eq!(
                status, 200,
                "turn {n} of {key} through the balancer: {body}"
            );
        }
        let (status, body) = client
            .get(&format!("{lb}/v1/sessions/{key}"))
            .await
            .unwrap();
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            body["session"]["turns"].as_u64(),
            Some(TURNS as u64),
            "{body}"
        );
        let held = holder(&client, [&a, &b], key).await;
        assert_eq!(held.len(), 1, "{key} is open on {held:?}");
        owners.push(held[0].to_owned());
    }
    assert!(
        owners.iter().any(|o| o == "a") && owners.iter().any(|o| o == "b"),
        "the balancer spread the sessions over both nodes: {owners:?}"
    );

    // Node A dies: its sessions go to B through the balancer, which resumes them there.
    a.kill();
    for (key, owner) in keys.iter().zip(&owners) {
        if owner == "a" {
            loop {
                let answer = client
                    .post(
                        &format!("{lb}/v1/sessions/{key}/resume"),
                        serde_json::json!({}),
                    )
                    .await;
                match answer {
                    Ok((200, body)) => {
                        assert_eq!(body["key"], key.as_str());
                        break;
                    }
                    // A's lease has not expired yet, or the balancer has not noticed A is down.
                    Ok((409 | 502 | 503, _)) | Err(_) => {}
                    Ok((status, body)) => panic!("resume of {key}: {status} {body}"),
                }
                assert!(Instant::now() < deadline, "{key} was never resumed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        let (status, body) = client
            .turn(&lb, key, &format!("{key} after"))
            .await
            .unwrap();
        assert_eq!(status, 200, "{key} after the kill: {body}");
        assert_eq!(holder(&client, [&a, &b], key).await, ["b"]);
        let mut want: Vec<String> = (0..TURNS).map(|n| format!("{key} turn {n}")).collect();
        want.push(format!("{key} after"));
        assert_eq!(user_texts(&stored(&db, key).await), want);
    }
    b.kill();
}
