//! Key administration over HTTP (issue 48, docs/serve.md "Auth"): `GET /v1/keys`,
//! `POST /v1/keys` and `DELETE /v1/keys/{id}` are for admins, write the same table as
//! `hookline keys`, and a key made or revoked over HTTP on one node is taken or refused on every
//! node sharing the table within the 2 s promised.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod serve_support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use hookline::host::provider::EchoProvider;
use hookline::host::store::{ApiKeyTable, FileApiKeys, Role};
use hookline::server::KeyTable;
use serde_json::{json, Value};
use serve_support::{add_key, now_ms, serve, Served};

/// What the docs promise for a revocation to reach every node.
const PROMISED: Duration = Duration::from_secs(2);

/// A key table with one admin key, and `nodes` servers sharing it.
async fn nodes(count: usize) -> (Vec<Served>, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let table = Arc::new(FileApiKeys::new(dir.path()));
    let admin = add_key(&table, "ops", Role::Admin).await;
    let mut served = Vec::new();
    for _ in 0..count {
        let shared: Arc<dyn ApiKeyTable> = table.clone();
        served.push(
            serve(
                Arc::new(EchoProvider::new()),
                |_| {},
                move |config| config.keys = Some(KeyTable(shared)),
            )
            .await,
        );
    }
    (served, admin, dir)
}

/// Sends `method path` with `credential` (and `body` as JSON); the status and the answer.
async fn send(
    served: &Served,
    method: &str,
    path: &str,
    credential: Option<&str>,
    body: Option<Value>,
) -> (u16, Value) {
    let url = served.url(path);
    let mut request = match method {
        "get" => served.client.get(&url),
        "delete" => served.client.delete(&url),
        _ => served.client.post(&url),
    };
    if let Some(body) = body {
        request = request.json(&body);
    }
    if let Some(credential) = credential {
        request = request.bearer_auth(credential);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or_default())
}

