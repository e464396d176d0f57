//! The OpenAPI document (issue 24 item 1, docs/serve.md "OpenAPI"): `GET /v1/openapi.json`
//! serves what `docs/openapi.json` holds, every route is in it, every reference in it resolves,
//! and real answers match the schemas it gives for their route and status: events, stored
//! records and plugins of every kind against the full schemas of their types.
//!
//! Regenerate `docs/openapi.json` with `HOOKLINE_BLESS=1 cargo test --test serve_openapi`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod serve_support;
mod support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use hookline::actors::plugin::{HookError, PluginRegistration, Reply};
use hookline::host::demo::example_plugins;
use hookline::host::gateway::Activity;
use hookline::host::loading::manifest::write_enabled;
use hookline::host::loading::{load, LoadOptions, LoadReport};
use hookline::host::provider::EchoProvider;
use hookline::messages::hook::OnUserMessage;
use hookline::messages::user::UserMessage;
use serde_json::{json, Value};
use serve_support::{serve, serve_plugins, until_activity, Served, SseReader};
use support::copy_dir;

fn committed_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/openapi.json")
}

async fn served() -> Served {
    serve(
        Arc::new(EchoProvider::new()),
        |limits| limits.approval_timeout = Duration::from_secs(45),
        |_| {},
    )
    .await
}

/// The schema the document gives for `method path` answering `status` as JSON, made a
/// standalone schema (the document's components beside it, for its references).
fn answer_schema(document: &Value, method: &str, path: &str, status: u16) -> Value {
    let schema = &document["paths"][path][method]["responses"][status.to_string()]["content"]
        ["application/json"]["schema"];
    assert!(
        schema.is_object(),
        "the document gives no JSON schema for {method} {path} answering {status}"
    );
    let mut standalone = schema.clone();
    standalone["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
    standalone["components"] = document["components"].clone();
    standalone
}

/// Fails unless `answer` matches the document's schema for it.
fn assert_conforms(document: &Value, method: &str, path: &str, status: u16, answer: &Value) {
    let schema = answer_schema(document, method, path, status);
    let validator = jsonschema::draft202012::new(&schema)
        .unwrap_or_else(|error| panic!("the schema of {method} {path} {status}: {error}"));
    let errors: Vec<String> = validator
        .iter_errors(answer)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{method} {path} {status} does not match its schema: {errors:?}\n{answer}"
    );
}

#[actix_rt::test]
async fn the_served_document_is_the_committed_one() {
    let served = served().await;
    let response = served
        .client
        .get(served.url("/v1/openapi.json"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "application/json"
    );
    let text = response.text().await.unwrap();
    assert_eq!(text, hookline::server::openapi_json());
    if std::env::var_os("HOOKLINE_BLESS").is_some() {
        std::fs::write(committed_path(), &text).unwrap();
    }
    let committed = std::fs::read_to_string(committed_path()).unwrap_or_default();
    assert!(
        committed == text,
        "docs/openapi.json is out of date: run HOOKLINE_BLESS=1 cargo test --test serve_openapi"
    );
    served.shutdown().await;
}

/// Every `$ref` in `value`, with where it was found.
fn references(value: &Value, at: &str, found: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                if let ("$ref", Value::String(target)) = (key.as_str(), inner) {
                    found.push((at.to_owned(), target.clone()));
                }
                references(inner, &format!("{at}/{key}"), found);
            }
        }
        Value::Array(items) => {
            for (i, inner) in items.iter().enumerate() {
                references(inner, &format!("{at}/{i}"), found);
            }
        }
        _ => {}
    }
}

#[test]
fn every_route_is_described_and_every_reference_resolves() {
    let document: Value = serde_json::from_str(hookline::server::openapi_json()).unwrap();
    assert_eq!(document["openapi"], "3.1.0");
    let operations: BTreeSet<String> = document["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .map(move |method| format!("{} {path}", method.to_uppercase()))
        })
        .collect();
    let routes = [
        "GET /healthz",
        "GET /readyz",
        "GET /metrics",
        "GET /v1/plugins",
        "GET /v1/openapi.json",
        "POST /v1/sessions",
        "GET /v1/sessions",
        "GET /v1/sessions/{id}",
        "GET /v1/sessions/{id}/archive",
        "DELETE /v1/sessions/{id}",
        "POST /v1/sessions/{id}/resume",
        "POST /v1/sessions/{id}/turns",
        "POST /v1/sessions/{id}/approvals/{call_id}",
        "POST /v1/sessions/{id}/commands",
        "GET /v1/sessions/{id}/ws",
        "GET /v1/events",
        "GET /v1/approvals",
        "GET /v1/whoami",
        "GET /v1/keys",
        "POST /v1/keys",
        "DELETE /v1/keys/{id}",
    ];
    let expected: BTreeSet<String> = routes.iter().map(|r| (*r).to_owned()).collect();
    assert_eq!(operations, expected);

    let mut found = Vec::new();
    references(&document, "#", &mut found);
    assert!(found.len() > 20, "{found:?}");
    for (at, target) in found {
        let pointer = target.strip_prefix('#').unwrap_or_else(|| {
            panic!("{at} refers outside the document: {target}");
        });
        assert!(
            document.pointer(pointer).is_some(),
            "{at} refers to {target}, which the document does not hold"
        );
    }
    // Every error answer is the one error shape.
    for (path, item) in document["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            for (status, response) in operation["responses"].as_object().unwrap() {
                if status.starts_with('4') || status.starts_with('5') {
                    let schema = &response["content"]["application/json"]["schema"];
                    assert_eq!(
                        schema["$ref"], "#/components/schemas/ErrorBody",
                        "{method} {path} {status}"
                    );
                }
            }
        }
    }
}

