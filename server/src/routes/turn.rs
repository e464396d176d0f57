//! The turn route: `POST /v1/sessions/{id}/turns`, answered as one JSON document or as the
//! turn's events over server-sent events (with `lagged` and a `done` that carries the events a
//! lagging stream missed), and a stored answer replayed for a repeated idempotency key.

use crate::openapi::errors::{
    BadKeyedBody, Internal, KeyBusy, KeyReused, Moved, NotJson, NotOpen, SessionEnded, TimedOut,
    TooLarge, TurnMoved, TurnRefused, Unauthorized, Unavailable,
};
use std::convert::Infallible;
use std::time::Instant;

use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures::stream::{self, Stream};
use futures::{FutureExt as _, StreamExt as _};
use hookline_messages::prompt::PromptMode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;
use utoipa::IntoParams;

use super::answers::{TurnAnswer, TurnDone};
use super::idempotency::{
    claim, digest, once, replay_json, replayed, Answer, Claim, IdempotencyHeader,
};
use super::sessions::{session, Body};
use crate::auth::Caller;
use crate::metrics::{model_tokens, turn_finished};
use crate::{ApiError, AppState};
use hookline_host::gateway::{SessionHandle, TurnReport};
use hookline_host::state::{Detail, HostEvent};
use hookline_host::turn::UserInput;

/// `POST /v1/sessions/{id}/turns` body.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TurnBody {
    /// What the user says.
    pub(crate) text: String,
    /// `work` when absent.
    pub(crate) mode: Option<TurnMode>,
}

/// The modes a user turn can have (the host's other prompt modes are its own: a side question,
/// compaction); any other is refused as the body is read (400 `bad-json`).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum TurnMode {
    /// An ordinary working turn.
    #[default]
    Work,
    /// A planning turn.
    Plan,
}

impl From<TurnMode> for PromptMode {
    fn from(mode: TurnMode) -> Self {
        match mode {
            TurnMode::Work => Self::Work,
            TurnMode::Plan => Self::Plan,
        }
    }
}

impl TurnBody {
    /// The user input.
    pub(crate) fn input(self) -> UserInput {
        UserInput {
            mode: self.mode.unwrap_or_default().into(),
            ..UserInput::work(self.text)
        }
    }
}

/// The JSON answer to a finished turn.
pub(crate) fn turn_json(report: &TurnReport) -> serde_json::Value {
    // `usage` is absent, not zero, when the provider reported none (issue 21).
    serde_json::to_value(TurnAnswer {
        stop_reason: report.stop_reason,
        session_id: report.session_id.as_ref(),
        events: &report.events,
        usage: report.usage,
    })
    .unwrap_or_default()
}

impl Answer for TurnReport {
    fn json(&self) -> serde_json::Value {
        turn_json(self)
    }
}

/// A stored turn answer as the stream a streamed request gets: its events, then `done` (an
/// error stored is answered with its status, as a refusal is).
fn replay_stream(outcome: hookline_host::store::KeyOutcome) -> Response {
    if outcome.status != StatusCode::OK.as_u16() {
        return replay_json(outcome);
    }
    let body = outcome.body;
    let mut events: Vec<Event> = body["events"]
        .as_array()
        .map(|events| {
            events
                .iter()
                .map(|event| {
                    let kind = event["event"].as_str().unwrap_or("event");
                    Event::default().event(kind).data(event.to_string())
                })
                .collect()
        })
        .unwrap_or_default();
    let mut done = serde_json::json!({
        "stopReason": body["stopReason"],
        "sessionId": body["sessionId"],
    });
    if let Some(usage) = body.get("usage") {
        done["usage"] = usage.clone();
    }
    events.push(Event::default().event("done").data(done.to_string()));
    replayed(sse(stream::iter(events).map(Ok::<_, Infallible>)))
}

/// The query of `POST /v1/sessions/{id}/turns`.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct TurnQuery {
    /// `full`: `hook-changed` events carry the whole values before and after besides the patch.
    #[serde(default)]
    #[param(schema_with = crate::openapi::detail)]
    detail: Detail,
}

