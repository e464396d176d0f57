//! One server, many people (issue 48, docs/serve.md "Auth"): principals with a tenant and a role,
//! API keys, and every route checked in the order credentials (401), role (403), session (404),
//! as an attacker would try them: every operation of the served OpenAPI document times every
//! role times own tenant / other tenant / no credentials, against a matrix that must name every
//! operation (a new route without an entry fails here).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod serve_support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::{SinkExt as _, StreamExt as _};
use hookline::host::gateway::Activity;
use hookline::host::store::{ApiKeyRecord, ApiKeyTable, FileApiKeys, Role};
use hookline::server::{ApprovalAnswerers, TenantLimits, TenantPolicy, Tenants};
use serde_json::{json, Value};
use serve_support::{add_key, now_ms, serve_with_keys, Served, DEADLINE};
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
use tokio_tungstenite::tungstenite::Message;

/// Every caller the matrix tries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Who {
    Nobody,
    /// The client of tenant `acme` that opens the sessions tried.
    Owner,
    /// Another client of `acme`.
    Colleague,
    /// An operator of `acme`.
    Operator,
    /// A client of `globex`.
    Stranger,
    /// An operator of `globex`.
    StrangeOperator,
    /// An admin (tenant `default`).
    Admin,
}

const EVERYONE: [Who; 7] = [
    Who::Nobody,
    Who::Owner,
    Who::Colleague,
    Who::Operator,
    Who::Stranger,
    Who::StrangeOperator,
    Who::Admin,
];

struct Keys {
    owner: String,
    colleague: String,
    operator: String,
    stranger: String,
    strange_operator: String,
    admin: String,
    table: Arc<FileApiKeys>,
}

impl Keys {
    fn of(&self, who: Who) -> Option<&str> {
        Some(match who {
            Who::Nobody => return None,
            Who::Owner => &self.owner,
            Who::Colleague => &self.colleague,
            Who::Operator => &self.operator,
            Who::Stranger => &self.stranger,
            Who::StrangeOperator => &self.strange_operator,
            Who::Admin => &self.admin,
        })
    }
}

fn role_of(who: Who) -> Option<Role> {
    match who {
        Who::Nobody => None,
        Who::Owner | Who::Colleague | Who::Stranger => Some(Role::Client),
        Who::Operator | Who::StrangeOperator => Some(Role::Operator),
        Who::Admin => Some(Role::Admin),
    }
}

/// Whether `who` may see a session `Owner` opened.
fn sees_owners_session(who: Who) -> bool {
    matches!(who, Who::Owner | Who::Operator | Who::Admin)
}

async fn served_with_keys() -> (Served, Keys) {
    served_with_tenants(Tenants::default()).await
}

async fn served_with_tenants(tenants: Tenants) -> (Served, Keys) {
    let dir = tempfile::tempdir().unwrap();
    let table = Arc::new(FileApiKeys::new(dir.path()));
    let keys = Keys {
        owner: add_key(&table, "acme", Role::Client).await,
        colleague: add_key(&table, "acme", Role::Client).await,
        operator: add_key(&table, "acme", Role::Operator).await,
        stranger: add_key(&table, "globex", Role::Client).await,
        strange_operator: add_key(&table, "globex", Role::Operator).await,
        admin: add_key(&table, "ops", Role::Admin).await,
        table: table.clone(),
    };
    let served = serve_with_keys(table, tenants).await;
    // The table's directory lives as long as the test: keep it with the served one.
    std::mem::forget(dir);
    (served, keys)
}

