//! Real models behind `hookline serve` (issue 21 items 4 to 7), against local stub servers of
//! both families: a session picks one of the configured models by name (400 `unknown-model`
//! naming the configured ones otherwise), `/model` switches it from the next call on, usage is
//! summed per session and shown in the status, the turn's answer and
//! `hookline_model_tokens_total`, absent (not zero) for the echo model; text deltas of either
//! family reach SSE and WebSocket clients before the model's stream ends; the keys never come
//! back out.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod provider_stub;
mod serve_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use futures::{SinkExt as _, StreamExt as _};
use hookline::host::gateway::Activity;
use hookline::host::provider::{EchoProvider, Provider, ProviderError};
use hookline::messages::model::{ModelRequest, ModelResponse};
use hookline::providers::{
    AnthropicConfig, AnthropicProvider, KeySource, OpenAiConfig, OpenAiProvider, Routed,
    RoutedModel,
};
use provider_stub::{anthropic_events, Canned, Stub};
use serde_json::{json, Value};
use serve_support::{serve, until_activity, Served, SseReader, DEADLINE};
use tokio_tungstenite::tungstenite::Message;

const OPENAI_KEY: &str = "sk-serve-openai-3c8e1f";
const ANTHROPIC_KEY: &str = "sk-ant-serve-9a2d77";

fn keys() {
    static SET: std::sync::Once = std::sync::Once::new();
    SET.call_once(|| {
        std::env::set_var("HOOKLINE_SERVE_OPENAI_KEY", OPENAI_KEY);
        std::env::set_var("HOOKLINE_SERVE_ANTHROPIC_KEY", ANTHROPIC_KEY);
    });
}

/// `gpt` behind `openai`, `claude` behind `anthropic`; `gpt` the default.
fn models(openai: &Stub, anthropic: &Stub) -> Arc<Routed> {
    models_named(openai, anthropic, "gpt", "claude")
}

/// As [`models`], under other names (the metrics of one test binary are one registry).
fn models_named(openai: &Stub, anthropic: &Stub, gpt_name: &str, claude_name: &str) -> Arc<Routed> {
    keys();
    let gpt = OpenAiProvider::new(OpenAiConfig {
        key: KeySource::Env("HOOKLINE_SERVE_OPENAI_KEY".into()),
        timeout: Duration::from_secs(10),
        ..OpenAiConfig::new(&openai.base_url, "gpt-stub")
    })
    .unwrap();
    let claude = AnthropicProvider::new(AnthropicConfig {
        key: KeySource::Env("HOOKLINE_SERVE_ANTHROPIC_KEY".into()),
        timeout: Duration::from_secs(10),
        ..AnthropicConfig::new(&anthropic.root_url, "claude-stub")
    })
    .unwrap();
    Arc::new(
        Routed::new(
            vec![
                RoutedModel {
                    name: gpt_name.into(),
                    provider: Arc::new(gpt),
                },
                RoutedModel {
                    name: claude_name.into(),
                    provider: Arc::new(claude),
                },
            ],
            gpt_name,
        )
        .unwrap(),
    )
}

fn openai_answer(text: &str) -> Canned {
    Canned::sse(
        &[
            json!({"choices": [{"index": 0, "delta": {"content": text}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}}),
        ],
        7,
    )
}

fn anthropic_answer(text: &str) -> Canned {
    Canned::anthropic_sse(
        &[
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 3, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}}),
            json!({"type": "message_stop"}),
        ],
        9,
    )
}

