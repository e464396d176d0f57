//! The load driver of `hookline load` and `benches/serve.rs` (issue 11 item 5): opens sessions on
//! a running `hookline serve` over real HTTP on loopback, runs turns in every session at once
//! (each session's turns one after another, over HTTP or a WebSocket per session), and measures
//! turns/s, hook calls/s (from `/metrics` before and after), turn latency and errors; and, for
//! long conversations (issue 22), the mean time and answer size of turns 51-100 and of the last
//! 50 turns, and the server's resident memory per session.
//!
//! With [`LoadOptions::stub_url`] the model stub the server calls is then asked directly, as
//! many requests at the same concurrency, each carrying the conversation so far as the server's
//! do, and the report says what a served turn adds over it, and beside the turn windows the
//! stub's own time for the same turns (issue 47 items 3 and 4).
//!
//! With [`LoadOptions::idempotency`] every turn carries a key of its own (`Idempotency-Key` over
//! HTTP, `key` on a WebSocket), to measure what keys cost (issue 34 item 3).
//!
//! Bounded: each request has a timeout; sessions are opened at most [`OPENING`] at a time.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::{SinkExt as _, StreamExt as _};
use hdrhistogram::Histogram;
use serde::Serialize;
use tokio_tungstenite::tungstenite::client::IntoClientRequest as _;
use tokio_tungstenite::tungstenite::Message;

/// Sessions being opened at once.
pub const OPENING: usize = 64;

/// How one request may take at most.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// How turns travel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    /// `POST /v1/sessions/{id}/turns`, one JSON answer each.
    #[default]
    Http,
    /// One WebSocket per session, `{"type":"turn"}` and its `done`.
    Ws,
}

/// What to run.
#[derive(Clone, Debug)]
pub struct LoadOptions {
    /// The server, `http://127.0.0.1:7878`.
    pub url: String,
    /// Sessions opened and driven at once.
    pub sessions: usize,
    /// Turns per session.
    pub turns: usize,
    /// How turns travel.
    pub transport: Transport,
    /// The bearer token, if the server needs one.
    pub token: Option<String>,
    /// Leave the sessions open at the end (to measure a server holding them).
    pub keep: bool,
    /// Send every turn with an idempotency key of its own: this prefix, then `-<session>-<turn>`
    /// (session and turn counted from 0). `None`: turns without keys.
    pub idempotency: Option<String>,
    /// The model the server answers with, when it is a stub one can ask directly (an
    /// OpenAI-compatible base URL, `http://127.0.0.1:8765/v1`, as `scripts/stub-model.py`
    /// prints): after the served turns, the same number of requests go straight to it at the
    /// same concurrency, each with its conversation so far, so the report says what the server
    /// adds over its model (issue 47).
    pub stub_url: Option<String>,
}

impl LoadOptions {
    /// `sessions` x `turns` against the server at `url`, over HTTP, with no credential, no
    /// idempotency keys and no stub; the sessions are closed at the end. Set the other fields
    /// with struct update syntax (`LoadOptions { keep: true, ..LoadOptions::new(url, 2, 3) }`).
    pub fn new(url: impl Into<String>, sessions: usize, turns: usize) -> Self {
        Self {
            url: url.into(),
            sessions,
            turns,
            transport: Transport::Http,
            token: None,
            keep: false,
            idempotency: None,
            stub_url: None,
        }
    }

    /// The key of turn `turn` of session number `session`, when turns carry keys.
    pub fn turn_key(&self, session: usize, turn: usize) -> Option<String> {
        self.idempotency
            .as_ref()
            .map(|prefix| format!("{prefix}-{session}-{turn}"))
    }
}

/// A key prefix no earlier run used: the time and this process, in hex.
pub fn fresh_key_prefix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("load-{nanos:x}-{:x}", std::process::id())
}

/// The text of turn `turn` of session number `session` (what a repeat with its key must send).
pub fn turn_text(session: usize, turn: usize) -> String {
    format!("load {session} turn {turn}")
}