/// The role each operation needs (`None`: public) and whether it names a session.
fn matrix() -> Vec<(&'static str, &'static str, Option<Role>)> {
    vec![
        ("get", "/healthz", None),
        ("get", "/readyz", Some(Role::Client)),
        ("get", "/metrics", Some(Role::Admin)),
        ("get", "/v1/plugins", Some(Role::Admin)),
        ("get", "/v1/openapi.json", Some(Role::Client)),
        ("post", "/v1/sessions", Some(Role::Client)),
        ("get", "/v1/sessions", Some(Role::Client)),
        ("get", "/v1/sessions/{id}", Some(Role::Client)),
        ("delete", "/v1/sessions/{id}", Some(Role::Client)),
        ("get", "/v1/sessions/{id}/archive", Some(Role::Client)),
        ("post", "/v1/sessions/{id}/resume", Some(Role::Client)),
        ("post", "/v1/sessions/{id}/turns", Some(Role::Client)),
        (
            "post",
            "/v1/sessions/{id}/approvals/{call_id}",
            Some(Role::Client),
        ),
        ("post", "/v1/sessions/{id}/commands", Some(Role::Client)),
        ("get", "/v1/sessions/{id}/ws", Some(Role::Client)),
        ("get", "/v1/events", Some(Role::Client)),
        ("get", "/v1/approvals", Some(Role::Client)),
        ("get", "/v1/whoami", Some(Role::Client)),
        ("get", "/v1/keys", Some(Role::Admin)),
        ("post", "/v1/keys", Some(Role::Admin)),
        ("delete", "/v1/keys/{id}", Some(Role::Admin)),
    ]
}

fn body_for(path: &str) -> Value {
    match path {
        p if p.ends_with("/turns") => json!({ "text": "hello" }),
        p if p.ends_with("/commands") => json!({ "command": "/model small" }),
        p if p.contains("/approvals/") => json!({ "decision": "allow" }),
        _ => json!({}),
    }
}

/// Sends one operation as `who`; returns the status and the error code, if any.
async fn call(
    served: &Served,
    method: &str,
    path: &str,
    credential: Option<&str>,
) -> (u16, Option<String>) {
    let url = served.url(path);
    let mut request = match method {
        "get" => served.client.get(&url),
        "delete" => served.client.delete(&url),
        _ => served.client.post(&url).json(&body_for(path)),
    };
    if let Some(credential) = credential {
        request = request.bearer_auth(credential);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let is_json = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.to_str().unwrap_or("").starts_with("application/json"));
    // An event stream never ends: its status is all the matrix needs.
    let code = if is_json && path != "/v1/openapi.json" {
        let body: Value = response.json().await.unwrap_or_default();
        body["error"]["code"].as_str().map(str::to_owned)
    } else {
        None
    };
    (status, code)
}

/// The WebSocket, with the credential in the upgrade's header: the HTTP status it answered.
async fn socket_status(served: &Served, path: &str, credential: Option<&str>) -> u16 {
    let mut request = served.ws(path).into_client_request().unwrap();
    if let Some(credential) = credential {
        request.headers_mut().insert(
            "authorization",
            format!("Bearer {credential}").parse().unwrap(),
        );
    }
    match tokio_tungstenite::connect_async(request).await {
        Ok((mut socket, response)) => {
            let _ = socket.close(None).await;
            response.status().as_u16()
        }
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => response.status().as_u16(),
        Err(other) => panic!("the socket failed: {other}"),
    }
}