#[actix_rt::test]
async fn real_answers_match_the_schemas_of_their_routes() {
    let document: Value = serde_json::from_str(hookline::server::openapi_json()).unwrap();
    let served = served().await;
    let check = |method: &str, path: &str, status: u16, answer: &Value| {
        assert_conforms(&document, method, path, status, answer);
    };

    for (path, status) in [("/healthz", 200), ("/readyz", 200), ("/v1/plugins", 200)] {
        let (got, answer) = served.get(path).await;
        assert_eq!(got, status, "{answer}");
        check("get", path, status, &answer);
    }
    let (status, opened) = served.post("/v1/sessions", json!({})).await;
    assert_eq!(status, 201, "{opened}");
    check("post", "/v1/sessions", 201, &opened);
    let key = opened["key"].as_str().unwrap().to_owned();

    let (status, turn) = served
        .post(
            &format!("/v1/sessions/{key}/turns"),
            json!({ "text": "hello" }),
        )
        .await;
    assert_eq!(status, 200, "{turn}");
    check("post", "/v1/sessions/{id}/turns", 200, &turn);

    // A turn that waits for an operator: the approvals as listed, the answer, the turn's end.
    let waiting = {
        let client = served.client.clone();
        let url = served.url(&format!("/v1/sessions/{key}/turns"));
        tokio::spawn(async move {
            let text = r#"call write_file {"path":"a.txt","content":"hi"}"#;
            let response = client.post(url).json(&json!({ "text": text })).send().await;
            response.unwrap().json::<Value>().await.unwrap()
        })
    };
    until_activity(&served, &key, Activity::Approval).await;
    let (_, approvals) = served.get("/v1/approvals").await;
    check("get", "/v1/approvals", 200, &approvals);
    let (_, shown) = served.get(&format!("/v1/sessions/{key}")).await;
    check("get", "/v1/sessions/{id}", 200, &shown);
    let call_id = approvals["approvals"][0]["callId"].as_str().unwrap();
    let (status, answered) = served
        .post(
            &format!("/v1/sessions/{key}/approvals/{call_id}"),
            json!({ "decision": "allow" }),
        )
        .await;
    assert_eq!(status, 200, "{answered}");
    check(
        "post",
        "/v1/sessions/{id}/approvals/{call_id}",
        200,
        &answered,
    );
    let finished = waiting.await.unwrap();
    check("post", "/v1/sessions/{id}/turns", 200, &finished);

    // Records are read between requests: once the session is idle the page holds them.
    until_activity(&served, &key, Activity::Idle).await;
    let (_, shown) = served.get(&format!("/v1/sessions/{key}")).await;
    let items = shown["records"]["items"].as_array().unwrap();
    assert!(!items.is_empty(), "{shown}");
    check("get", "/v1/sessions/{id}", 200, &shown);
    // Issue 46 item 3: the archive, as stored: both turns, the operator's approval, their ends.
    let (status, archive) = served
        .get(&format!("/v1/sessions/{key}/archive?limit=1000"))
        .await;
    assert_eq!(status, 200, "{archive}");
    check("get", "/v1/sessions/{id}/archive", 200, &archive);
    let entries = archive["items"].as_array().unwrap();
    assert_eq!(archive["total"].as_u64(), Some(entries.len() as u64));
    assert_eq!(archive["turnsBefore"], 0);
    let kinds: Vec<&str> = entries.iter().filter_map(|e| e["kind"].as_str()).collect();
    assert_eq!(kinds.first(), Some(&"session-started"), "{kinds:?}");
    let users: Vec<usize> = (0..kinds.len())
        .filter(|&i| kinds[i] == "user-message")
        .collect();
    assert_eq!(users.len(), 2, "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "turn-finished").count(), 2);
    assert!(entries
        .iter()
        .any(|e| e["kind"] == "approval" && e["decidedBy"] == "operator"));
    // A page after the first user message counts it before its offset.
    let (_, later) = served
        .get(&format!(
            "/v1/sessions/{key}/archive?offset={}",
            users[0] + 1
        ))
        .await;
    assert_eq!(later["turnsBefore"], 1, "{later}");
    assert_eq!(later["items"][0], entries[users[0] + 1]);
    let (_, listed) = served.get("/v1/sessions").await;
    check("get", "/v1/sessions", 200, &listed);
    let (status, commanded) = served
        .post(
            &format!("/v1/sessions/{key}/commands"),
            json!({ "command": "/new" }),
        )
        .await;
    assert_eq!(status, 200, "{commanded}");
    check("post", "/v1/sessions/{id}/commands", 200, &commanded);

    // Errors: the one shape, under the status the document names.
    let (status, unknown) = served.get("/v1/sessions/nobody").await;
    assert_eq!(status, 404);
    check("get", "/v1/sessions/{id}", 404, &unknown);
    let (status, bad) = served
        .post(&format!("/v1/sessions/{key}/turns"), json!({ "txt": 1 }))
        .await;
    assert_eq!(status, 400);
    check("post", "/v1/sessions/{id}/turns", 400, &bad);

    let (status, closed) = served.delete(&format!("/v1/sessions/{key}")).await;
    assert_eq!(status, 200, "{closed}");
    check("delete", "/v1/sessions/{id}", 200, &closed);
    served.shutdown().await;
}

/// `moody`, loaded after the demo plugins: fails `on_user_message` on texts with "fail", so the
/// turn reports a skip note.
fn moody() -> PluginRegistration {
    PluginRegistration::new("moody").on(OnUserMessage, |_, m: &UserMessage| {
        if m.text.contains("fail") {
            return Err(HookError::msg("moody fails on purpose."));
        }
        Ok(Reply::Keep)
    })
}

/// Fails unless `value` matches the document's schema named `name` (`HostEvent`, `Record`).
fn assert_is(document: &Value, name: &str, value: &Value) {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": format!("#/components/schemas/{name}"),
        "components": document["components"].clone(),
    });
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(value)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "not a {name}: {errors:?}\n{value}");
}

