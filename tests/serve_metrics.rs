//! `GET /metrics` of a real `hookline serve` (issue 11 item 2) after real turns: each plugin's
//! calls per hook, its skips by reason, the pipeline's calls per hook, latency per plugin and
//! hook, and the queue depths, idle and with a request waiting. A test binary of its own, one test
//! running its servers one after the other: the Prometheus recorder is the process's, so another
//! server's turns would add to the counts checked here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod serve_support;

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use hookline::actors::plugin::{HookError, PluginRegistration, Reply};
use hookline::host::demo::example_plugins;
use hookline::host::gateway::Activity;
use hookline::host::provider::{EchoProvider, Provider, ProviderError};
use hookline::messages::hook::OnUserMessage;
use hookline::messages::model::{ModelRequest, ModelResponse};
use hookline::messages::user::UserMessage;
use serde_json::json;
use serve_support::{serve, serve_plugins, until_activity, Served, DEADLINE};
use tokio::sync::Semaphore;

/// `moody`, loaded last: fails on texts with "fail", panics on texts with "panic", keeps the rest.
fn moody() -> PluginRegistration {
    PluginRegistration::new("moody").on(OnUserMessage, |_, m: &UserMessage| {
        if m.text.contains("panic") {
            panic!("moody panics on purpose");
        }
        if m.text.contains("fail") {
            return Err(HookError::msg("moody fails on purpose."));
        }
        Ok(Reply::Keep)
    })
}

/// The samples of a Prometheus text, by name and sorted labels, and the text (for messages).
struct Scrape(BTreeMap<(String, Vec<(String, String)>), f64>, String);

impl Scrape {
    fn parse(text: &str) -> Self {
        let mut samples = BTreeMap::new();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let (series, value) = line.rsplit_once(' ').unwrap();
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => (name, rest.trim_end_matches('}')),
                None => (series, ""),
            };
            // The label values checked here hold no comma, quote or backslash.
            let mut labels: Vec<(String, String)> = labels
                .split(',')
                .filter(|l| !l.is_empty())
                .map(|l| {
                    let (k, v) = l.split_once('=').unwrap();
                    (k.to_owned(), v.trim_matches('"').to_owned())
                })
                .collect();
            labels.sort();
            samples.insert((name.to_owned(), labels), value.parse().unwrap());
        }
        Self(samples, text.to_owned())
    }

    /// The sample `name{labels}`, if the server exported it.
    fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let mut labels: Vec<(String, String)> = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        labels.sort();
        self.0.get(&(name.to_owned(), labels)).copied()
    }

    /// Every sample of `name` whose labels include `labels`.
    fn matching(&self, name: &str, labels: &[(&str, &str)]) -> Vec<(Vec<(String, String)>, f64)> {
        self.0
            .iter()
            .filter(|((n, ls), _)| {
                n == name
                    && labels
                        .iter()
                        .all(|(k, v)| ls.iter().any(|(lk, lv)| lk == k && lv == v))
            })
            .map(|((_, ls), v)| (ls.clone(), *v))
            .collect()
    }
}

/// Echoes once the test opens its gate: a turn waits in its model call until then.
struct Gated(Arc<Semaphore>);

#[async_trait]
impl Provider for Gated {
    fn takes_images(&self) -> bool {
        false
    }
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        let _open = self.0.acquire().await;
        EchoProvider::new().complete(request).await
    }
}