#[actix_rt::test]
async fn every_route_times_every_role_and_tenant_answers_as_the_docs_promise() {
    let (served, keys) = served_with_keys().await;
    let document: Value = served
        .client
        .get(served.url("/v1/openapi.json"))
        .bearer_auth(&keys.admin)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let documented: BTreeSet<(String, String)> = document["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, ops)| {
            ops.as_object()
                .unwrap()
                .keys()
                .map(move |method| (method.clone(), path.clone()))
        })
        .collect();
    let matrix = matrix();
    let listed: BTreeSet<(String, String)> = matrix
        .iter()
        .map(|(m, p, _)| ((*m).to_owned(), (*p).to_owned()))
        .collect();
    assert_eq!(
        documented, listed,
        "every operation of the OpenAPI document needs an entry in the matrix, and only those"
    );
    for (method, path, needed) in &matrix {
        let op = &document["paths"][path][method]["responses"];
        // The document promises what the matrix checks: a 401 on every route but the public
        // one, a 403 where a role above client is needed.
        assert_eq!(op.get("401").is_some(), needed.is_some(), "{method} {path}");
        if *needed == Some(Role::Admin) {
            assert!(op.get("403").is_some(), "{method} {path} documents no 403");
        }
        for who in EVERYONE {
            // A fresh session for each try: DELETE closes it, turns change it.
            let key = served.open_as(&keys.owner).await;
            let concrete = path.replace("{id}", &key).replace("{call_id}", "call-1");
            let credential = keys.of(who);
            let (status, code) = if path.ends_with("/ws") {
                (socket_status(&served, &concrete, credential).await, None)
            } else {
                call(&served, method, &concrete, credential).await
            };
            let context = format!("{method} {path} as {who:?}: {status} {code:?}");
            let Some(needed) = needed else {
                assert_eq!(status, 200, "{context}");
                continue;
            };
            let Some(role) = role_of(who) else {
                // A socket without a header upgrades, then must authenticate by its first
                // message (docs/serve.md "WebSocket"; closed 4401 otherwise: serve_api.rs).
                let expected = if path.ends_with("/ws") { 101 } else { 401 };
                assert_eq!(status, expected, "{context}");
                continue;
            };
            if role < *needed {
                assert_eq!(status, 403, "{context}");
                assert_eq!(code.as_deref(), Some("forbidden"), "{context}");
                continue;
            }
            let session_route = path.contains("{id}");
            if session_route && !sees_owners_session(who) {
                assert_eq!(status, 404, "{context}");
                if !path.ends_with("/ws") {
                    assert_eq!(code.as_deref(), Some("unknown-session"), "{context}");
                }
                continue;
            }
            // Answering an approval: the owner is a client, and its tenant's approvals are
            // answered by operators (the session check came first: it may see the session).
            if path.contains("/approvals/") && who == Who::Owner {
                assert_eq!(
                    (status, code.as_deref()),
                    (403, Some("forbidden")),
                    "{context}"
                );
                continue;
            }
            assert!(status < 500, "{context}");
            assert!(
                !matches!(status, 401 | 403),
                "{context}: a principal allowed here was refused"
            );
            assert_ne!(code.as_deref(), Some("unknown-session"), "{context}");
        }
    }
    served.shutdown().await;
}

#[actix_rt::test]
async fn lists_and_the_event_feed_show_only_what_the_caller_may_see() {
    let (served, keys) = served_with_keys().await;
    let mine = served.open_as(&keys.owner).await;
    let colleagues = served.open_as(&keys.colleague).await;
    let strangers = served.open_as(&keys.stranger).await;
    let admins = served.open_as(&keys.admin).await;
    let listed = |key: &str| {
        let request = served
            .client
            .get(served.url("/v1/sessions"))
            .bearer_auth(key.to_owned());
        async move {
            let body: Value = request.send().await.unwrap().json().await.unwrap();
            let mut keys: Vec<String> = body["sessions"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["key"].as_str().unwrap().to_owned())
                .collect();
            keys.sort();
            keys
        }
    };
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    assert_eq!(listed(&keys.owner).await, vec![mine.clone()]);
    assert_eq!(
        listed(&keys.operator).await,
        sorted(vec![mine.clone(), colleagues.clone()])
    );
    assert_eq!(
        listed(&keys.strange_operator).await,
        vec![strangers.clone()]
    );
    assert_eq!(
        listed(&keys.admin).await,
        sorted(vec![
            mine.clone(),
            colleagues,
            strangers.clone(),
            admins.clone()
        ])
    );
    // A session shows who owns it; an admin's belongs to the tenant `default`.
    let (_, body) = get_as(&served, &format!("/v1/sessions/{admins}"), &keys.admin).await;
    assert_eq!(body["session"]["owner"]["tenant"], "default");
    // The feed of a client carries its own sessions' events only.
    let response = served
        .client
        .get(served.url("/v1/events"))
        .bearer_auth(&keys.stranger)
        .send()
        .await
        .unwrap();
    let mut feed = serve_support::SseReader::new(response);
    for (key, session) in [(&keys.owner, &mine), (&keys.stranger, &strangers)] {
        let response = served
            .client
            .post(served.url(&format!("/v1/sessions/{session}/turns")))
            .bearer_auth(key)
            .json(&json!({ "text": "hi" }))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
    }
    let mut seen = BTreeSet::new();
    let until = tokio::time::Instant::now() + Duration::from_secs(3);
    while let Ok(Some((kind, data))) = tokio::time::timeout_at(until, feed.next()).await {
        let session = if kind == "session" {
            data["key"].as_str()
        } else {
            data["session"].as_str()
        };
        match session {
            Some(session) => {
                seen.insert(session.to_owned());
            }
            None if kind == "lagged" => {}
            None => panic!("a client saw a gateway-wide event: {kind} {data}"),
        }
    }
    assert_eq!(seen, BTreeSet::from([strangers]), "{seen:?}");
    served.shutdown().await;
}

