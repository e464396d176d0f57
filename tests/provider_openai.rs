//! The OpenAI-compatible provider against a local stub server (issue 12 items 2 to 5): the exact
//! request JSON of a turn with a tool call and its result (with and without images), a streamed
//! answer in many chunks, retries, malformed replies, a cancelled stream, and the key kept out
//! of everything the tests can capture. Nothing leaves the machine: the stub listens on an
//! ephemeral loopback port.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod provider_stub;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use hookline::actors::plugin::{HookResult, PluginRegistration, RawHooks, Reply};
use hookline::host::provider::{Provider, ProviderError};
use hookline::host::tools::ToolRegistry;
use hookline::host::turn::UserInput;
use hookline::host::{Host, HostEvent};
use hookline::messages::hook::{HookContext, HookKind, HookSet};
use hookline::messages::model::{
    FinishReason, ImageRef, Item, ItemBody, MediaType, ModelRequest, Purpose, Usage,
};
use hookline::messages::note::Note;
use hookline::messages::prompt::PromptMode;
use hookline::messages::session::ApprovalMode;
use hookline::messages::user::StopReason;
use hookline::providers::{ImageSource, KeySource, OpenAiConfig, OpenAiProvider, RetryPolicy};
use provider_stub::{pieces, Canned, Stub};
use serde_json::{json, Value};

/// The key the tests' provider reads. It must never come back out.
const KEY: &str = "sk-hookline-test-6f1c2a9e";
/// The variable holding it.
const KEY_VAR: &str = "HOOKLINE_TEST_PROVIDER_KEY";

/// Sets [`KEY_VAR`] once, before any test reads the environment: every test calls this first,
/// so no test reads the environment while it changes.
fn key_var() -> &'static str {
    static SET: std::sync::Once = std::sync::Once::new();
    SET.call_once(|| std::env::set_var(KEY_VAR, KEY));
    KEY_VAR
}

/// A configuration for `stub` whose key is in [`KEY_VAR`].
fn config(stub: &Stub, stream: bool) -> OpenAiConfig {
    OpenAiConfig {
        key: KeySource::Env(key_var().into()),
        stream,
        timeout: Duration::from_secs(10),
        retry: RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_millis(2),
            max_delay: Duration::from_millis(10),
            max_retry_after: Duration::from_secs(1),
        },
        ..OpenAiConfig::new(&stub.base_url, "stub-model")
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

fn answer(content: &str) -> Canned {
    Canned::ok(json!({
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1}
    }))
}

/// The tool definitions of the built-in tools, as the provider must send them.
fn builtin_tool_defs() -> Value {
    let tools = ToolRegistry::with_builtins();
    let description = |name: &str| tools.get(name).unwrap().spec().description.clone();
    let path = json!({"type": "string", "description": "A file path relative to the workspace."});
    json!([
        {"type": "function", "function": {"name": "list_dir", "description": description("list_dir"), "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "A directory relative to the workspace (default: the workspace)."}},
            "additionalProperties": false
        }}},
        {"type": "function", "function": {"name": "read_file", "description": description("read_file"), "parameters": {
            "type": "object", "properties": {"path": path}, "required": ["path"], "additionalProperties": false
        }}},
        {"type": "function", "function": {"name": "write_file", "description": description("write_file"), "parameters": {
            "type": "object",
            "properties": {"path": path, "content": {"type": "string", "description": "The whole new content."}},
            "required": ["path", "content"],
            "additionalProperties": false
        }}}
    ])
}

/// A fixed picture for image 1.
struct OnePicture;

impl ImageSource for OnePicture {
    fn bytes(&self, image: &ImageRef) -> Option<Vec<u8>> {
        (image.number == 1).then(|| b"\x89PNG-fake".to_vec())
    }
}

/// A host over `provider` with the built-in tools, in a fresh workspace holding `notes.txt`.
fn host(
    provider: Arc<dyn Provider>,
    plugins: Vec<PluginRegistration>,
) -> (Host, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("notes.txt"), "three little words").unwrap();
    let host = Host::builder()
        .plugins(plugins)
        .tools(ToolRegistry::with_builtins())
        .provider(provider)
        .workspace(&ws)
        .store(dir.path().join("store"))
        .approval_mode(ApprovalMode::AskAboveRead)
        .start()
        .unwrap();
    (host, dir)
}