/// What a run measured.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadReport {
    /// Sessions opened.
    pub sessions: usize,
    /// Turns answered with a stop reason.
    pub turns: u64,
    /// Refused or failed requests, by error code (or `transport` for a connection failure).
    pub errors: BTreeMap<String, u64>,
    /// Wall time of the turns, from the first to the last.
    pub seconds: f64,
    /// Turns per second.
    pub turns_per_second: f64,
    /// Hook calls per second, from the server's `hookline_hook_calls_total`.
    pub hook_calls_per_second: f64,
    /// Median turn latency, milliseconds.
    pub p50_ms: f64,
    /// 99th percentile turn latency, milliseconds.
    pub p99_ms: f64,
    /// The server's resident memory after the run, when it reports it.
    pub server_resident_bytes: Option<u64>,
    /// What the server's resident memory grew by from before the sessions opened to the end of
    /// the run, per session, when it reports it.
    pub resident_bytes_per_session: Option<u64>,
    /// Turns 51-100 of every session (when each runs at least 100).
    pub early: Option<TurnWindow>,
    /// The last 50 turns of every session (when each runs at least 100).
    pub last: Option<TurnWindow>,
    /// The model stub asked directly in the same run ([`LoadOptions::stub_url`]).
    pub stub: Option<StubReport>,
    /// What a served turn adds over the stub's own answer to a request as long at the median:
    /// `p50_ms` less the stub's p50 (one turn is one model call with no plugin asking for
    /// more).
    pub overhead_p50_ms: Option<f64>,
    /// Whether the credential may not read `/metrics` (it is for admins): hook calls/s and
    /// resident memory are then unknown (0 and absent).
    pub metrics_refused: bool,
}

/// The model stub asked directly, each of `sessions` clients sending `turns` chat completions
/// one after another on a kept-alive connection, as the served turns were sent, each carrying
/// its client's conversation so far as the server's requests carry the session's history (not
/// the server's system text or tool definitions), and asking for a streamed answer as the
/// server does.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StubReport {
    /// The stub's base URL.
    pub url: String,
    /// Requests answered with a 2xx.
    pub requests: u64,
    /// Requests that failed or were refused.
    pub errors: u64,
    /// Answered requests per second.
    pub requests_per_second: f64,
    /// Median latency, milliseconds.
    pub p50_ms: f64,
    /// 99th percentile latency, milliseconds.
    pub p99_ms: f64,
    /// The stub's requests of turns 51-100, when each conversation has at least 100 turns: what
    /// [`LoadReport::early`] is beside.
    pub early: Option<TurnWindow>,
    /// The stub's requests of the last 50 turns: what [`LoadReport::last`] is beside.
    pub last: Option<TurnWindow>,
}

/// The mean cost of a range of turns (by their number within a session), over every session.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnWindow {
    /// The first turn, counting from 1.
    pub first: usize,
    /// The last turn, counting from 1.
    pub last: usize,
    /// Mean time per turn as the client saw it, milliseconds.
    pub mean_ms: f64,
    /// Median time per turn as the client saw it, milliseconds: steadier than the mean on a
    /// shared machine, where a few preempted turns move a 50-turn mean (issue 47 compares turn
    /// windows by it).
    pub p50_ms: f64,
    /// Mean answer size, bytes (the JSON answer; on a WebSocket every message of the turn).
    pub mean_answer_bytes: f64,
}

/// The window size of [`LoadReport::early`] and [`LoadReport::last`].
pub const WINDOW: usize = 50;

/// Each session's time and answer size per turn number (a run holds sessions x turns pairs:
/// a million turns take 16 MB).
#[derive(Clone, Debug, Default)]
struct PerTurn {
    micros: Vec<Vec<u64>>,
    bytes: Vec<u64>,
}

impl PerTurn {
    fn new(turns: usize) -> Self {
        Self {
            micros: vec![Vec::new(); turns],
            bytes: vec![0; turns],
        }
    }

