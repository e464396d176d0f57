//! `hookline serve` serves on every pipeline shard's thread (issue 47, `server/src/accept.rs`):
//! one acceptor deals the connections to the shards' threads in turn, and a session opened over
//! a connection is placed on the shard whose thread serves that connection, so its requests,
//! turns and hook calls stay on one thread, while its id is the next number all the same.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use hookline::host::gateway::GatewayLimits;
use hookline::host::provider::EchoProvider;
use hookline::host::Host;
use hookline::messages::session::SessionId;
use hookline::server::{start, ServeConfig};
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(30);

/// One kept-alive connection: a client whose pool holds one.
fn connection() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(DEADLINE)
        .pool_max_idle_per_host(1)
        .build()
        .unwrap()
}

#[actix_rt::test]
async fn sessions_opened_over_one_connection_share_its_shard_and_connections_take_turns() {
    let dir = tempfile::tempdir().unwrap();
    let gateway = Host::builder()
        .provider(Arc::new(EchoProvider::new()))
        .workspace(dir.path())
        .shards(2)
        .start_gateway(GatewayLimits::default())
        .unwrap();
    let pipeline = gateway.pipeline().clone();
    let (addr, handle) = start(gateway, ServeConfig::new(dir.path())).await.unwrap();

    // Sessions numbered one after another (`s1`, `s2`, ...) alternate between the two shards by
    // their ids' hash: only a placement by the serving thread keeps one connection's on one.
    let mut shards_of_connections = Vec::new();
    let mut keys = Vec::new();
    for _ in 0..3 {
        let http = connection();
        let mut shards = Vec::new();
        for _ in 0..4 {
            let response = http
                .post(format!("http://{addr}/v1/sessions"))
                .json(&json!({}))
                .send()
                .await
                .unwrap();
            assert_eq!(response.status(), 201);
            let body: serde_json::Value = response.json().await.unwrap();
            let key = body["key"].as_str().unwrap().to_owned();
            let turn = http
                .post(format!("http://{addr}/v1/sessions/{key}/turns"))
                .json(&json!({"text": "hi"}))
                .send()
                .await
                .unwrap();
            assert_eq!(turn.status(), 200, "{}", turn.text().await.unwrap());
            shards.push(pipeline.shard_of(&SessionId::new(key.as_str())));
            keys.push(key);
        }
        assert!(
            shards.iter().all(|&shard| shard == shards[0]),
            "one connection's sessions on shards {shards:?}"
        );
        shards_of_connections.push(shards[0]);
    }
    // Connections dealt in turn: the second went to the other shard, the third back.
    let [first, second, third] = shards_of_connections[..] else {
        unreachable!()
    };
    assert_ne!(first, second, "{shards_of_connections:?}");
    assert_eq!(first, third, "{shards_of_connections:?}");
    // The placement lives beside the id: the store numbers sessions as they come, no gaps.
    let numbered: Vec<String> = (1..=keys.len()).map(|n| format!("s{n}")).collect();
    assert_eq!(keys, numbered);

    tokio::time::timeout(DEADLINE, handle.drain("test", None))
        .await
        .expect("the drain did not end")
        .unwrap();
}