fn system_text(events: &[HostEvent]) -> String {
    events
        .iter()
        .find_map(|e| match e {
            HostEvent::SystemText { text, .. } => Some(text.clone()),
            _ => None,
        })
        .unwrap()
}

/// SPEC R5.5, R5.6 and issue 12 item 2: one turn, a tool call and its result, exactly as sent.
async fn turn_with_a_tool_call(takes_images: bool) -> (Vec<Value>, String) {
    let stub = Stub::start(vec![
        Canned::ok(json!({
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "Reading it.", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"notes.txt\"}"}}
            ]}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}
        })),
        answer("Three words."),
    ])
    .await;
    let config = OpenAiConfig {
        takes_images,
        ..config(&stub, false)
    };
    let provider = OpenAiProvider::new(config)
        .unwrap()
        .with_tools(&ToolRegistry::with_builtins())
        .with_images(Arc::new(OnePicture));
    let (mut host, _dir) = host(Arc::new(provider), vec![]);
    host.open().await.unwrap();
    let input = UserInput {
        text: "count the words".into(),
        images: vec![MediaType::Png],
        mode: PromptMode::Work,
    };
    assert_eq!(host.user_turn(input).await.unwrap(), StopReason::Completed);
    let events = host.take_events();
    assert!(events.contains(&HostEvent::Assistant {
        text: "Three words.".into()
    }));
    let received = stub.received();
    assert_eq!(received.len(), 2);
    for request in &received {
        let auth = request.headers.get("authorization").unwrap();
        assert_eq!(auth.to_str().unwrap(), format!("Bearer {KEY}"));
    }
    (
        received.into_iter().map(|r| r.body).collect(),
        system_text(&events),
    )
}

fn expected_second_request(system: &str, user: Value) -> Value {
    json!({
        "model": "stub-model",
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": user},
            {"role": "assistant", "content": "Reading it.", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"notes.txt\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "three little words"}
        ],
        "tools": builtin_tool_defs(),
        "stream": false
    })
}

#[actix_rt::test]
async fn a_turn_with_a_tool_call_sends_the_exact_request_json_without_images() {
    let (bodies, system) = turn_with_a_tool_call(false).await;
    // The model takes no images: the attachment is never sent, not even as a marker.
    assert_eq!(
        bodies[1],
        expected_second_request(&system, json!("count the words"))
    );
}

#[actix_rt::test]
async fn a_turn_with_a_tool_call_sends_the_image_as_an_image_part_when_the_model_takes_images() {
    let (bodies, system) = turn_with_a_tool_call(true).await;
    let user = json!([
        {"type": "text", "text": "count the words"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORy1mYWtl"}}
    ]);
    assert_eq!(bodies[0]["messages"][1]["content"], user);
    assert_eq!(bodies[1], expected_second_request(&system, user));
}

#[tokio::test]
async fn a_streamed_answer_split_across_many_chunks_assembles_text_and_split_tool_call_arguments() {
    let delta = |d: Value| json!({"choices": [{"index": 0, "delta": d, "finish_reason": null}]});
    let events = [
        delta(json!({"role": "assistant", "content": ""})),
        delta(json!({"content": "The "})),
        delta(json!({"content": "answer"})),
        delta(json!({"content": " is ✓"})),
        delta(
            json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": ""}}]}),
        ),
        delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"pa"}}]})),
        delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "th\": \"no"}}]})),
        delta(
            json!({"tool_calls": [{"index": 1, "id": "call_2", "type": "function", "function": {"name": "list_dir", "arguments": "{}"}}]}),
        ),
        delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "tes.txt\"}"}}]})),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        json!({"choices": [], "usage": {"prompt_tokens": 42, "completion_tokens": 9}}),
    ];
    // Five bytes per body chunk: events, lines, JSON and a multi-byte character all split.
    let stub = Stub::start(vec![Canned::sse(&events, 5)]).await;
    let provider = OpenAiProvider::new(config(&stub, true)).unwrap();
    let seen = Mutex::new(Vec::new());
    let on_text = |text: &str| seen.lock().unwrap().push(text.to_owned());
    let response = provider
        .complete_streaming(&work_request("what is it?"), &on_text)
        .await
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), ["The ", "answer", " is ✓"]);
    assert_eq!(response.finish_reason, FinishReason::ToolCalls);
    assert_eq!(response.usage, Usage::reported(42, 9));
    let bodies: Vec<ItemBody> = response.items.into_iter().map(|i| i.body).collect();
    assert_eq!(
        bodies,
        vec![
            ItemBody::Assistant {
                text: "The answer is ✓".into(),
                images: vec![]
            },
            ItemBody::ToolCall {
                call_id: "call_1".into(),
                name: "read_file".into(),
                arguments: json!({"path": "notes.txt"})
            },
            ItemBody::ToolCall {
                call_id: "call_2".into(),
                name: "list_dir".into(),
                arguments: json!({})
            },
        ]
    );
    let sent = &stub.received()[0].body;
    assert_eq!(sent["stream"], json!(true));
    assert_eq!(sent["stream_options"], json!({"include_usage": true}));
}