    fn record(&mut self, turn: usize, micros: u64, bytes: u64) {
        if let Some(times) = self.micros.get_mut(turn) {
            times.push(micros);
            self.bytes[turn] += bytes;
        }
    }

    /// The mean over turns `first..first + WINDOW` (0-based), if each of them was answered.
    fn window(&self, first: usize) -> Option<TurnWindow> {
        let range = first..first + WINDOW;
        let mut times: Vec<u64> = self.micros.get(range.clone())?.concat();
        if times.is_empty() {
            return None;
        }
        times.sort_unstable();
        let count = times.len() as f64;
        let micros: u64 = times.iter().sum();
        let bytes: u64 = self.bytes[range].iter().sum();
        Some(TurnWindow {
            first: first + 1,
            last: first + WINDOW,
            mean_ms: micros as f64 / count / 1000.0,
            p50_ms: times[times.len() / 2] as f64 / 1000.0,
            mean_answer_bytes: bytes as f64 / count,
        })
    }

    /// Turns 51-100 and the last 50, when there are at least 100 turns.
    fn windows(&self) -> (Option<TurnWindow>, Option<TurnWindow>) {
        let turns = self.micros.len();
        if turns < 2 * WINDOW {
            return (None, None);
        }
        (self.window(WINDOW), self.window(turns - WINDOW))
    }
}

impl LoadReport {
    /// Errors in all.
    pub fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(reqwest::Error),
    /// The latency histogram could not be made.
    #[error("cannot make the latency histogram: {0}")]
    Histogram(String),
    /// The server's metrics could not be read.
    #[error("cannot read {url}/metrics: {source}")]
    Metrics {
        /// The server.
        url: String,
        /// Why.
        source: reqwest::Error,
    },
}

/// Reports progress: turns done of all.
pub trait LoadProgress: Send + Sync {
    /// `done` of `total` turns have finished.
    fn turns(&self, done: u64, total: u64);
}

impl LoadProgress for () {
    fn turns(&self, _: u64, _: u64) {}
}

struct Shared {
    http: reqwest::Client,
    options: LoadOptions,
    latencies: Mutex<Histogram<u64>>,
    per_turn: Mutex<PerTurn>,
    errors: Mutex<BTreeMap<String, u64>>,
    done: AtomicU64,
    progress: Arc<dyn LoadProgress>,
}

impl Shared {
    fn error(&self, code: impl Into<String>) {
        *self
            .errors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(code.into())
            .or_default() += 1;
    }

    /// Turn number `turn` (0-based) of a session took `took` and answered `bytes` bytes.
    fn turn(&self, turn: usize, took: Duration, bytes: usize) {
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.per_turn
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .record(turn, micros, bytes as u64);
        let _ = self
            .latencies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .record(micros.max(1));
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let total = (self.options.sessions * self.options.turns) as u64;
        self.progress.turns(done, total);
    }

    fn request(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.options.token {
            Some(token) => builder.bearer_auth(token),
            None => builder,
        }
    }
}