async fn scrape(served: &Served) -> Scrape {
    let response = served
        .client
        .get(served.url("/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    Scrape::parse(&response.text().await.unwrap())
}

/// Runs a turn on a task of its own; resolves to its status.
fn spawn_turn(served: &Served, key: &str, text: &str) -> tokio::task::JoinHandle<u16> {
    let request = served
        .client
        .post(served.url(&format!("/v1/sessions/{key}/turns")))
        .json(&json!({ "text": text }));
    tokio::spawn(async move { request.send().await.unwrap().status().as_u16() })
}

#[actix_rt::test]
async fn metrics_count_calls_and_skips_per_plugin_and_hook_and_the_queues_after_real_turns() {
    calls_and_skips_per_plugin_and_hook().await;
    a_request_behind_a_running_turn_shows_in_the_inbox_gauges().await;
}

/// Two turns of one session: the second waits in the session's inbox while the first is in its
/// model call, and the inbox gauges say so; once both ran, nothing waits.
async fn a_request_behind_a_running_turn_shows_in_the_inbox_gauges() {
    let gate = Arc::new(Semaphore::new(0));
    let served = serve(Arc::new(Gated(gate.clone())), |_| {}, |_| {}).await;
    let key = served.open().await;
    let first = spawn_turn(&served, &key, "first");
    until_activity(&served, &key, Activity::Turn).await;
    let second = spawn_turn(&served, &key, "second");
    let waiting = tokio::time::timeout(DEADLINE, async {
        loop {
            let now = scrape(&served).await;
            if now.get("hookline_session_requests_queued", &[]) == Some(1.0) {
                return now;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the second turn never showed as queued");
    assert_eq!(
        waiting.get("hookline_session_inbox_deepest", &[]),
        Some(1.0)
    );
    assert_eq!(waiting.get("hookline_sessions_in_turn", &[]), Some(1.0));
    gate.add_permits(2);
    for turn in [first, second] {
        let status = tokio::time::timeout(DEADLINE, turn).await.unwrap().unwrap();
        assert_eq!(status, 200);
    }
    let idle = scrape(&served).await;
    assert_eq!(idle.get("hookline_session_requests_queued", &[]), Some(0.0));
    assert_eq!(idle.get("hookline_session_inbox_deepest", &[]), Some(0.0));
    served.shutdown().await;
}

/// Four turns through the demo plugins and `moody`: every count is exact.
async fn calls_and_skips_per_plugin_and_hook() {
    let mut plugins = example_plugins();
    plugins.push(moody());
    let served = serve_plugins(plugins, Arc::new(EchoProvider::new()), |_| {}, |_| {}).await;
    let key = served.open().await;
    let texts = ["hello", "please fail", "panic now", "fail again"];
    for text in texts {
        let (status, body) = served
            .post(
                &format!("/v1/sessions/{key}/turns"),
                json!({ "text": text }),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["stopReason"], "completed", "{body}");
    }
    let scrape = scrape(&served).await;
    let text = &scrape.1;
    let turns = texts.len() as f64;
    let calls = |plugin, hook| {
        scrape.get(
            "hookline_plugin_hook_calls_total",
            &[("plugin", plugin), ("hook", hook)],
        )
    };
    let skips = |plugin, hook, reason| {
        scrape.get(
            "hookline_hook_skips_total",
            &[("plugin", plugin), ("hook", hook), ("reason", reason)],
        )
    };

    // One on_user_message call a turn, through every plugin that implements it (SPEC P1.1).
    let pipeline = |hook| scrape.get("hookline_hook_calls_total", &[("hook", hook)]);
    assert_eq!(pipeline("on_user_message"), Some(turns), "{text}");
    for plugin in ["house-style", "flaky", "moody"] {
        assert_eq!(
            calls(plugin, "on_user_message"),
            Some(turns),
            "{plugin}: {text}"
        );
    }
    // A skipped call is a call the plugin handled, counted under its reason (SPEC P1.4).
    assert_eq!(skips("flaky", "on_user_message", "failed"), Some(turns));
    assert_eq!(skips("moody", "on_user_message", "failed"), Some(2.0));
    assert_eq!(skips("moody", "on_user_message", "panicked"), Some(1.0));
    assert!(
        scrape
            .matching("hookline_hook_skips_total", &[("plugin", "house-style")])
            .is_empty(),
        "house-style never failed: {text}"
    );
    // Only house-style implements on_prompt: its calls are the pipeline's.
    let prompts = pipeline("on_prompt").expect("on_prompt ran");
    assert!(prompts >= turns, "{text}");
    assert_eq!(calls("house-style", "on_prompt"), Some(prompts));
    // A plugin's counters exist for its own hooks only: flaky implements on_user_message alone.
    let flaky = scrape.matching("hookline_plugin_hook_calls_total", &[("plugin", "flaky")]);
    assert_eq!(flaky.len(), 1, "{flaky:?}");
    assert_eq!(
        calls("guard", "on_tool_call"),
        Some(0.0),
        "registered, never called"
    );
    // Latency per plugin and hook: at least the first batch is timed.
    let timed = scrape
        .get(
            "hookline_hook_seconds_count",
            &[("hook", "on_user_message"), ("plugin", "moody")],
        )
        .expect("moody's latency");
    assert!((1.0..=turns).contains(&timed), "{timed}");
    // Latency series exist for a plugin's own hooks only (issue 46 item 8): flaky implements
    // on_user_message alone, so it has no on_prompt, on_tool_call, ... series.
    let flaky_timed = scrape.matching("hookline_hook_seconds_count", &[("plugin", "flaky")]);
    assert_eq!(flaky_timed.len(), 1, "{flaky_timed:?}");
    assert!(
        scrape
            .get(
                "hookline_hook_seconds_count",
                &[("hook", "on_tool_call"), ("plugin", "house-style")]
            )
            .is_none(),
        "house-style does not implement on_tool_call: {text}"
    );

    // The queues, idle after the turns: nothing waits anywhere.
    assert_eq!(
        scrape.get("hookline_session_requests_queued", &[]),
        Some(0.0)
    );
    assert_eq!(scrape.get("hookline_session_inbox_deepest", &[]), Some(0.0));
    assert_eq!(
        scrape.get("hookline_session_inbox_capacity", &[]),
        Some(16.0)
    );
    assert_eq!(
        scrape.get("hookline_pipeline_calls_admitted", &[]),
        Some(0.0)
    );
    let bound = scrape.get("hookline_pipeline_calls_bound", &[]).unwrap();
    assert_eq!(
        bound % 16_384.0,
        0.0,
        "a multiple of the per-shard bound: {bound}"
    );
    assert_eq!(scrape.get("hookline_event_queue_depth", &[]), Some(0.0));
    assert_eq!(
        scrape.get("hookline_event_queue_capacity", &[]),
        Some(1024.0)
    );
    assert_eq!(scrape.get("hookline_sessions_open", &[]), Some(1.0));
    served.shutdown().await;
}