/// Fails unless `done` (a turn stream's `done` data) is a `TurnDone` holding only the keys its
/// schema names (issue 34 item 4: the event is documented with its real schema).
fn assert_turn_done(document: &Value, done: &Value) {
    assert_is(document, "TurnDone", done);
    let properties = document["components"]["schemas"]["TurnDone"]["properties"]
        .as_object()
        .expect("TurnDone names its properties");
    for key in done.as_object().unwrap().keys() {
        assert!(
            properties.contains_key(key),
            "{key} is not in TurnDone: {done}"
        );
    }
}

/// The values of `field` in `values`, as a set.
fn kinds<'a>(values: impl IntoIterator<Item = &'a Value>, field: &str) -> BTreeSet<String> {
    values
        .into_iter()
        .filter_map(|value| value[field].as_str().map(str::to_owned))
        .collect()
}

/// Plugin directories in every state loading leaves them in: one loaded, one disabled, one
/// without a manifest, one untrusted workspace plugin.
async fn plugin_statuses(dir: &std::path::Path) -> LoadReport {
    let example =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/plugins/house-rules");
    let user = dir.join("user");
    let workspace = dir.join("workspace");
    for (root, name) in [(&user, "rules"), (&user, "off"), (&workspace, "stranger")] {
        copy_dir(&example, &root.join(name));
    }
    write_enabled(&user.join("off"), false).unwrap();
    std::fs::create_dir_all(user.join("broken")).unwrap();
    load(&LoadOptions::new(Some(user), Some(workspace))).await
}