#[tokio::test]
async fn a_streamed_and_a_whole_answer_are_the_same_response() {
    let stub = Stub::start(vec![
        answer("Hello there"),
        Canned::sse(
            &[
                json!({"choices": [{"index": 0, "delta": {"content": "Hello"}}]}),
                json!({"choices": [{"index": 0, "delta": {"content": " there"}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}),
            ],
            3,
        ),
    ])
    .await;
    let whole = OpenAiProvider::new(config(&stub, false)).unwrap();
    let streamed = OpenAiProvider::new(config(&stub, true)).unwrap();
    let request = work_request("hi");
    let a = whole.complete(&request).await.unwrap();
    let b = streamed.complete(&request).await.unwrap();
    assert_eq!(a, b);
}

#[tokio::test]
async fn a_429_then_success_is_retried_honouring_retry_after() {
    let stub = Stub::start(vec![
        Canned::Whole {
            status: 429,
            headers: vec![("retry-after-ms", "5".into())],
            body: "{\"error\":{\"message\":\"slow down\"}}".into(),
        },
        answer("fine"),
    ])
    .await;
    let provider = OpenAiProvider::new(config(&stub, false)).unwrap();
    let response = provider.complete(&work_request("hi")).await.unwrap();
    assert!(matches!(&response.items[0].body, ItemBody::Assistant { text, .. } if text == "fine"));
    assert_eq!(stub.received().len(), 2);
}

#[tokio::test]
async fn a_500_three_times_fails_after_three_attempts() {
    let stub = Stub::start(vec![
        Canned::status(500, "boom 1"),
        Canned::status(502, "boom 2"),
        Canned::status(500, "boom 3"),
        answer("never asked for"),
    ])
    .await;
    let provider = OpenAiProvider::new(config(&stub, false)).unwrap();
    let error = provider.complete(&work_request("hi")).await.unwrap_err();
    assert_eq!(
        error,
        ProviderError::Status {
            status: 500,
            attempts: 3,
            message: "boom 3".into()
        }
    );
    assert_eq!(
        error.to_string(),
        "the provider answered 500 after 3 attempt(s): boom 3"
    );
    assert_eq!((stub.received().len(), stub.left()), (3, 1));
}

#[tokio::test]
async fn a_4xx_is_not_retried_and_a_too_long_retry_after_is_not_waited_for() {
    let stub = Stub::start(vec![
        Canned::status(400, "bad tool schema"),
        Canned::Whole {
            status: 503,
            headers: vec![("retry-after", "3600".into())],
            body: String::new(),
        },
        answer("never asked for"),
    ])
    .await;
    let provider = OpenAiProvider::new(config(&stub, false)).unwrap();
    let error = provider.complete(&work_request("hi")).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "the provider answered 400 after 1 attempt(s): bad tool schema"
    );
    let error = provider.complete(&work_request("hi")).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "the provider could not be reached: the server asked to retry after 3600 s, longer than \
         the 1 s limit (the provider answered 503 after 1 attempt(s): Service Unavailable)"
    );
    assert_eq!((stub.received().len(), stub.left()), (2, 1));
}

