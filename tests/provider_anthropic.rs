//! The Anthropic Messages API provider against a local stub server (issue 21 item 3): the exact
//! request JSON of a turn with a tool call and its result, streamed text and `input_json_delta`
//! pieces split anywhere, a 429 storm honouring `retry-after`, a 529, a stream cut mid-event, an
//! `error` event, `/stop` closing the request, and the key kept out of everything the tests can
//! capture. Nothing leaves the machine: the stub listens on an ephemeral loopback port.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod provider_stub;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hookline::host::provider::{Provider, ProviderError};
use hookline::host::tools::ToolRegistry;
use hookline::host::turn::UserInput;
use hookline::host::{Host, HostEvent};
use hookline::messages::model::{FinishReason, Item, ItemBody, ModelRequest, Purpose, Usage};
use hookline::messages::session::ApprovalMode;
use hookline::messages::user::StopReason;
use hookline::providers::{AnthropicConfig, AnthropicProvider, KeySource, RetryPolicy};
use provider_stub::{anthropic_events, pieces, Canned, Stub};
use serde_json::{json, Value};

/// The key the tests' provider reads. It must never come back out.
const KEY: &str = "sk-ant-hookline-test-0b7d41";
/// The variable holding it.
const KEY_VAR: &str = "HOOKLINE_TEST_ANTHROPIC_KEY";

fn key_var() -> &'static str {
    static SET: std::sync::Once = std::sync::Once::new();
    SET.call_once(|| std::env::set_var(KEY_VAR, KEY));
    KEY_VAR
}

fn config(stub: &Stub, stream: bool) -> AnthropicConfig {
    AnthropicConfig {
        key: KeySource::Env(key_var().into()),
        stream,
        timeout: Duration::from_secs(10),
        max_tokens: 1000,
        retry: RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(2),
            max_delay: Duration::from_millis(10),
            max_retry_after: Duration::from_secs(1),
        },
        ..AnthropicConfig::new(&stub.root_url, "claude-stub")
    }
}

fn work_request(text: &str) -> ModelRequest {
    ModelRequest {
        purpose: Purpose::Work,
        accepts_images: false,
        items: vec![Item::new(
            "u1",
            ItemBody::User {
                text: text.into(),
                images: vec![],
            },
        )]
        .into_iter()
        .map(std::sync::Arc::new)
        .collect(),
    }
}

fn answer(text: &str) -> Canned {
    Canned::ok(json!({
        "id": "msg_1", "type": "message", "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 1}
    }))
}

/// The text events of a streamed answer saying `parts`, then a tool call whose input comes in
/// `json_parts`.
fn streamed_events(parts: &[&str], json_parts: &[&str]) -> Vec<Value> {
    let mut events = vec![
        json!({"type": "message_start", "message": {"id": "msg_2", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 40, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "ping"}),
    ];
    for part in parts {
        events.push(json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": part}}));
    }
    events.push(json!({"type": "content_block_stop", "index": 0}));
    events.push(json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_7", "name": "read_file", "input": {}}}));
    for part in json_parts {
        events.push(json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": part}}));
    }
    events.push(json!({"type": "content_block_stop", "index": 1}));
    events.push(json!({"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 22}}));
    events.push(json!({"type": "message_stop"}));
    events
}

/// A host over `provider` with the built-in tools, in a fresh workspace holding `notes.txt`.
fn host(provider: Arc<dyn Provider>) -> (Host, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("notes.txt"), "three little words").unwrap();
    let host = Host::builder()
        .tools(ToolRegistry::with_builtins())
        .provider(provider)
        .approval_mode(ApprovalMode::AskAboveRead)
        .workspace(&ws)
        .store(dir.path().join("store"))
        .start()
        .unwrap();
    (host, dir)
}

#[actix_rt::test]
async fn a_turn_with_a_tool_call_sends_the_exact_messages_request() {
    let stub = Stub::start(vec![
        Canned::ok(json!({
            "id": "msg_1", "type": "message", "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading it."},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "notes.txt"}}
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "output_tokens": 5}
        })),
        answer("Three words."),
    ])
    .await;
    let provider = AnthropicProvider::new(config(&stub, false))
        .unwrap()
        .with_tools(&ToolRegistry::with_builtins());
    let (mut host, _dir) = host(Arc::new(provider));
    host.open().await.unwrap();
    let stop = host
        .user_turn(UserInput::work("count the words"))
        .await
        .unwrap();
    assert_eq!(stop, StopReason::Completed);
    let events = host.take_events();
    assert!(events.contains(&HostEvent::Assistant {
        text: "Three words.".into()
    }));
    let system = events
        .iter()
        .find_map(|e| match e {
            HostEvent::SystemText { text, .. } => Some(text.clone()),
            _ => None,
        })
        .unwrap();
    let received = stub.received();
    assert_eq!(received.len(), 2);
    for request in &received {
        assert_eq!(request.headers.get("x-api-key").unwrap(), KEY);
        assert_eq!(
            request.headers.get("anthropic-version").unwrap(),
            "2023-06-01"
        );
        assert!(request.headers.get("authorization").is_none());
    }
    let tools = ToolRegistry::with_builtins();
    let tool_defs: Vec<Value> = tools
        .specs()
        .map(|spec| {
            let tool = tools.get(&spec.name).unwrap();
            json!({"name": spec.name, "description": spec.description, "input_schema": tool.parameters()})
        })
        .collect();
    assert_eq!(
        received[1].body,
        json!({
            "model": "claude-stub",
            "max_tokens": 1000,
            "system": system,
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "count the words"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Reading it."},
                    {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "notes.txt"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "three little words"}]}
                ]}
            ],
            "tools": tool_defs,
            "stream": false
        })
    );
}