/// Runs the load.
///
/// # Errors
/// [`LoadError`] when the client cannot be built or `/metrics` cannot be read; refused turns are
/// counted in the report, not returned.
pub async fn run(
    options: LoadOptions,
    progress: Arc<dyn LoadProgress>,
) -> Result<LoadReport, LoadError> {
    let http = client()?;
    let url = options.url.trim_end_matches('/').to_owned();
    let shared = Arc::new(Shared {
        http,
        options: LoadOptions {
            url: url.clone(),
            ..options
        },
        latencies: Mutex::new(Histogram::new(3).map_err(|e| LoadError::Histogram(e.to_string()))?),
        per_turn: Mutex::new(PerTurn::new(options.turns)),
        errors: Mutex::default(),
        done: AtomicU64::new(0),
        progress,
    });
    let empty = metrics(&shared).await?;
    let opened = open_sessions(&shared).await?;
    let before = metrics(&shared).await?;
    let started = Instant::now();
    let keys: Vec<String> = opened.iter().map(|(key, _)| key.clone()).collect();
    let runs = opened.into_iter().enumerate().map(|(i, (key, http))| {
        let shared = shared.clone();
        tokio::spawn(async move {
            match shared.options.transport {
                Transport::Http => http_turns(&shared, &http, i, &key).await,
                Transport::Ws => ws_turns(&shared, i, &key).await,
            }
        })
    });
    for run in futures::future::join_all(runs).await {
        if run.is_err() {
            shared.error("client-panic");
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let after = metrics(&shared).await?;
    if !shared.options.keep {
        close_sessions(&shared, &keys).await;
    }
    let turns = shared.done.load(Ordering::Relaxed);
    let latencies = shared
        .latencies
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let errors = shared
        .errors
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let per_second = |n: f64| if seconds > 0.0 { n / seconds } else { 0.0 };
    let (early, last) = shared
        .per_turn
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .windows();
    let stub = match &shared.options.stub_url {
        Some(url) => Some(stub_run(&shared, url).await?),
        None => None,
    };
    let p50_ms = latencies.value_at_quantile(0.5) as f64 / 1000.0;
    let metrics_refused = after.is_none();
    let (empty, before, after) = (
        empty.unwrap_or_default(),
        before.unwrap_or_default(),
        after.unwrap_or_default(),
    );
    let resident_bytes_per_session = match (empty.resident_bytes, after.resident_bytes) {
        (Some(empty), Some(after)) if !keys.is_empty() => {
            Some(after.saturating_sub(empty) / keys.len() as u64)
        }
        _ => None,
    };
    Ok(LoadReport {
        sessions: keys.len(),
        turns,
        errors,
        seconds,
        turns_per_second: per_second(turns as f64),
        hook_calls_per_second: per_second((after.hook_calls - before.hook_calls).max(0.0)),
        p50_ms,
        p99_ms: latencies.value_at_quantile(0.99) as f64 / 1000.0,
        server_resident_bytes: after.resident_bytes,
        resident_bytes_per_session,
        early,
        last,
        overhead_p50_ms: stub.as_ref().map(|stub| p50_ms - stub.p50_ms),
        stub,
        metrics_refused,
    })
}

/// Asks the stub directly: as many clients as sessions, each holding a conversation of as many
/// turns as a session had, one request after another. Each request carries the conversation so
/// far (every earlier user message and the stub's answer to it, then the new one), as the
/// server's request to its model does: the stub's time grows with the history, and a served
/// turn is compared with the stub answering a request of its length, not a one-message one.
async fn stub_run(shared: &Arc<Shared>, url: &str) -> Result<StubReport, LoadError> {
    let endpoint = format!("{}/chat/completions", url.trim_end_matches('/'));
    let latencies = Arc::new(Mutex::new(
        Histogram::<u64>::new(3).map_err(|e| LoadError::Histogram(e.to_string()))?,
    ));
    let per_turn = Arc::new(Mutex::new(PerTurn::new(shared.options.turns)));
    let errors = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let runs = (0..shared.options.sessions).map(|i| {
        let (http, endpoint) = (shared.http.clone(), endpoint.clone());
        let (latencies, per_turn, errors) = (latencies.clone(), per_turn.clone(), errors.clone());
        let turns = shared.options.turns;
        tokio::spawn(async move {
            let mut messages = Vec::with_capacity(2 * turns);
            for turn in 0..turns {
                messages.push(StubMessage {
                    role: "user",
                    content: turn_text(i, turn),
                });
                // Encoded before the clock starts: the served turn's client sends a short text,
                // and its server's encoding of the history is in the served turn's time.
                let request = http.post(&endpoint).json(&StubRequest::streamed(&messages));
                let sent = Instant::now();
                let answer = match request.send().await {
                    Ok(response) if response.status().is_success() => response.bytes().await.ok(),
                    _ => None,
                };
                let Some(answer) = answer else {
                    errors.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                let micros = u64::try_from(sent.elapsed().as_micros()).unwrap_or(u64::MAX);
                per_turn
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .record(turn, micros, answer.len() as u64);
                let _ = latencies
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .record(micros.max(1));
                if let Some(content) = answer_text(&answer) {
                    messages.push(StubMessage {
                        role: "assistant",
                        content,
                    });
                }
            }
        })
    });
    for run in futures::future::join_all(runs).await {
        if run.is_err() {
            errors.fetch_add(1, Ordering::Relaxed);
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let latencies = latencies
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let (early, last) = per_turn
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .windows();
    let requests = latencies.len();
    Ok(StubReport {
        url: url.to_owned(),
        requests,
        errors: errors.load(Ordering::Relaxed),
        requests_per_second: if seconds > 0.0 {
            requests as f64 / seconds
        } else {
            0.0
        },
        p50_ms: latencies.value_at_quantile(0.5) as f64 / 1000.0,
        p99_ms: latencies.value_at_quantile(0.99) as f64 / 1000.0,
        early,
        last,
    })
}

/// A chat completion as the server asks its model for one: the conversation so far, streamed.
#[derive(Serialize)]
struct StubRequest<'a> {
    model: &'static str,
    messages: &'a [StubMessage],
    stream: bool,
    stream_options: StreamOptions,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// One message of a stub conversation.
#[derive(Serialize)]
struct StubMessage {
    role: &'static str,
    content: String,
}

impl<'a> StubRequest<'a> {
    fn streamed(messages: &'a [StubMessage]) -> Self {
        Self {
            model: "stub",
            messages,
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
        }
    }
}

/// The text of an OpenAI-compatible chat completion's first choice, if it has one: from a
/// streamed answer (`data:` lines, each a chunk whose delta carries a part of it) or, from a
/// stub that answers whole whatever it is asked, from its message.
fn answer_text(answer: &[u8]) -> Option<String> {
    if let Ok(whole) = serde_json::from_slice::<serde_json::Value>(answer) {
        return whole
            .pointer("/choices/0/message/content")?
            .as_str()
            .map(str::to_owned);
    }
    let text = std::str::from_utf8(answer).ok()?;
    let parts: Vec<String> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<serde_json::Value>(data.trim()).ok())
        .filter_map(|chunk| {
            let part = chunk.pointer("/choices/0/delta/content")?;
            part.as_str().map(str::to_owned)
        })
        .collect();
    (!parts.is_empty()).then(|| parts.concat())
}

/// An HTTP client of the load's own: one for `/metrics`, the stub and the closes, and one per
/// session.
fn client() -> Result<reqwest::Client, LoadError> {
    reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(LoadError::Client)
}

/// Opens the sessions, each with a client of its own that opened it and sends its turns: one
/// kept-alive connection per session, as an agent's client holds one (a server may run a
/// session on the thread that accepted its connection: docs/serve.md).
async fn open_sessions(shared: &Arc<Shared>) -> Result<Vec<(String, reqwest::Client)>, LoadError> {
    let clients = (0..shared.options.sessions)
        .map(|_| client())
        .collect::<Result<Vec<_>, _>>()?;
    let opens = futures::stream::iter(clients)
        .map(|http| {
            let shared = shared.clone();
            async move {
                let request = shared
                    .request(http.post(format!("{}/v1/sessions", shared.options.url)))
                    .json(&serde_json::json!({}));
                match answer(request).await {
                    Ok(body) => body["key"].as_str().map(|key| (key.to_owned(), http)),
                    Err(code) => {
                        shared.error(format!("open:{code}"));
                        None
                    }
                }
            }
        })
        .buffer_unordered(OPENING);
    Ok(opens.filter_map(|opened| async { opened }).collect().await)
}

async fn close_sessions(shared: &Arc<Shared>, keys: &[String]) {
    futures::stream::iter(keys)
        .for_each_concurrent(OPENING, |key| {
            let shared = shared.clone();
            async move {
                let request = shared.request(
                    shared
                        .http
                        .delete(format!("{}/v1/sessions/{key}", shared.options.url)),
                );
                if let Err(code) = answer(request).await {
                    shared.error(format!("close:{code}"));
                }
            }
        })
        .await;
}

/// The JSON answer of a 2xx, or the error code of anything else.
async fn answer(request: reqwest::RequestBuilder) -> Result<serde_json::Value, String> {
    sized_answer(request).await.map(|(body, _)| body)
}

/// As [`answer`], with the answer's size in bytes.
async fn sized_answer(
    request: reqwest::RequestBuilder,
) -> Result<(serde_json::Value, usize), String> {
    let response = request.send().await.map_err(|_| "transport".to_owned())?;
    let ok = response.status().is_success();
    let bytes = response.bytes().await.map_err(|_| "transport".to_owned())?;
    let body: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|_| "bad-answer".to_owned())?;
    if ok {
        Ok((body, bytes.len()))
    } else {
        Err(body["error"]["code"]
            .as_str()
            .unwrap_or("unknown")
            .to_owned())
    }
}

async fn http_turns(shared: &Shared, http: &reqwest::Client, i: usize, key: &str) {
    let url = format!("{}/v1/sessions/{key}/turns", shared.options.url);
    for turn in 0..shared.options.turns {
        let started = Instant::now();
        let mut request = shared
            .request(http.post(&url))
            .json(&serde_json::json!({ "text": turn_text(i, turn) }));
        if let Some(key) = shared.options.turn_key(i, turn) {
            request = request.header("idempotency-key", key);
        }
        match sized_answer(request).await {
            Ok((_, bytes)) => shared.turn(turn, started.elapsed(), bytes),
            Err(code) => shared.error(code),
        }
    }
}

async fn ws_turns(shared: &Shared, i: usize, key: &str) {
    let url = format!(
        "{}/v1/sessions/{key}/ws",
        shared.options.url.replacen("http", "ws", 1)
    );
    let Ok(mut request) = url.into_client_request() else {
        shared.error("transport");
        return;
    };
    if let Some(token) = &shared.options.token {
        if let Ok(value) = format!("Bearer {token}").parse() {
            request.headers_mut().insert("authorization", value);
        }
    }
    let Ok((mut socket, _)) = tokio_tungstenite::connect_async(request).await else {
        shared.error("transport");
        return;
    };
    for turn in 0..shared.options.turns {
        let started = Instant::now();
        let mut message = serde_json::json!({ "type": "turn", "text": turn_text(i, turn) });
        if let Some(key) = shared.options.turn_key(i, turn) {
            message["key"] = key.into();
        }
        if socket
            .send(Message::text(message.to_string()))
            .await
            .is_err()
        {
            shared.error("transport");
            return;
        }
        // The session's events come first; the turn's answer ends it.
        let mut bytes = 0;
        loop {
            let next = tokio::time::timeout(REQUEST_TIMEOUT, socket.next()).await;
            let Ok(Some(Ok(Message::Text(text)))) = next else {
                if matches!(next, Ok(Some(Ok(_)))) {
                    continue;
                }
                shared.error("transport");
                return;
            };
            bytes += text.len();
            let Ok(reply) = serde_json::from_str::<serde_json::Value>(text.as_str()) else {
                continue;
            };
            match (reply["type"].as_str(), reply["request"].as_str()) {
                (Some("done"), Some("turn")) => {
                    shared.turn(turn, started.elapsed(), bytes);
                    break;
                }
                (Some("error"), _) => {
                    shared.error(reply["error"]["code"].as_str().unwrap_or("unknown"));
                    break;
                }
                _ => {}
            }
        }
    }
    let _ = socket.close(None).await;
}

/// What `/metrics` says.
#[derive(Default)]
struct Scrape {
    hook_calls: f64,
    resident_bytes: Option<u64>,
}

/// The server's metrics; `None` when the credential may not read them (a client's or an
/// operator's API key or JWT: `/metrics` is for admins), so the load still runs.
async fn metrics(shared: &Shared) -> Result<Option<Scrape>, LoadError> {
    let url = shared.options.url.clone();
    let response = shared
        .request(shared.http.get(format!("{url}/metrics")))
        .send()
        .await
        .map_err(|source| LoadError::Metrics {
            url: url.clone(),
            source,
        })?;
    if response.status() == reqwest::StatusCode::FORBIDDEN {
        return Ok(None);
    }
    let text = response
        .error_for_status()
        .map_err(|source| LoadError::Metrics {
            url: url.clone(),
            source,
        })?
        .text()
        .await
        .map_err(|source| LoadError::Metrics { url, source })?;
    Ok(Some(parse_scrape(&text)))
}

fn parse_scrape(text: &str) -> Scrape {
    let value = |line: &str| {
        line.rsplit(' ')
            .next()
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let mut scrape = Scrape {
        hook_calls: 0.0,
        resident_bytes: None,
    };
    for line in text.lines() {
        if line.starts_with("hookline_hook_calls_total") {
            scrape.hook_calls += value(line);
        } else if line.starts_with("hookline_process_resident_bytes ") {
            scrape.resident_bytes = Some(value(line) as u64);
        }
    }
    scrape
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answers_text_is_read_streamed_or_whole() {
        let streamed = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"o\"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"k\"}}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1}}\n\n",
            "data: [DONE]\n\n",
        );
        assert_eq!(answer_text(streamed.as_bytes()).as_deref(), Some("ok"));
        let whole = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"}}]}"#;
        assert_eq!(answer_text(whole.as_bytes()).as_deref(), Some("ok"));
        assert_eq!(answer_text(b"data: [DONE]\n\n"), None);
        assert_eq!(answer_text(b"<html>busy</html>"), None);
    }

    #[test]
    fn keyed_turns_get_a_key_each_and_plain_ones_none() {
        let mut options = LoadOptions::new("", 2, 2);
        assert_eq!(options.turn_key(0, 0), None);
        options.idempotency = Some("p".into());
        assert_eq!(options.turn_key(1, 0).as_deref(), Some("p-1-0"));
        assert_ne!(options.turn_key(0, 1), options.turn_key(1, 0));
        assert_ne!(fresh_key_prefix(), "");
    }

    #[test]
    fn a_scrape_sums_hook_calls_over_labels() {
        let text = "# TYPE hookline_hook_calls_total counter\n\
                    hookline_hook_calls_total{hook=\"on_prompt\"} 3\n\
                    hookline_hook_calls_total{hook=\"on_user_message\"} 4\n\
                    hookline_process_resident_bytes 1048576\n";
        let scrape = parse_scrape(text);
        assert!((scrape.hook_calls - 7.0).abs() < f64::EPSILON);
        assert_eq!(scrape.resident_bytes, Some(1_048_576));
    }

    #[test]
    fn windows_are_turns_51_to_100_and_the_last_50() {
        let mut per_turn = PerTurn::new(300);
        for turn in 0..300 {
            // Two sessions: turn n costs n ms and n * 10 bytes in one, twice that in the other.
            per_turn.record(turn, turn as u64 * 1000, turn as u64 * 10);
            per_turn.record(turn, turn as u64 * 2000, turn as u64 * 20);
        }
        let (Some(early), Some(last)) = per_turn.windows() else {
            panic!("300 turns have turns 51-100 and a last 50");
        };
        assert_eq!((early.first, early.last), (51, 100));
        assert_eq!((last.first, last.last), (251, 300));
        // Turns 51-100 are numbers 50..100 (0-based): mean 74.5, times 1.5 over both sessions.
        assert!((early.mean_ms - 74.5 * 1.5).abs() < 1e-9);
        // The median of the 100 samples 50..100 ms and 100..200 ms: the 51st smallest, 100 ms.
        assert!((early.p50_ms - 100.0).abs() < 1e-9, "{}", early.p50_ms);
        assert!((last.mean_answer_bytes - 274.5 * 15.0).abs() < 1e-9);
        assert_eq!(PerTurn::new(99).windows(), (None, None));
    }
}