#[tokio::test]
async fn malformed_replies_are_errors_with_english_messages() {
    let stub = Stub::start(vec![
        Canned::Whole {
            status: 200,
            headers: vec![("content-type", "application/json".into())],
            body: "{\"choices\": [".into(),
        },
        Canned::ok(json!({"choices": []})),
        Canned::ok(
            json!({"choices": [{"message": {"content": "x"}, "finish_reason": "tool_use"}]}),
        ),
        // A stream that ends cleanly but early, and one whose connection breaks.
        Canned::Stream {
            pieces: pieces(
                "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n",
                8,
            ),
            hang: false,
        },
        Canned::Broken {
            pieces: vec![
                "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n".into(),
            ],
        },
        Canned::sse(&[json!({"choices": []})], 100),
    ])
    .await;
    let whole = OpenAiProvider::new(config(&stub, false)).unwrap();
    let streamed = OpenAiProvider::new(config(&stub, true)).unwrap();
    let request = work_request("hi");
    let mut errors = Vec::new();
    for _ in 0..3 {
        errors.push(whole.complete(&request).await.unwrap_err().to_string());
    }
    for _ in 0..3 {
        errors.push(streamed.complete(&request).await.unwrap_err().to_string());
    }
    assert!(
        errors[0]
            .starts_with("the provider's reply is malformed: the reply is not the JSON expected ("),
        "{}",
        errors[0]
    );
    assert_eq!(
        errors[1],
        "the provider's reply is malformed: the reply has no choices"
    );
    assert_eq!(
        errors[2],
        "the provider's reply cannot be represented: the finish reason \"tool_use\" is not one the host knows"
    );
    assert_eq!(
        errors[3],
        "the provider's reply is malformed: the stream ended before the answer was complete"
    );
    assert!(
        errors[4].starts_with("the provider's reply is malformed: the reply was cut off ("),
        "{}",
        errors[4]
    );
    assert_eq!(
        errors[5],
        "the provider's reply is malformed: the stream held no choices"
    );
    // Malformed replies are not retried: one request each.
    assert_eq!(stub.received().len(), 6);
}

fn hanging_stream() -> Canned {
    Canned::Stream {
        pieces: vec![
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n".into(),
        ],
        hang: true,
    }
}

#[actix_rt::test]
async fn stop_during_a_streamed_call_cancels_the_turn_and_closes_the_request() {
    let stub = Stub::start(vec![hanging_stream()]).await;
    let provider = OpenAiProvider::new(config(&stub, true)).unwrap();
    let (mut host, _dir) = host(Arc::new(provider), vec![]);
    host.open().await.unwrap();
    let stop = host.stop_signal();
    // `/stop` (or Ctrl-C) arrives while the answer streams.
    let raise = async {
        assert!(stub.request_arrived().await);
        stop.raise();
    };
    let turn = tokio::time::timeout(
        Duration::from_secs(10),
        host.user_turn(UserInput::work("hi")),
    );
    let (stop_reason, ()) = tokio::join!(turn, raise);
    assert_eq!(stop_reason.unwrap().unwrap(), StopReason::Cancelled);
    assert!(stub.client_went_away().await, "the request was not closed");
    let events = host.take_events();
    assert!(events.contains(&HostEvent::ModelFailed {
        purpose: Purpose::Work,
        error: "the call was stopped".into()
    }));
}