#[tokio::test]
async fn streamed_text_and_input_json_deltas_split_anywhere_assemble_to_the_whole_answer() {
    let events = streamed_events(
        &["Let me ", "read ", "it."],
        &["{\"pa", "th\": \"no", "tes.txt\"}"],
    );
    for split in [1, 7, 64, 100_000] {
        let stub = Stub::start(vec![Canned::anthropic_sse(&events, split)]).await;
        let provider = AnthropicProvider::new(config(&stub, true)).unwrap();
        let seen = Mutex::new(Vec::new());
        let on_text = |t: &str| seen.lock().unwrap().push(t.to_owned());
        let response = provider
            .complete_streaming(&work_request("hi"), &on_text)
            .await
            .unwrap();
        assert_eq!(seen.into_inner().unwrap(), vec!["Let me ", "read ", "it."]);
        assert_eq!(response.finish_reason, FinishReason::ToolCalls);
        assert_eq!(response.usage, Usage::reported(40, 22));
        assert_eq!(
            response
                .items
                .iter()
                .map(|i| i.body.clone())
                .collect::<Vec<_>>(),
            vec![
                ItemBody::Assistant {
                    text: "Let me read it.".into(),
                    images: vec![]
                },
                ItemBody::ToolCall {
                    call_id: "toolu_7".into(),
                    name: "read_file".into(),
                    arguments: json!({"path": "notes.txt"})
                },
            ]
        );
        assert_eq!(stub.received()[0].body["stream"], json!(true));
    }
}

#[tokio::test]
async fn a_429_storm_is_retried_honouring_retry_after_and_then_gives_up() {
    let limited = || Canned::Whole {
        status: 429,
        headers: vec![
            ("content-type", "application/json".into()),
            ("retry-after", "0.2".into()),
        ],
        body:
            json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})
                .to_string(),
    };
    // Two 429s, then an answer: three attempts, each wait the 200 ms the server asked for.
    let stub = Stub::start(vec![limited(), limited(), answer("fine")]).await;
    let provider = AnthropicProvider::new(config(&stub, false)).unwrap();
    let started = Instant::now();
    let response = provider.complete(&work_request("hi")).await.unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(400),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(response.usage, Usage::reported(3, 1));
    assert_eq!(stub.received().len(), 3);
    // A storm longer than the attempts: the last 429 is the error, in English.
    let stub = Stub::start(vec![limited(), limited(), limited(), answer("never")]).await;
    let provider = AnthropicProvider::new(config(&stub, false)).unwrap();
    let error = provider.complete(&work_request("hi")).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "the provider answered 429 after 3 attempt(s): slow down"
    );
    assert_eq!(stub.left(), 1);
}