async fn turn(served: &Served, key: &str, text: &str) -> Value {
    let (status, body) = served
        .post(
            &format!("/v1/sessions/{key}/turns"),
            json!({ "text": text }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn command(served: &Served, key: &str, line: &str) -> (u16, Value) {
    served
        .post(
            &format!("/v1/sessions/{key}/commands"),
            json!({ "command": line }),
        )
        .await
}

fn assert_no_key(text: &str) {
    assert!(!text.contains(OPENAI_KEY), "the OpenAI key leaked: {text}");
    assert!(
        !text.contains(ANTHROPIC_KEY),
        "the Anthropic key leaked: {text}"
    );
}

#[actix_rt::test]
async fn sessions_pick_a_configured_model_switch_with_slash_model_and_sum_their_usage() {
    let openai = Stub::start(vec![openai_answer("from gpt"), openai_answer("gpt again")]).await;
    let anthropic = Stub::start(vec![anthropic_answer("from claude")]).await;
    let served = serve(models(&openai, &anthropic), |_| {}, |_| {}).await;
    let mut seen = String::new();

    // An unknown model: 400 naming the configured ones; nothing opens.
    let (status, body) = served
        .post("/v1/sessions", json!({ "model": "llama" }))
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "unknown-model");
    assert_eq!(
        body["error"]["message"],
        "The model 'llama' is not configured here (configured: gpt, claude)."
    );

    // A session on claude: its calls go to the Anthropic API.
    let (status, opened) = served
        .post("/v1/sessions", json!({ "model": "claude" }))
        .await;
    assert_eq!(status, 201, "{opened}");
    assert_eq!(opened["model"], "claude");
    assert!(opened.get("usage").is_none(), "{opened}");
    let key = opened["key"].as_str().unwrap().to_owned();
    let answer = turn(&served, &key, "hello").await;
    seen.push_str(&answer.to_string());
    assert_eq!(answer["stopReason"], "completed", "{answer}");
    assert_eq!(
        answer["usage"],
        json!({"inputTokens": 3, "outputTokens": 4, "modelCalls": 1})
    );
    assert_eq!(
        (anthropic.received().len(), openai.received().len()),
        (1, 0)
    );
    assert_eq!(anthropic.received()[0].body["model"], "claude-stub");

    // `/model gpt`: the next call goes to the OpenAI API; usage keeps summing.
    let (status, switched) = command(&served, &key, "/model gpt").await;
    assert_eq!(status, 200, "{switched}");
    assert_eq!(switched["session"]["model"], "gpt");
    let answer = turn(&served, &key, "again").await;
    seen.push_str(&answer.to_string());
    assert_eq!(
        answer["usage"],
        json!({"inputTokens": 5, "outputTokens": 2, "modelCalls": 1})
    );
    assert_eq!(
        (anthropic.received().len(), openai.received().len()),
        (1, 1)
    );
    assert_eq!(openai.received()[0].body["model"], "gpt-stub");
    let (_, shown) = served.get(&format!("/v1/sessions/{key}")).await;
    seen.push_str(&shown.to_string());
    let status = &shown["session"];
    assert_eq!(status["model"], "gpt");
    assert_eq!(
        status["usage"],
        json!({"inputTokens": 8, "outputTokens": 6, "modelCalls": 2})
    );

    // `/model` with an unknown name is refused and changes nothing.
    let (status, refused) = command(&served, &key, "/model llama").await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["code"], "unknown-model");
    let (_, shown) = served.get(&format!("/v1/sessions/{key}")).await;
    assert_eq!(shown["session"]["model"], "gpt");

    // A session that asks for nothing runs on the default, and its status says which.
    let (_, plain) = served.post("/v1/sessions", json!({})).await;
    assert_eq!(plain["model"], "gpt");
    let plain_key = plain["key"].as_str().unwrap().to_owned();
    seen.push_str(&turn(&served, &plain_key, "hi").await.to_string());
    assert_eq!(openai.received().len(), 2);

    // The metric counts by model and direction.
    let metrics = metrics_text(&served).await;
    seen.push_str(&metrics);
    let count = |model: &str, direction: &str| tokens(&metrics, model, direction);
    assert_eq!(count("claude", "input"), Some(3.0));
    assert_eq!(count("claude", "output"), Some(4.0));
    assert_eq!(count("gpt", "input"), Some(10.0));
    assert_eq!(count("gpt", "output"), Some(4.0));

    // The keys went to the servers and nowhere else.
    assert_eq!(
        anthropic.received()[0].headers.get("x-api-key").unwrap(),
        ANTHROPIC_KEY
    );
    let (_, list) = served.get("/v1/sessions").await;
    seen.push_str(&list.to_string());
    assert_no_key(&seen);
    served.shutdown().await;
}

/// The server's `/metrics` text.
async fn metrics_text(served: &Served) -> String {
    let response = served.client.get(served.url("/metrics")).send().await;
    response.unwrap().text().await.unwrap()
}

/// `hookline_model_tokens_total{model, direction}` in `metrics`, if counted.
fn tokens(metrics: &str, model: &str, direction: &str) -> Option<f64> {
    metrics
        .lines()
        .find(|l| {
            l.starts_with("hookline_model_tokens_total{")
                && l.contains(&format!("model=\"{model}\""))
                && l.contains(&format!("direction=\"{direction}\""))
        })
        .and_then(|l| l.rsplit(' ').next())
        .map(|n| n.parse::<f64>().unwrap())
}

#[actix_rt::test]
async fn a_compaction_counts_in_the_command_answer_the_status_and_the_metric_of_its_model() {
    let openai = Stub::start(vec![openai_answer("from gpt")]).await;
    let anthropic = Stub::start(vec![
        anthropic_answer("from claude"),
        anthropic_answer("the summary"),
    ])
    .await;
    let models = models_named(&openai, &anthropic, "gpt-compact", "claude-compact");
    let served = serve(models, |_| {}, |_| {}).await;
    let (status, opened) = served
        .post("/v1/sessions", json!({ "model": "claude-compact" }))
        .await;
    assert_eq!(status, 201, "{opened}");
    let key = opened["key"].as_str().unwrap().to_owned();
    turn(&served, &key, "hello").await;

    let (status, compacted) = command(&served, &key, "/compact").await;
    assert_eq!(status, 200, "{compacted}");
    let kinds: Vec<&str> = compacted["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["event"].as_str())
        .collect();
    assert!(kinds.contains(&"compacted"), "{compacted}");
    assert_eq!(anthropic.received().len(), 2);
    // Issue 34: the compaction call's usage is the command's, and the session's.
    assert_eq!(
        compacted["usage"],
        json!({"inputTokens": 3, "outputTokens": 4, "modelCalls": 1})
    );
    assert_eq!(
        compacted["session"]["usage"],
        json!({"inputTokens": 6, "outputTokens": 8, "modelCalls": 2})
    );
    let metrics = metrics_text(&served).await;
    assert_eq!(tokens(&metrics, "claude-compact", "input"), Some(6.0));
    assert_eq!(tokens(&metrics, "claude-compact", "output"), Some(8.0));
    assert_eq!(tokens(&metrics, "gpt-compact", "input"), None);

    // A command that calls no model reports no usage.
    let (_, switched) = command(&served, &key, "/mode plan").await;
    assert!(switched.get("usage").is_none(), "{switched}");

    // The status keeps the usage per model that answered (issue 34 item 5).
    let (status, _) = command(&served, &key, "/model gpt-compact").await;
    assert_eq!(status, 200);
    turn(&served, &key, "and now?").await;
    let (_, shown) = served.get(&format!("/v1/sessions/{key}")).await;
    let gpt = &shown["session"]["usageByModel"]["gpt-compact"];
    assert_eq!(gpt["modelCalls"], 1, "{shown}");
    assert_eq!(
        shown["session"]["usageByModel"]["claude-compact"],
        json!({"inputTokens": 6, "outputTokens": 8, "modelCalls": 2}),
        "{shown}"
    );
    assert_eq!(
        shown["session"]["usage"]["modelCalls"], 3,
        "the totals are the sum of the models': {shown}"
    );
    served.shutdown().await;
}

/// A model that records whether each request it is sent may carry images; answers as the
/// echo model.
struct Sees {
    images: bool,
    accepted: Arc<Mutex<Vec<bool>>>,
}

#[async_trait]
impl Provider for Sees {
    fn takes_images(&self) -> bool {
        self.images
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        self.accepted.lock().unwrap().push(request.accepts_images);
        EchoProvider::new().complete(request).await
    }
}

#[actix_rt::test]
async fn each_routed_model_says_whether_its_requests_may_carry_images() {
    let text = Arc::new(Mutex::new(Vec::new()));
    let vision = Arc::new(Mutex::new(Vec::new()));
    let model = |name: &str, images: bool, accepted: &Arc<Mutex<Vec<bool>>>| RoutedModel {
        name: name.into(),
        provider: Arc::new(Sees {
            images,
            accepted: accepted.clone(),
        }),
    };
    let routed = Routed::new(
        vec![model("text", false, &text), model("vision", true, &vision)],
        "text",
    )
    .unwrap();
    let served = serve(Arc::new(routed), |_| {}, |_| {}).await;
    // SPEC R5.6: a work call on an image-capable model accepts images; the default takes none.
    let (_, opened) = served
        .post("/v1/sessions", json!({ "model": "vision" }))
        .await;
    let key = opened["key"].as_str().unwrap().to_owned();
    turn(&served, &key, "look").await;
    let (_, plain) = served.post("/v1/sessions", json!({})).await;
    let plain = plain["key"].as_str().unwrap().to_owned();
    turn(&served, &plain, "read").await;
    assert_eq!(*vision.lock().unwrap(), [true]);
    assert_eq!(*text.lock().unwrap(), [false]);
    // `/model` moves the session, and its image support with it.
    let (status, _) = command(&served, &plain, "/model vision").await;
    assert_eq!(status, 200);
    turn(&served, &plain, "look now").await;
    assert_eq!(*vision.lock().unwrap(), [true, true]);
    served.shutdown().await;
}

#[actix_rt::test]
async fn the_echo_model_reports_no_usage_rather_than_zero() {
    let served = serve(Arc::new(EchoProvider::new()), |_| {}, |_| {}).await;
    let key = served.open().await;
    let answer = turn(&served, &key, "hello").await;
    assert!(answer.get("usage").is_none(), "{answer}");
    let (_, shown) = served.get(&format!("/v1/sessions/{key}")).await;
    let status = &shown["session"];
    assert!(status.is_object(), "{shown}");
    assert!(status.get("usage").is_none(), "{status}");
    assert!(status["model"].is_null(), "{status}");
    // With nothing configured any name is a label, as before.
    let (status, opened) = served
        .post("/v1/sessions", json!({ "model": "anything" }))
        .await;
    assert_eq!(status, 201, "{opened}");
    served.shutdown().await;
}

/// A stream that sends its first text delta and then stays open (keep-alives) until the client
/// goes away: whatever a client sees of it arrived before the model's stream ended.
fn first_delta_then_hang(anthropic: bool) -> Canned {
    let first = if anthropic {
        anthropic_events(&[
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "First "}}),
        ])
    } else {
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"First \"}}]}\n\n".to_owned()
    };
    Canned::Stream {
        pieces: vec![first],
        hang: true,
    }
}