async fn get_as(served: &Served, path: &str, key: &str) -> (u16, Value) {
    let response = served
        .client
        .get(served.url(path))
        .bearer_auth(key)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or_default())
}

#[actix_rt::test]
async fn bad_credentials_are_each_one_sentence_and_never_a_5xx() {
    let (served, keys) = served_with_keys().await;
    let truncated = &keys.owner[..keys.owner.len() - 3];
    let other_id = keys.owner.replace("hlk_k", "hlk_x");
    let huge = "a".repeat(64 * 1024);
    for credential in [
        truncated,
        other_id.as_str(),
        "hlk_",
        "hlk__",
        "not-a-key",
        "",
        huge.as_str(),
    ] {
        let response = served
            .client
            .get(served.url("/v1/sessions"))
            .header("authorization", format!("Bearer {credential}"))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        assert!(
            matches!(status, 401 | 431),
            "{status} for {:.40}",
            credential
        );
        if status == 401 {
            let body: Value = response.json().await.unwrap();
            let message = body["error"]["message"].as_str().unwrap();
            assert!(
                message.ends_with('.') && message.matches(". ").count() == 0,
                "{message}"
            );
        }
    }
    // Not a bearer credential at all.
    let response = served
        .client
        .get(served.url("/v1/sessions"))
        .header("authorization", "Basic dXNlcjpwdw==")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    served.shutdown().await;
}