/// Asks `GET /v1/whoami` with `key` until `accepted` says the answer is the awaited one, at most
/// `within`; how long it took.
async fn until(
    served: &Served,
    key: &str,
    within: Duration,
    accepted: fn(u16) -> bool,
) -> Duration {
    let start = Instant::now();
    loop {
        let (status, _) = send(served, "get", "/v1/whoami", Some(key), None).await;
        if accepted(status) {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < within,
            "still {status} after {:?}",
            start.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[actix_rt::test]
async fn a_key_made_over_http_works_lists_without_its_secret_and_dies_on_every_node() {
    let (nodes, admin, _dir) = nodes(2).await;
    let (a, b) = (&nodes[0], &nodes[1]);
    let body = json!({ "tenant": "acme", "role": "operator", "name": "web", "expires": "30d" });
    let before = now_ms();
    let (status, made) = send(a, "post", "/v1/keys", Some(&admin), Some(body)).await;
    assert_eq!(status, 201, "{made}");
    let key = made["key"].as_str().unwrap().to_owned();
    let id = made["id"].as_str().unwrap().to_owned();
    assert!(key.starts_with(&format!("hlk_{id}_")), "{made}");
    assert_eq!(
        (
            &made["tenant"],
            &made["role"],
            &made["name"],
            &made["state"]
        ),
        (
            &json!("acme"),
            &json!("operator"),
            &json!("web"),
            &json!("active")
        )
    );
    let thirty_days = 30 * 24 * 3600 * 1000;
    let expires = made["expiresMs"].as_u64().unwrap();
    assert!((before + thirty_days..=now_ms() + thirty_days).contains(&expires));

    // The key works at once on the node that made it, for its tenant and role.
    let (status, me) = send(a, "get", "/v1/whoami", Some(&key), None).await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(
        (&me["tenant"], &me["role"], &me["principal"]),
        (&json!("acme"), &json!("operator"), &json!(id))
    );
    let (status, opened) = send(a, "post", "/v1/sessions", Some(&key), Some(json!({}))).await;
    assert_eq!(status, 201, "{opened}");
    let session = opened["key"].as_str().unwrap();
    let (_, shown) = send(
        a,
        "get",
        &format!("/v1/sessions/{session}"),
        Some(&key),
        None,
    )
    .await;
    assert_eq!(shown["session"]["owner"]["tenant"], "acme", "{shown}");
    // An operator is not an admin: the keys routes name the role it lacks.
    let (status, refused) = send(a, "get", "/v1/keys", Some(&key), None).await;
    assert_eq!(status, 403, "{refused}");
    assert!(refused["error"]["message"]
        .as_str()
        .unwrap()
        .contains("admin"));
    // And on the other node, within the promise.
    let taken = until(b, &key, PROMISED, |s| s == 200).await;

    // A time is taken as `hookline keys create --expires` takes it.
    let at = json!({ "tenant": "acme", "role": "client", "expires": "2099-01-01T00:00:00Z" });
    let (status, dated) = send(a, "post", "/v1/keys", Some(&admin), Some(at)).await;
    assert_eq!(status, 201, "{dated}");
    assert_eq!(dated["expiresMs"], 4_070_908_800_000_u64);

    // The list shows every key, never one or its hash.
    let response = a
        .client
        .get(a.url("/v1/keys"))
        .bearer_auth(&admin)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    let secret = key.rsplit('_').next().unwrap();
    assert!(!text.contains(secret) && !text.contains(&admin) && !text.contains("sha256"));
    let listed: Value = serde_json::from_str(&text).unwrap();
    let keys = listed["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 3, "{listed}");
    let row = keys.iter().find(|k| k["id"] == id.as_str()).unwrap();
    assert_eq!(
        (&row["tenant"], &row["role"], &row["name"], &row["state"]),
        (
            &json!("acme"),
            &json!("operator"),
            &json!("web"),
            &json!("active")
        )
    );
    assert!(row.get("key").is_none(), "{row}");

    // Revoked: refused at once here, within 2 s on the other node.
    let (status, revoked) = send(a, "delete", &format!("/v1/keys/{id}"), Some(&admin), None).await;
    assert_eq!(status, 200, "{revoked}");
    assert_eq!(revoked["state"], "revoked", "{revoked}");
    let (status, _) = send(a, "get", "/v1/whoami", Some(&key), None).await;
    assert_eq!(status, 401, "the node that revoked it still took it");
    let refused_after = until(b, &key, PROMISED, |s| s == 401).await;
    println!(
        "the other node took the new key after {taken:?} and refused it after {refused_after:?}"
    );
    let (_, listed) = send(a, "get", "/v1/keys", Some(&admin), None).await;
    let row = listed["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["id"] == id.as_str())
        .unwrap()
        .clone();
    assert_eq!(row["state"], "revoked", "{row}");
    assert!(row["revokedMs"].as_u64().is_some(), "{row}");

    // Revoking again keeps the first time; an unknown id is 404 `unknown-key`.
    let (status, again) = send(a, "delete", &format!("/v1/keys/{id}"), Some(&admin), None).await;
    assert_eq!((status, &again["revokedMs"]), (200, &row["revokedMs"]));
    let (status, unknown) = send(a, "delete", "/v1/keys/knope", Some(&admin), None).await;
    assert_eq!(status, 404, "{unknown}");
    assert_eq!(unknown["error"]["code"], "unknown-key");
    for served in nodes {
        served.shutdown().await;
    }
}

#[actix_rt::test]
async fn bad_input_is_one_sentence_400_and_only_admins_manage_keys() {
    let (nodes, admin, _dir) = nodes(1).await;
    let served = &nodes[0];
    let bad = [
        (
            json!({ "tenant": "acme", "role": "root" }),
            "invalid-request",
            "not a role",
        ),
        (
            json!({ "tenant": "", "role": "client" }),
            "invalid-request",
            "not a tenant",
        ),
        (
            json!({ "tenant": "a/b", "role": "client" }),
            "invalid-request",
            "not a tenant",
        ),
        (
            json!({ "tenant": "acme", "role": "client", "expires": "soon" }),
            "invalid-request",
            "neither a duration",
        ),
        (json!({ "tenant": "acme" }), "bad-json", "role"),
        (json!({ "role": "client" }), "bad-json", "tenant"),
        (
            json!({ "tenant": 7, "role": "client" }),
            "bad-json",
            "tenant",
        ),
        (
            json!({ "tenant": "acme", "role": "client", "sha256": "00" }),
            "bad-json",
            "sha256",
        ),
    ];
    for (body, code, says) in bad {
        let (status, answer) =
            send(served, "post", "/v1/keys", Some(&admin), Some(body.clone())).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert_eq!(answer["error"]["code"], code, "{body}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{body}: {message}");
        assert!(!message.contains('\n'), "{body}: {message}");
    }
    // Not JSON at all.
    let response = served
        .client
        .post(served.url("/v1/keys"))
        .bearer_auth(&admin)
        .header("content-type", "application/x-www-form-urlencoded")
        .body("tenant=acme")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 415);
    // Nothing bad was stored.
    let (_, listed) = send(served, "get", "/v1/keys", Some(&admin), None).await;
    assert_eq!(listed["keys"].as_array().unwrap().len(), 1, "{listed}");

    // Every role below admin: 403 naming the admin role; no credentials: 401.
    let mut below = Vec::new();
    for role in ["client", "operator"] {
        let body = json!({ "tenant": "acme", "role": role });
        let (status, made) = send(served, "post", "/v1/keys", Some(&admin), Some(body)).await;
        assert_eq!(status, 201, "{made}");
        below.push((
            made["key"].as_str().unwrap().to_owned(),
            made["id"].as_str().unwrap().to_owned(),
        ));
    }
    let (_, victim) = below[0].clone();
    let routes = [
        ("get", "/v1/keys".to_owned(), None),
        (
            "post",
            "/v1/keys".to_owned(),
            Some(json!({ "tenant": "acme", "role": "admin" })),
        ),
        ("delete", format!("/v1/keys/{victim}"), None),
    ];
    for (method, path, body) in &routes {
        for (key, _) in &below {
            let (status, answer) = send(served, method, path, Some(key), body.clone()).await;
            assert_eq!(status, 403, "{method} {path}: {answer}");
            assert_eq!(answer["error"]["code"], "forbidden");
            assert!(answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("admin role"));
        }
        let (status, answer) = send(served, method, path, None, body.clone()).await;
        assert_eq!(status, 401, "{method} {path}: {answer}");
    }
    // None of the refused calls did anything: no key was added, none revoked.
    let (_, listed) = send(served, "get", "/v1/keys", Some(&admin), None).await;
    let keys = listed["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 3, "{listed}");
    assert!(keys.iter().all(|k| k["state"] == "active"), "{listed}");
    for served in nodes {
        served.shutdown().await;
    }
}

/// `hookline keys --store DIR ...`: its status and stdout.
fn cli(dir: &std::path::Path, args: &[&str]) -> (bool, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_hookline"))
        .args(["keys", "--store", dir.to_str().unwrap()])
        .args(args)
        .env("HOOKLINE_HOME", "/nonexistent/hookline-home")
        .output()
        .unwrap();
    (
        output.status.success(),
        String::from_utf8(output.stdout).unwrap(),
    )
}

#[actix_rt::test]
async fn the_cli_and_the_api_keep_the_same_keys_the_same_way() {
    let (nodes, admin, dir) = nodes(1).await;
    let served = &nodes[0];
    // A key the CLI made works over HTTP (within the table's next read).
    let (ok, key) = cli(
        dir.path(),
        &[
            "create", "--tenant", "acme", "--role", "client", "--name", "cli",
        ],
    );
    assert!(ok, "{key}");
    until(served, key.trim(), PROMISED, |s| s == 200).await;
    // One made over HTTP is one the CLI lists, and the CLI's `--json` lines are exactly the
    // keys `GET /v1/keys` answers with.
    let body = json!({ "tenant": "globex", "role": "operator", "expires": "2099-01-01T00:00:00Z" });
    let (status, made) = send(served, "post", "/v1/keys", Some(&admin), Some(body)).await;
    assert_eq!(status, 201, "{made}");
    let (status, listed) = send(served, "get", "/v1/keys", Some(&admin), None).await;
    assert_eq!(status, 200, "{listed}");
    let (ok, lines) = cli(dir.path(), &["list", "--json"]);
    assert!(ok, "{lines}");
    let from_cli: Vec<Value> = lines
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(listed["keys"].as_array().unwrap(), &from_cli);
    assert_eq!(from_cli.len(), 3);
    // The CLI revokes a key the API made; the API revokes one the CLI made.
    let id = made["id"].as_str().unwrap();
    assert!(cli(dir.path(), &["revoke", id]).0);
    let cli_id = hookline::host::store::ApiKeyRecord::id_of(key.trim()).unwrap();
    let (status, _) = send(
        served,
        "delete",
        &format!("/v1/keys/{cli_id}"),
        Some(&admin),
        None,
    )
    .await;
    assert_eq!(status, 200);
    until(served, key.trim(), Duration::from_millis(1), |s| s == 401).await;
    let (_, table) = cli(dir.path(), &["list"]);
    assert_eq!(table.matches("revoked").count(), 2, "{table}");
    for served in nodes {
        served.shutdown().await;
    }
}

#[actix_rt::test]
async fn the_first_key_made_on_a_server_without_credentials_turns_them_on() {
    let dir = tempfile::tempdir().unwrap();
    let table: Arc<dyn ApiKeyTable> = Arc::new(FileApiKeys::new(dir.path()));
    let served = serve(
        Arc::new(EchoProvider::new()),
        |_| {},
        move |config| config.keys = Some(KeyTable(table)),
    )
    .await;
    // Loopback without credentials: the caller is the local admin.
    let (status, listed) = send(&served, "get", "/v1/keys", None, None).await;
    assert_eq!((status, &listed["keys"]), (200, &json!([])));
    let body = json!({ "tenant": "ops", "role": "admin" });
    let (status, made) = send(&served, "post", "/v1/keys", None, Some(body)).await;
    assert_eq!(status, 201, "{made}");
    let (status, _) = send(&served, "get", "/v1/keys", None, None).await;
    assert_eq!(
        status, 401,
        "credentials are needed from the next request on"
    );
    let key = made["key"].as_str().unwrap();
    let (status, listed) = send(&served, "get", "/v1/keys", Some(key), None).await;
    assert_eq!(status, 200, "{listed}");
    served.shutdown().await;
}