/// Runs one turn and records its metrics.
pub(crate) async fn run_turn(
    handle: &SessionHandle,
    input: UserInput,
    detail: Detail,
) -> Result<TurnReport, ApiError> {
    let started = Instant::now();
    let result = handle
        .turn_with(input, detail)
        .await
        .map_err(ApiError::from);
    // Issue 48: turn series carry the session's tenant (`default` when nobody owns it).
    let tenant = handle
        .watch_status()
        .borrow()
        .owner
        .as_ref()
        .map(|o| o.tenant.clone());
    turn_finished(
        result.as_ref().ok().map(|r| r.stop_reason),
        started.elapsed(),
        tenant.as_deref().unwrap_or(crate::auth::DEFAULT_TENANT),
    );
    if let Ok(report) = &result {
        model_tokens(report.model.as_deref(), report.usage.as_ref());
    }
    result
}

/// `POST /v1/sessions/{id}/turns`: one JSON document at the end, or with
/// `Accept: text/event-stream` the turn's events as they happen. `?detail=full` adds the whole
/// values to `hook-changed` events. With an `Idempotency-Key`, a repeated request gets the first
/// one's stored answer (`idempotency.rs`).
#[utoipa::path(
    post, path = "/v1/sessions/{id}/turns", tag = "sessions",
    params(("id" = String, Path, description = "The session's key (`key` in its status)."), IdempotencyHeader, TurnQuery),
    request_body(content = TurnBody, description = "The user's text and its mode.", content_type = "application/json"),
    responses(
        (status = 200, description = "The finished turn: one JSON document, or with `Accept: text/event-stream` its events as they happen (`event: <kind>` with a HostEvent as data, `lagged` with `{\"missed\": n}`, then `done` with a TurnDone as data, or `error` with an ErrorBody).", content((TurnAnswer<'static> = "application/json"), (String = "text/event-stream"))),
        BadKeyedBody,
        Unauthorized,
        NotOpen,
        TimedOut,
        KeyBusy,
        KeyReused,
        SessionEnded,
        TooLarge,
        NotJson,
        TurnRefused,
        Internal,
        Unavailable,
        Moved,
        TurnMoved,
    )
)]
pub(crate) async fn turn(
    Caller(who): Caller,
    State(state): State<AppState>,
    UrlPath(id): UrlPath<String>,
    query: Result<Query<TurnQuery>, axum::extract::rejection::QueryRejection>,
    headers: HeaderMap,
    IdempotencyHeader(key): IdempotencyHeader,
    Body(body): Body<TurnBody>,
) -> Result<Response, ApiError> {
    let Query(TurnQuery { detail }) = query?;
    state.admit()?;
    let handle = session(&state, &who, &id).await?;
    let running_turn = state.limiter.admit_turn(&who.owner().tenant)?;
    let digest = digest(&serde_json::json!(["turns", body.text, body.mode]));
    let input = body.input();
    let streaming = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"));
    let ticket = match claim(&state, &handle, key, digest).await? {
        Claim::Replay(outcome) if streaming => return Ok(replay_stream(outcome)),
        Claim::Replay(outcome) => return Ok(replay_json(outcome)),
        Claim::Run(ticket) => ticket,
    };
    let live = handle.subscribe();
    let mut running = once(ticket, async move {
        // Counted against the tenant's turns running at once until it ends.
        let _running_turn = running_turn;
        run_turn(&handle, input, detail).await
    });
    if !streaming {
        let report = running.await?;
        return Ok(Json(turn_json(&report)).into_response());
    }
    // A refusal (busy, draining, ended) comes at once: answer it with its status, not a stream.
    if let Some(result) = (&mut running).now_or_never() {
        let report = result?;
        let events = stream::iter(report.events.iter().map(sse_event).collect::<Vec<_>>())
            .chain(stream::once(async move { done_event(&Ok(report), false) }))
            .map(Ok::<_, Infallible>);
        return Ok(sse(events));
    }
    Ok(sse(turn_stream(live, running)))
}

fn sse<S>(events: S) -> Response
where
    S: Stream<Item = Result<Event, Infallible>> + Send + 'static,
{
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// The kind of an event (its `event` tag) and its JSON.
pub(crate) fn tagged(event: &HostEvent) -> (String, serde_json::Value) {
    let json = serde_json::to_value(event).unwrap_or_default();
    let kind = json
        .get("event")
        .and_then(|k| k.as_str())
        .unwrap_or("event")
        .to_owned();
    (kind, json)
}

fn sse_event(event: &HostEvent) -> Event {
    let (kind, json) = tagged(event);
    Event::default().event(kind).data(json.to_string())
}

/// The stream's last event: the turn's answer, with all its events when the stream missed some
/// (`missed`), else without them (they went before, one by one).
fn done_event(result: &Result<TurnReport, ApiError>, missed: bool) -> Event {
    match result {
        Ok(report) => {
            let done = if missed {
                TurnDone::with_events(report)
            } else {
                TurnDone::of(report)
            };
            let json = serde_json::to_value(done).unwrap_or_default();
            Event::default().event("done").data(json.to_string())
        }
        Err(error) => Event::default()
            .event("error")
            .data(error.body().to_string()),
    }
}

/// What a turn's event stream is doing.
struct Streaming<F> {
    live: broadcast::Receiver<std::sync::Arc<HostEvent>>,
    /// The session's feed has closed: only the turn's answer is left.
    closed: bool,
    running: Option<F>,
    finished: Option<Result<TurnReport, ApiError>>,
    done: bool,
    /// The stream was sent `lagged`: its `done` carries the turn's events.
    missed: bool,
}

/// The session's live events while the turn runs, then the rest of them, then `done`.
fn turn_stream<F>(
    live: broadcast::Receiver<std::sync::Arc<HostEvent>>,
    running: F,
) -> impl Stream<Item = Result<Event, Infallible>> + Send + 'static
where
    F: std::future::Future<Output = Result<TurnReport, ApiError>> + Send + Unpin + 'static,
{
    let start = Streaming {
        live,
        closed: false,
        running: Some(running),
        finished: None,
        done: false,
        missed: false,
    };
    stream::unfold(start, |mut s| async move {
        if s.done {
            return None;
        }
        loop {
            if let Some(running) = s.running.as_mut() {
                if s.closed {
                    s.finished = Some(running.await);
                    s.running = None;
                    continue;
                }
                tokio::select! {
                    biased;
                    event = s.live.recv() => match event {
                        Ok(event) => return Some((Ok(sse_event(&event)), s)),
                        Err(broadcast::error::RecvError::Lagged(missed)) => {
                            s.missed = true;
                            return Some((Ok(lagged(missed)), s));
                        }
                        // The session ended: only the turn's answer is left.
                        Err(broadcast::error::RecvError::Closed) => s.closed = true,
                    },
                    result = running => {
                        s.running = None;
                        s.finished = Some(result);
                    }
                }
                continue;
            }
            // The answer came after every event of the turn was sent to the feed: take what is
            // left without waiting, then finish.
            match s.live.try_recv() {
                Ok(event) => return Some((Ok(sse_event(&event)), s)),
                Err(broadcast::error::TryRecvError::Lagged(missed)) => {
                    s.missed = true;
                    return Some((Ok(lagged(missed)), s));
                }
                Err(_) => {
                    s.done = true;
                    let result = s
                        .finished
                        .take()
                        .unwrap_or(Err(ApiError::Internal("the turn's answer was lost".into())));
                    return Some((Ok(done_event(&result, s.missed)), s));
                }
            }
        }
    })
}

fn lagged(missed: u64) -> Event {
    Event::default()
        .event("lagged")
        .data(serde_json::json!({ "missed": missed }).to_string())
}