#[actix_rt::test]
async fn a_revoked_key_is_refused_within_two_seconds_and_an_expired_one_at_once() {
    let (served, keys) = served_with_keys().await;
    assert_eq!(
        get_as(&served, "/v1/sessions", &keys.colleague).await.0,
        200
    );
    let id = ApiKeyRecord::id_of(&keys.colleague).unwrap().to_owned();
    assert!(keys.table.revoke(&id, now_ms()).await.unwrap());
    let revoked_at = std::time::Instant::now();
    loop {
        let (status, body) = get_as(&served, "/v1/sessions", &keys.colleague).await;
        if status == 401 {
            assert_eq!(
                body["error"]["message"],
                "The credential is refused: the key was revoked."
            );
            break;
        }
        assert!(
            revoked_at.elapsed() < Duration::from_secs(2),
            "the revoked key still works after 2 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Expiry is checked on each request, not only when the table is read.
    let (key, record) =
        ApiKeyRecord::create("acme", Role::Client, None, Some(now_ms() + 2500), now_ms()).unwrap();
    keys.table.insert(&record).await.unwrap();
    let deadline = std::time::Instant::now() + DEADLINE;
    while get_as(&served, "/v1/sessions", &key).await.0 != 200 {
        assert!(
            std::time::Instant::now() < deadline,
            "a new key never worked"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(2600)).await;
    let (status, body) = get_as(&served, "/v1/sessions", &key).await;
    assert_eq!(status, 401);
    assert_eq!(
        body["error"]["message"],
        "The credential is refused: the key has expired."
    );
    served.shutdown().await;
}

#[actix_rt::test]
async fn a_socket_that_authenticates_by_message_sees_only_its_own_sessions() {
    let (served, keys) = served_with_keys().await;
    let mine = served.open_as(&keys.owner).await;
    let url = served.ws(&format!("/v1/sessions/{mine}/ws"));
    // Another tenant's key: closed as if the session did not exist.
    let (mut socket, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
    socket
        .send(Message::text(
            json!({ "type": "auth", "token": keys.stranger }).to_string(),
        ))
        .await
        .unwrap();
    match tokio::time::timeout(DEADLINE, socket.next()).await.unwrap() {
        Some(Ok(Message::Close(Some(frame)))) => assert_eq!(u16::from(frame.code), 4404),
        other => panic!("expected a close, got {other:?}"),
    }
    // The owner's key: served.
    let (mut socket, _) = tokio_tungstenite::connect_async(&url).await.unwrap();
    socket
        .send(Message::text(
            json!({ "type": "auth", "token": keys.owner }).to_string(),
        ))
        .await
        .unwrap();
    socket
        .send(Message::text(
            json!({ "type": "command", "command": "/model small" }).to_string(),
        ))
        .await
        .unwrap();
    loop {
        let message = tokio::time::timeout(DEADLINE, socket.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let Message::Text(text) = message else {
            continue;
        };
        let value: Value = serde_json::from_str(text.as_str()).unwrap();
        if value["type"] == "done" {
            assert_eq!(value["session"]["model"], "small");
            break;
        }
        assert_ne!(value["type"], "error", "{value}");
    }
    served.shutdown().await;
}

/// Starts a turn that asks for an approval (the echo model calls `write_file`), as `key`.
async fn asking_turn(served: &Served, session: &str, key: &str) -> String {
    let client = served.client.clone();
    let url = served.url(&format!("/v1/sessions/{session}/turns"));
    let key = key.to_owned();
    tokio::spawn(async move {
        let text = r#"call write_file {"path":"a.txt","content":"hi"}"#;
        client
            .post(url)
            .bearer_auth(key)
            .json(&json!({ "text": text }))
            .send()
            .await
    });
    serve_support::until_activity(served, session, Activity::Approval).await;
    let call = served
        .gateway()
        .session(&hookline::messages::session::SessionId::new(session))
        .unwrap()
        .pending_approvals();
    call[0].clone()
}

#[actix_rt::test]
async fn who_answers_approvals_is_the_tenants_setting_and_the_archive_names_them() {
    let tenants = Tenants {
        default: TenantPolicy::default(),
        named: [(
            "globex".to_owned(),
            TenantPolicy {
                approvals: ApprovalAnswerers::OwnerOrOperator,
                ..TenantPolicy::default()
            },
        )]
        .into(),
    };
    let (served, keys) = served_with_tenants(tenants).await;
    // acme (the default, `operator`): its client lists the approval but may not answer it; a
    // client of another tenant is told the session does not exist; its operator answers.
    let session = served.open_as(&keys.owner).await;
    let call = asking_turn(&served, &session, &keys.owner).await;
    let (_, listed) = get_as(&served, "/v1/approvals", &keys.owner).await;
    assert_eq!(listed["approvals"][0]["callId"], call.as_str());
    let (_, hidden) = get_as(&served, "/v1/approvals", &keys.stranger).await;
    assert_eq!(hidden["approvals"], json!([]));
    let path = format!("/v1/sessions/{session}/approvals/{call}");
    let answer = json!({ "decision": "deny" });
    for (key, status, code) in [
        (&keys.stranger, 404, "unknown-session"),
        (&keys.strange_operator, 404, "unknown-session"),
        (&keys.colleague, 404, "unknown-session"),
        (&keys.owner, 403, "forbidden"),
    ] {
        let response = served
            .client
            .post(served.url(&path))
            .bearer_auth(key)
            .json(&answer)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), status);
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], code, "{body}");
    }
    let response = served
        .client
        .post(served.url(&path))
        .bearer_auth(&keys.operator)
        .json(&answer)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    serve_support::until_activity(&served, &session, Activity::Idle).await;
    let (_, shown) = get_as(&served, &format!("/v1/sessions/{session}"), &keys.owner).await;
    let operator_id = ApiKeyRecord::id_of(&keys.operator).unwrap();
    assert_eq!(shown["answered"][0]["callId"], call.as_str(), "{shown}");
    assert_eq!(shown["answered"][0]["decision"], "deny");
    assert_eq!(
        shown["answered"][0]["answeredBy"],
        format!("acme/{operator_id}")
    );
    // globex (`owner-or-operator`): the client that opened the session answers it itself.
    let session = served.open_as(&keys.stranger).await;
    let call = asking_turn(&served, &session, &keys.stranger).await;
    let response = served
        .client
        .post(served.url(&format!("/v1/sessions/{session}/approvals/{call}")))
        .bearer_auth(&keys.stranger)
        .json(&json!({ "decision": "allow" }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    serve_support::until_activity(&served, &session, Activity::Idle).await;
    let (_, shown) = get_as(&served, &format!("/v1/sessions/{session}"), &keys.admin).await;
    let stranger_id = ApiKeyRecord::id_of(&keys.stranger).unwrap();
    assert_eq!(
        shown["answered"][0]["answeredBy"],
        format!("globex/{stranger_id}")
    );
    served.shutdown().await;
}

#[actix_rt::test]
async fn a_tenant_past_its_limits_is_refused_naming_them_and_others_are_not() {
    let limited = TenantPolicy {
        limits: TenantLimits {
            turns_per_second: std::num::NonZeroU32::new(1),
            max_sessions: Some(2),
            body_limit: Some(200),
            ..TenantLimits::default()
        },
        ..TenantPolicy::default()
    };
    let tenants = Tenants {
        default: TenantPolicy::default(),
        named: [("acme".to_owned(), limited)].into(),
    };
    let (served, keys) = served_with_tenants(tenants).await;
    let first = served.open_as(&keys.owner).await;
    served.open_as(&keys.colleague).await;
    // A third session of acme: past max_sessions; globex opens as many as it likes.
    let response = served
        .client
        .post(served.url("/v1/sessions"))
        .bearer_auth(&keys.operator)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 429);
    assert!(response.headers().contains_key("retry-after"));
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "tenant-limit");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("max_sessions"),
        "{body}"
    );
    let theirs = served.open_as(&keys.stranger).await;
    for _ in 0..3 {
        served.open_as(&keys.stranger).await;
    }
    // Two turns at once past a rate of one a second: the second is told to wait.
    let turn = |session: String, key: String| {
        served
            .client
            .post(served.url(&format!("/v1/sessions/{session}/turns")))
            .bearer_auth(key)
            .json(&json!({ "text": "hi" }))
            .send()
    };
    assert_eq!(
        turn(first.clone(), keys.owner.clone())
            .await
            .unwrap()
            .status(),
        200
    );
    let refused = turn(first.clone(), keys.owner.clone()).await.unwrap();
    assert_eq!(refused.status(), 429);
    let wait: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(wait >= 1);
    let body: Value = refused.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("turns_per_second"),
        "{body}"
    );
    for _ in 0..3 {
        let status = turn(theirs.clone(), keys.stranger.clone())
            .await
            .unwrap()
            .status();
        assert_eq!(status, 200, "globex is not limited by acme's rate");
    }
    // A body over acme's body_limit, below the server's.
    let response = served
        .client
        .post(served.url(&format!("/v1/sessions/{first}/turns")))
        .bearer_auth(&keys.owner)
        .json(&json!({ "text": "x".repeat(500) }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 413);
    let body: Value = response.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("body_limit"),
        "{body}"
    );
    served.shutdown().await;
}