#[tokio::test]
async fn dropping_the_call_future_closes_the_request() {
    let stub = Stub::start(vec![hanging_stream()]).await;
    let provider = OpenAiProvider::new(config(&stub, true)).unwrap();
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

/// A raw hook that adds an item to every request (SPEC R5.7's "changed this model request").
struct Adder;

#[async_trait]
impl RawHooks for Adder {
    fn raw_hooks(&self) -> HookSet {
        HookSet::of(&[HookKind::RebuildModel])
    }
    async fn rebuild_model(
        &self,
        _: &HookContext,
        mut r: ModelRequest,
    ) -> HookResult<Reply<ModelRequest>> {
        r.items.push(
            Item::new(
                "extra-item",
                ItemBody::User {
                    text: "x".into(),
                    images: vec![],
                },
            )
            .into(),
        );
        Ok(Reply::Replace(r))
    }
}

#[actix_rt::test]
async fn a_failed_call_fails_the_turn_with_the_raw_change_note_and_never_shows_the_key() {
    // The server echoes the Authorization header in its error text, as careless servers do.
    let stub = Stub::start(vec![Canned::EchoAuth]).await;
    let provider = OpenAiProvider::new(config(&stub, false)).unwrap();
    let debug = format!("{provider:?}");
    let plugin = PluginRegistration::new("acme").with_raw_hooks(Arc::new(Adder));
    let (mut host, dir) = host(Arc::new(provider), vec![plugin]);
    host.open().await.unwrap();
    let stop = host.user_turn(UserInput::work("go")).await.unwrap();
    assert_eq!(stop, StopReason::Failed);
    let events = host.take_events();
    let failed = events
        .iter()
        .find_map(|e| match e {
            HostEvent::ModelFailed { error, .. } => Some(error.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        failed,
        "the provider answered 401 after 1 attempt(s): Incorrect API key provided: Bearer [redacted]"
    );
    let note = Note::RawChangeFailure {
        plugins: vec!["acme".into()],
    };
    assert!(events
        .iter()
        .any(|e| matches!(e, HostEvent::Note { note: n, .. } if *n == note)));
    // The key is in none of it: events, the provider's Debug, the store on disk.
    let mut captured = serde_json::to_string(&events).unwrap() + &debug;
    for entry in walk(dir.path()) {
        captured.push_str(&String::from_utf8_lossy(&std::fs::read(entry).unwrap()));
    }
    assert!(captured.contains("[redacted]"));
    assert!(!captured.contains(KEY), "the key leaked");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[tokio::test]
async fn a_missing_key_variable_is_named_and_no_key_sends_no_header() {
    key_var();
    let stub = Stub::start(vec![answer("open server")]).await;
    let config = OpenAiConfig {
        key: KeySource::Env("HOOKLINE_TEST_KEY_UNSET_9d3".into()),
        ..OpenAiConfig::new(&stub.base_url, "m")
    };
    assert_eq!(
        OpenAiProvider::new(config).unwrap_err().to_string(),
        "the provider is misconfigured: the environment variable HOOKLINE_TEST_KEY_UNSET_9d3 (the API key) is not set"
    );
    let config = OpenAiConfig {
        key: KeySource::EnvIfSet("HOOKLINE_TEST_KEY_UNSET_9d3".into()),
        stream: false,
        ..OpenAiConfig::new(&stub.base_url, "m")
    };
    OpenAiProvider::new(config)
        .unwrap()
        .complete(&work_request("hi"))
        .await
        .unwrap();
    assert!(stub.received()[0].headers.get("authorization").is_none());
}

#[tokio::test]
async fn an_unreachable_server_is_an_english_error_after_the_retries() {
    key_var();
    // A port nobody listens on: bind one, learn it, close it.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let config = OpenAiConfig {
        retry: RetryPolicy {
            max_attempts: 2,
            base_delay: Duration::from_millis(1),
            ..RetryPolicy::default()
        },
        ..OpenAiConfig::new(format!("http://127.0.0.1:{port}/v1"), "m")
    };
    let error = OpenAiProvider::new(config)
        .unwrap()
        .complete(&work_request("hi"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("the provider could not be reached: "),
        "{error}"
    );
}

/// Each calling thread's calls go over connections that thread opened and drives (issue 47): a
/// pooled connection is driven by the runtime that opened it, so sharing one pool between
/// arbiters made a call on one thread wake another twice.
#[test]
fn each_calling_thread_keeps_its_own_connections() {
    key_var();
    let (stub, _runtime) = provider_stub::stub_on_a_thread((0..6).map(|_| answer("ok")).collect());
    let provider = Arc::new(OpenAiProvider::new(config(&stub, false)).unwrap());
    // Two threads, each a runtime that stays up between its calls (as an arbiter does), taking
    // turns: A, B, A, B, A, B.
    let mut callers = Vec::new();
    for _ in 0..2 {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<std::sync::mpsc::Sender<()>>(1);
        let provider = provider.clone();
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                while let Some(done) = rx.recv().await {
                    provider.complete(&work_request("hi")).await.unwrap();
                    done.send(()).unwrap();
                }
            });
        });
        callers.push(tx);
    }
    for _ in 0..3 {
        for caller in &callers {
            let (done, called) = std::sync::mpsc::channel();
            caller.blocking_send(done).unwrap();
            called.recv_timeout(Duration::from_secs(10)).unwrap();
        }
    }
    let peers: Vec<_> = stub.received().iter().map(|r| r.peer).collect();
    assert_eq!(peers.len(), 6);
    // Thread A's calls are the even ones, B's the odd ones: one connection each, not shared.
    assert!(
        peers.iter().step_by(2).all(|peer| *peer == peers[0]),
        "{peers:?}"
    );
    assert!(
        peers
            .iter()
            .skip(1)
            .step_by(2)
            .all(|peer| *peer == peers[1]),
        "{peers:?}"
    );
    assert_ne!(peers[0], peers[1], "{peers:?}");
}