#[tokio::test]
async fn a_529_overloaded_is_retried() {
    let stub = Stub::start(vec![
        Canned::anthropic_status(529, "overloaded_error", "Overloaded"),
        answer("made it"),
    ])
    .await;
    let provider = AnthropicProvider::new(config(&stub, false)).unwrap();
    let response = provider.complete(&work_request("hi")).await.unwrap();
    assert!(
        matches!(&response.items[0].body, ItemBody::Assistant { text, .. } if text == "made it")
    );
    assert_eq!(stub.received().len(), 2);
    // A 400 is final: one attempt, the server's message.
    let stub = Stub::start(vec![Canned::anthropic_status(
        400,
        "invalid_request_error",
        "max_tokens: must be positive",
    )])
    .await;
    let provider = AnthropicProvider::new(config(&stub, false)).unwrap();
    assert_eq!(
        provider.complete(&work_request("hi")).await.unwrap_err(),
        ProviderError::Status {
            status: 400,
            attempts: 1,
            message: "max_tokens: must be positive".into()
        }
    );
}

#[tokio::test]
async fn a_stream_cut_mid_event_and_an_error_event_fail_the_call_in_english() {
    let text = anthropic_events(&streamed_events(&["Hel", "lo"], &["{}"]));
    let cut = &text[..text.find("message_delta").unwrap() + 10];
    let stub = Stub::start(vec![
        Canned::Broken {
            pieces: pieces(cut, 16),
        },
        Canned::Stream {
            pieces: vec![anthropic_events(&[
                json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}}),
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            ])],
            hang: false,
        },
    ])
    .await;
    let provider = AnthropicProvider::new(config(&stub, true)).unwrap();
    let seen = Mutex::new(Vec::new());
    let on_text = |t: &str| seen.lock().unwrap().push(t.to_owned());
    let error = provider
        .complete_streaming(&work_request("hi"), &on_text)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("the provider's reply is malformed: the reply was cut off"),
        "{error}"
    );
    // The text that streamed before the cut stays offered.
    assert_eq!(seen.into_inner().unwrap(), vec!["Hel", "lo"]);
    let error = provider
        .complete_streaming(&work_request("hi"), &|_| {})
        .await
        .unwrap_err();
    assert_eq!(error, ProviderError::Failed("Overloaded".into()));
    // Neither is retried: one request each.
    assert_eq!(stub.received().len(), 2);
}

#[tokio::test]
async fn dropping_the_call_future_closes_the_request() {
    let first = anthropic_events(&[
        json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}),
    ]);
    let stub = Stub::start(vec![Canned::Stream {
        pieces: vec![first],
        hang: true,
    }])
    .await;
    let provider = AnthropicProvider::new(config(&stub, true)).unwrap();
    let first_words = Arc::new(tokio::sync::Notify::new());
    let notify = first_words.clone();
    let on_text = move |_: &str| notify.notify_one();
    let request = work_request("hi");
    tokio::select! {
        _ = provider.complete_streaming(&request, &on_text) => panic!("the stream hangs; it cannot end"),
        () = first_words.notified() => {}
    }
    assert!(stub.client_went_away().await, "the request was not closed");
}

#[tokio::test]
async fn the_key_never_comes_back_out_and_a_missing_key_variable_is_named() {
    // A careless server that repeats the key in its error text.
    let stub = Stub::start(vec![Canned::EchoAuth]).await;
    let provider = AnthropicProvider::new(config(&stub, false)).unwrap();
    let error = provider.complete(&work_request("hi")).await.unwrap_err();
    let text = error.to_string();
    assert!(!text.contains(KEY), "{text}");
    assert!(text.contains("[redacted]"), "{text}");
    assert!(!format!("{provider:?}").contains(KEY));
    let missing = AnthropicProvider::new(AnthropicConfig {
        key: KeySource::Env("HOOKLINE_TEST_NO_SUCH_KEY_VAR".into()),
        ..config(&stub, false)
    })
    .unwrap_err();
    assert_eq!(
        missing.to_string(),
        "the provider is misconfigured: the environment variable HOOKLINE_TEST_NO_SUCH_KEY_VAR (the API key) is not set"
    );
}