/// Events and records of every kind a session shows (a tool call with its approval, hook
/// changes with and without their values, a skip note, a command's session events), and plugins
/// in every state, each match the full schema of its type (issue 24 item 1).
#[actix_rt::test]
async fn events_records_and_plugins_of_every_kind_match_their_schemas() {
    let document: Value = serde_json::from_str(hookline::server::openapi_json()).unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let report = plugin_statuses(scratch.path()).await;
    let states = kinds(
        report
            .statuses
            .iter()
            .map(|status| serde_json::to_value(status).unwrap())
            .collect::<Vec<_>>()
            .iter(),
        "state",
    );
    // The loaded plugins run: each answer reads their state now (issue 46 item 2).
    let view = hookline::server::PluginsView::new(&report.statuses, report.plugins.clone());
    let mut plugins = example_plugins();
    plugins.push(moody());
    let served = serve_plugins(
        plugins,
        Arc::new(EchoProvider::new()),
        |limits| limits.approval_timeout = Duration::from_secs(45),
        |config| config.plugins = view,
    )
    .await;
    let mut events = Vec::new();

    let (status, listed) = served.get("/v1/plugins").await;
    assert_eq!(status, 200, "{listed}");
    assert_conforms(&document, "get", "/v1/plugins", 200, &listed);
    let listed = listed["plugins"].as_array().unwrap();
    assert_eq!(listed.len(), 4, "{listed:?}");
    assert_eq!(kinds(listed, "state"), states);
    for state in ["loaded", "disabled", "skipped"] {
        assert!(states.contains(state), "no {state} plugin in {listed:?}");
    }
    for plugin in listed {
        assert_is(&document, "PluginView", plugin);
        // A loaded plugin says since when; the others have no live state.
        assert_eq!(
            plugin["stateSince"].is_string(),
            plugin["state"] == "loaded",
            "{plugin}"
        );
    }

    let key = served.open().await;
    let turns = format!("/v1/sessions/{key}/turns");
    for (path, text) in [
        (turns.clone(), "please fail"),
        (format!("{turns}?detail=full"), "hello in full"),
    ] {
        let (status, turn) = served.post(&path, json!({ "text": text })).await;
        assert_eq!(status, 200, "{turn}");
        assert_conforms(&document, "post", "/v1/sessions/{id}/turns", 200, &turn);
        events.extend(turn["events"].as_array().unwrap().iter().cloned());
    }
    // The tool call's turn as server-sent events: the approval asked, answered, the call run.
    let response = served
        .client
        .post(served.url(&turns))
        .header("accept", "text/event-stream")
        .json(&json!({ "text": r#"call write_file {"path":"a.txt","content":"hi"}"# }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut stream = SseReader::new(response);
    loop {
        let (kind, data) = stream.next().await.expect("the stream ended before `done`");
        match kind.as_str() {
            "done" => {
                assert_eq!(data["stopReason"], "completed", "{data}");
                assert_turn_done(&document, &data);
                break;
            }
            "approval-requested" => {
                let call_id = data["callId"].as_str().unwrap();
                let (status, answered) = served
                    .post(
                        &format!("/v1/sessions/{key}/approvals/{call_id}"),
                        json!({ "decision": "allow" }),
                    )
                    .await;
                assert_eq!(status, 200, "{answered}");
            }
            _ => {}
        }
        assert_eq!(data["event"], kind.as_str(), "{data}");
        events.push(data);
    }

    until_activity(&served, &key, Activity::Idle).await;
    let (_, shown) = served.get(&format!("/v1/sessions/{key}")).await;
    assert_conforms(&document, "get", "/v1/sessions/{id}", 200, &shown);
    let records = shown["records"]["items"].as_array().unwrap().clone();
    let (status, commanded) = served
        .post(
            &format!("/v1/sessions/{key}/commands"),
            json!({ "command": "/new" }),
        )
        .await;
    assert_eq!(status, 200, "{commanded}");
    assert_conforms(
        &document,
        "post",
        "/v1/sessions/{id}/commands",
        200,
        &commanded,
    );
    events.extend(commanded["events"].as_array().unwrap().iter().cloned());

    let seen = kinds(&events, "event");
    for kind in [
        "user",
        "hook-changed",
        "system-text",
        "model-call",
        "assistant",
        "tool-call",
        "approval-requested",
        "approval",
        "tool-run",
        "tool-result",
        "turn-finished",
        "note",
        "session-ended",
        "session-started",
        "gateway-event",
    ] {
        assert!(seen.contains(kind), "no {kind} event among {seen:?}");
    }
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "hook-changed" && e.get("before").is_some()),
        "no hook-changed event with its values"
    );
    for event in &events {
        assert_is(&document, "HostEvent", event);
    }
    let stored = kinds(&records, "kind");
    for kind in ["system", "user", "assistant", "tool-call", "tool-result"] {
        assert!(stored.contains(kind), "no {kind} record among {stored:?}");
    }
    for record in &records {
        assert_is(&document, "Record", record);
    }
    // A schema that admits anything proves nothing: a wrong shape of each kind fails.
    assert!(!jsonschema::draft202012::is_valid(
        &json!({ "$ref": "#/components/schemas/HostEvent", "components": document["components"] }),
        &json!({ "event": "tool-call", "call": { "callId": 7 } }),
    ));
    assert!(!jsonschema::draft202012::is_valid(
        &json!({ "$ref": "#/components/schemas/Record", "components": document["components"] }),
        &json!({ "kind": "tool-result", "callId": "c1", "name": "x", "text": "" }),
    ));
    served.shutdown().await;
    report.shutdown().await;
}