#[actix_rt::test]
async fn the_first_delta_reaches_sse_and_websocket_clients_before_the_model_stream_ends() {
    let openai = Stub::start(vec![first_delta_then_hang(false)]).await;
    let anthropic = Stub::start(vec![first_delta_then_hang(true)]).await;
    let served = serve(models(&openai, &anthropic), |_| {}, |_| {}).await;

    // SSE, on the Anthropic model.
    let (_, opened) = served
        .post("/v1/sessions", json!({ "model": "claude" }))
        .await;
    let key = opened["key"].as_str().unwrap().to_owned();
    let response = served
        .client
        .post(served.url(&format!("/v1/sessions/{key}/turns")))
        .header("accept", "text/event-stream")
        .json(&json!({ "text": "stream please" }))
        .send()
        .await
        .unwrap();
    let mut events = SseReader::new(response);
    let delta = events.until("model-text").await;
    assert_eq!(delta["delta"], "First ");
    // The model's stream is still open: the delta came before its end.
    assert_eq!(anthropic.left(), 0);
    let (status, _) = command(&served, &key, "/stop").await;
    assert_eq!(status, 200);
    let done = events.until("done").await;
    assert_eq!(done["stopReason"], "cancelled");
    assert!(
        anthropic.client_went_away().await,
        "the request was not closed"
    );

    // WebSocket, on the OpenAI model.
    let (_, opened) = served.post("/v1/sessions", json!({})).await;
    let key = opened["key"].as_str().unwrap().to_owned();
    let (mut socket, _) =
        tokio_tungstenite::connect_async(served.ws(&format!("/v1/sessions/{key}/ws")))
            .await
            .unwrap();
    socket
        .send(Message::text(
            json!({ "type": "turn", "text": "stream please" }).to_string(),
        ))
        .await
        .unwrap();
    let delta = tokio::time::timeout(DEADLINE, async {
        loop {
            let Some(Ok(Message::Text(text))) = socket.next().await else {
                panic!("the socket closed");
            };
            let message: Value = serde_json::from_str(text.as_str()).unwrap();
            if message["type"] == "event" && message["event"]["event"] == "model-text" {
                return message["event"]["delta"].clone();
            }
        }
    })
    .await
    .expect("no delta came");
    assert_eq!(delta, "First ");
    until_activity(&served, &key, Activity::Turn).await;
    let (status, _) = command(&served, &key, "/stop").await;
    assert_eq!(status, 200);
    assert!(
        openai.client_went_away().await,
        "the request was not closed"
    );
    socket.close(None).await.unwrap();
    served.shutdown().await;
}
