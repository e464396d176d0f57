//! `GET /v1/sessions/{id}/ws`: one session over a WebSocket. The server sends the session's
//! events as `{"type":"event","event":HostEvent}`, and answers each request with
//! `{"type":"done","request":...}` or `{"type":"error","request":...,"error":{...}}`. The client
//! sends turns, approval answers, commands and inbound channel messages (`message:received`,
//! for chat-channel adapters). See docs/serve.md, "WebSocket".
//!
//! Each request runs under a span of its own (`crate::trace::socket_span`): a child of the
//! `traceparent` the message carries, else of the upgrade request, so a socket's turns join the
//! trace that opened it (docs/observability.md).
//!
//! A turn or a command may carry a `key`: the `Idempotency-Key` of HTTP, with its semantics
//! (`idempotency.rs`; the same digests, so a key sent over HTTP and repeated here, or the other
//! way round, finds the same entry). A repeat is answered with the stored answer, marked
//! `"replayed": true`, and runs nothing.
//!
//! Bounded: one outgoing queue per socket; a client that reads too slowly misses events (it is
//! told how many, `{"type":"lagged","missed":n}`) rather than growing the server's memory.
//!
//! A request's answer never overtakes its events: answers go through the task that forwards
//! the session's events ([`forward`]), which writes every event the session sent before the
//! answer first (the session sends a turn's events before it answers the turn). A turn during
//! which the socket missed events gets them back in full in its `done` (`events`), so a client
//! never gets `done` for a turn whose answer it silently missed (issue 49's load run: before,
//! the request's task wrote `done` itself, and under load it could overtake the turn's
//! `assistant` event still waiting in the forwarder). A
//! message over `--body-limit` closes the socket with 1009, a text frame that is not UTF-8 with
//! 1007 ([`socket_close`]). A socket whose credential stops being good (a JWT's `exp` passes, an
//! API key is revoked or expires) is closed with 1008 and the reason (issue 48).

use crate::openapi::errors::{Leased, NotOpen, Unauthorized};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::extract::{Path as UrlPath, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use futures::{SinkExt as _, StreamExt as _};
use hookline_messages::record::Decision;
use schemars::JsonSchema;
use serde::Deserialize;
use tokio::sync::{broadcast, mpsc};
use tracing::Instrument as _;

use super::idempotency::{claim, digest, once, Claim};
use super::sessions::{may_answer, run_command, session};
use super::socket_close;
use super::turn::{run_turn, TurnBody, TurnMode};
use super::TurnDone;
use crate::auth::{Principal, WsAuth};
use crate::{ApiError, AppState, ErrorBody};
use hookline_host::gateway::{Activity, SessionHandle};
use hookline_host::producers::InboundMessage;
use hookline_host::state::HostEvent;
use hookline_host::store::{IdempotencyKey, KeyOutcome};

/// How long a socket that must authenticate by message has to send it.
const AUTH_WAIT: Duration = Duration::from_secs(5);

/// RFC 6455 service restart: the session moved to the server that replaced this one (issue 49).
pub(crate) const CLOSE_SERVICE_RESTART: u16 = 1012;

/// The close code for a socket that did not authenticate.
const CLOSE_UNAUTHORIZED: u16 = 4401;

/// The close code for a socket whose session the authenticated caller may not see (or that
/// does not exist): the 404 `unknown-session` of HTTP.
const CLOSE_UNKNOWN_SESSION: u16 = 4404;

/// RFC 6455: the endpoint got a message that violates its policy; here, the socket's
/// credential (a JWT past its `exp`, an API key revoked or expired) is no longer good.
const CLOSE_POLICY_VIOLATION: u16 = 1008;

/// Messages waiting to be written to one socket.
const OUTGOING: usize = 256;

/// Answers waiting for the forwarder to write them after the events before them: at most one
/// per request running on the socket, and the session queues few.
const ANSWERS: usize = 64;

/// What a client sends over `/v1/sessions/{id}/ws`, one JSON text message each.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
#[schemars(rename = "SocketRequest")]
pub(crate) enum ClientMessage {
    /// The credential, first, when the socket was opened without one.
    Auth {
        /// The server's token, an API key or a JWT.
        token: String,
    },
    /// A turn, as `POST /v1/sessions/{id}/turns` takes it.
    Turn {
        /// W3C trace context the turn continues (else the upgrade request's).
        traceparent: Option<String>,
        /// What the user says.
        text: String,
        /// `work` when absent.
        mode: Option<TurnMode>,
        /// An idempotency key, as the `Idempotency-Key` header of HTTP.
        key: Option<String>,
    },
    /// An operator's answer to an approval.
    #[serde(rename_all = "camelCase")]
    Approval {
        /// W3C trace context the answer continues (else the upgrade request's).
        traceparent: Option<String>,
        /// The tool call's id.
        call_id: String,
        /// `allow` or `deny`.
        decision: Decision,
    },
    /// A slash command line.
    Command {
        /// W3C trace context the command continues (else the upgrade request's).
        traceparent: Option<String>,
        /// The line, slash first.
        command: String,
        /// An idempotency key, as the `Idempotency-Key` header of HTTP.
        key: Option<String>,
    },
    /// An inbound chat-channel message (`message:received`).
    Message {
        /// W3C trace context the message continues (else the upgrade request's).
        traceparent: Option<String>,
        /// The message.
        message: WireMessage,
    },
}

impl ClientMessage {
    /// The request's name in `done` and `error` answers.
    fn kind(&self) -> &'static str {
        match self {
            Self::Auth { .. } => "auth",
            Self::Turn { .. } => "turn",
            Self::Approval { .. } => "approval",
            Self::Command { .. } => "command",
            Self::Message { .. } => "message",
        }
    }

    /// The trace context the message carries.
    fn traceparent(&self) -> Option<&str> {
        match self {
            Self::Auth { .. } => None,
            Self::Turn { traceparent, .. }
            | Self::Approval { traceparent, .. }
            | Self::Command { traceparent, .. }
            | Self::Message { traceparent, .. } => traceparent.as_deref(),
        }
    }
}

/// An inbound channel message as a client sends it.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[schemars(rename = "SocketInboundMessage")]
pub(crate) struct WireMessage {
    /// The sender.
    from: String,
    /// The channel (`telegram`, ...).
    channel_id: String,
    /// The generic body.
    body: Option<String>,
    /// The raw body.
    raw_body: Option<String>,
    /// The command body, when the text is a command.
    command_body: Option<String>,
    /// When it was sent (ms since the epoch).
    timestamp: Option<u64>,
    /// The receiving account.
    account_id: Option<String>,
    /// The conversation.
    conversation_id: Option<String>,
    /// The message id.
    message_id: Option<String>,
}

impl From<WireMessage> for InboundMessage {
    fn from(m: WireMessage) -> Self {
        Self {
            from: m.from,
            channel_id: m.channel_id,
            body: m.body,
            raw_body: m.raw_body,
            command_body: m.command_body,
            timestamp: m.timestamp,
            account_id: m.account_id,
            conversation_id: m.conversation_id,
            message_id: m.message_id,
            ..Self::default()
        }
    }
}

/// The route: upgrades when the session exists.
#[utoipa::path(
    get, path = "/v1/sessions/{id}/ws", tag = "events",
    description = "One session over a WebSocket (docs/serve.md, \"WebSocket\"). The client sends JSON text messages (`SocketRequest`: `auth`, `turn`, `approval`, `command`, `message`; a `turn` or `command` may carry a `key`, the `Idempotency-Key` of HTTP: a repeat is answered with the stored answer, marked `\"replayed\": true`, and runs nothing); the server sends `{\"type\": \"event\", \"event\": HostEvent}` for the session's events, `{\"type\": \"done\", \"request\": ...}` or `{\"type\": \"error\", \"request\": ..., \"error\": {...}}` for each request, after every event the session sent before it, and `{\"type\": \"lagged\", \"missed\": n}` when the socket read too slowly (the `done` of a turn running meanwhile then carries the turn's `events` in full). A browser may offer its token as the subprotocol `bearer.<token>`. Close codes: 4401 (not authenticated), 1008 (the credential's JWT expired or its API key was revoked or expired, with the reason), 1009 (a message over `--body-limit`), 1007 (a text frame that is not UTF-8).",
    params(("id" = String, Path, description = "The session's key.")),
    responses(
        (status = 101, description = "Switched to the WebSocket protocol."),
        (status = 400, description = "Not a WebSocket handshake (`http`).", body = ErrorBody),
        Unauthorized,
        NotOpen,
        Leased,
        (status = 426, description = "The connection cannot be upgraded (`http`).", body = ErrorBody),
    )
)]
pub(crate) async fn upgrade(
    State(state): State<AppState>,
    UrlPath(id): UrlPath<String>,
    auth: Option<Extension<WsAuth>>,
    who: Option<Extension<Principal>>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Result<Response, ApiError> {
    // Fail closed: without the root layer's word, nobody is let in.
    let auth = auth.map_or(WsAuth::Pending, |Extension(auth)| auth);
    // A socket that authenticates by message finds its session after that (a caller who has
    // not said who it is learns nothing about which sessions exist).
    let target = match (auth, who) {
        (WsAuth::Done, Some(Extension(who))) => {
            Target::Ready(session(&state, &who, &id).await?, who)
        }
        (WsAuth::Done, None) => return Err(ApiError::Unauthorized),
        (WsAuth::Pending, _) => Target::Pending(id),
    };
    // A browser that offered `bearer.<token>` needs the protocol echoed to accept the socket.
    let offered = headers
        .get_all(axum::http::header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|p| p.trim().to_owned())
        .find(|p| p.starts_with("bearer."));
    let ws = socket_close::limit(ws, state.body_limit);
    // The upgrade's span ends when the socket opens; its requests continue its context.
    let upgrade = crate::trace::upgrade_context();
    let ws = match offered {
        Some(protocol) if auth == WsAuth::Done => ws.protocols([protocol]),
        _ => ws,
    };
    Ok(ws
        .on_upgrade(move |socket| run(state, target, upgrade, socket))
        .into_response())
}

/// The session a socket serves: found at the upgrade, or once its first message authenticated.
enum Target {
    Ready(SessionHandle, Principal),
    Pending(String),
}

fn text(value: &serde_json::Value) -> Message {
    Message::Text(Utf8Bytes::from(value.to_string()))
}

async fn run(
    state: AppState,
    target: Target,
    upgrade: Option<opentelemetry::Context>,
    socket: WebSocket,
) {
    let (mut sink, mut incoming) = socket.split();
    let (handle, who) = match target {
        Target::Ready(handle, who) => (handle, who),
        Target::Pending(id) => match authenticate(&state, &mut incoming, &id).await {
            Ok(found) => found,
            Err(refusal) => {
                let _ = sink.send(Message::Close(Some(refusal))).await;
                return;
            }
        },
    };
    let (out, mut outgoing) = mpsc::channel::<Message>(OUTGOING);
    let writer = tokio::spawn(async move {
        while let Some(message) = outgoing.recv().await {
            let close = matches!(message, Message::Close(_));
            if sink.send(message).await.is_err() || close {
                break;
            }
        }
        let _ = sink.close().await;
    });
    // Subscribed before the first request is read, so no event of it comes before the feed.
    let feed = Feed {
        live: handle.subscribe(),
        missed: Arc::default(),
    };
    let missed = feed.missed.clone();
    let (answers, answered) = mpsc::channel::<Answer>(ANSWERS);
    let forwarder = tokio::spawn(forward(handle.clone(), feed, answered, out.clone()));
    let replies = Replies {
        answers,
        out: out.clone(),
        missed,
    };
    let mut lapsed = state.auth.lapsed(&who);
    loop {
        let read = tokio::select! {
            read = incoming.next() => match read {
                Some(read) => read,
                None => break,
            },
            // The socket does not outlive its credential (issue 48): 1008 with the reason.
            reason = &mut lapsed => {
                let frame = CloseFrame {
                    code: CLOSE_POLICY_VIOLATION,
                    reason: Utf8Bytes::from(reason),
                };
                let _ = tokio::time::timeout(AUTH_WAIT, out.send(Message::Close(Some(frame)))).await;
                break;
            }
        };
        let message = match read {
            Ok(message) => message,
            // Over the body cap, or text that is not UTF-8: closed with its RFC 6455 code, the
            // message never read as a request (issue 24 item 5).
            Err(error) => {
                if let Some(frame) = socket_close::close_for(error, state.body_limit) {
                    let close = out.send(Message::Close(Some(frame)));
                    let _ = tokio::time::timeout(AUTH_WAIT, close).await;
                }
                break;
            }
        };
        let text = match message {
            Message::Text(text) => text,
            Message::Close(_) => break,
            // Pings are answered by the socket; binary frames carry nothing here.
            _ => continue,
        };
        match serde_json::from_str::<ClientMessage>(text.as_str()) {
            Ok(request) => dispatch(&state, (&handle, &who), request, upgrade.as_ref(), &replies),
            Err(error) => {
                let error = ApiError::BadJson(error.to_string());
                let _ = out.try_send(text_error("unknown", &error));
            }
        }
    }
    forwarder.abort();
    drop((out, replies));
    // The writer ends once every request's answer is written (each holds a sender) or at once
    // when the client is gone.
    let _ = tokio::time::timeout(AUTH_WAIT, writer).await;
}

/// Reads the first message: it must be `{"type":"auth","token":...}` with a credential the
/// server takes; then the session `id` must be one the caller may see. Refused: the close frame
/// to send (4401; 4404 for a session it may not see or that does not exist; or the RFC 6455
/// code of a message over the body cap or not UTF-8).
async fn authenticate(
    state: &AppState,
    incoming: &mut futures::stream::SplitStream<WebSocket>,
    id: &str,
) -> Result<(SessionHandle, Principal), CloseFrame> {
    let unauthorized = CloseFrame {
        code: CLOSE_UNAUTHORIZED,
        reason: Utf8Bytes::from_static("unauthorized"),
    };
    let first = tokio::time::timeout(AUTH_WAIT, incoming.next()).await;
    let text = match first {
        Ok(Some(Ok(Message::Text(text)))) => text,
        Ok(Some(Err(error))) => {
            return Err(socket_close::close_for(error, state.body_limit).unwrap_or(unauthorized))
        }
        _ => return Err(unauthorized),
    };
    let who = match serde_json::from_str::<ClientMessage>(text.as_str()) {
        Ok(ClientMessage::Auth { token }) => state
            .auth
            .principal(token.trim())
            .await
            .map_err(|_| unauthorized)?,
        _ => return Err(unauthorized),
    };
    match session(state, &who, id).await {
        Ok(handle) => Ok((handle, who)),
        Err(error) => Err(CloseFrame {
            code: CLOSE_UNKNOWN_SESSION,
            reason: Utf8Bytes::from(error.code()),
        }),
    }
}

fn text_error(request: &str, error: &ApiError) -> Message {
    text(&error_body(request, error))
}

/// Runs one request on a task of its own, so the socket keeps reading (an approval answer or a
/// `/stop` must reach a turn that waits), under its span (a child of `upgrade` unless the
/// message carries a `traceparent`).
fn dispatch(
    state: &AppState,
    (handle, who): (&SessionHandle, &Principal),
    request: ClientMessage,
    upgrade: Option<&opentelemetry::Context>,
    replies: &Replies,
) {
    let (state, handle, replies, who) =
        (state.clone(), handle.clone(), replies.clone(), who.clone());
    let kind = request.kind();
    // The events the socket had missed before this request: more missed by its answer, and a
    // turn's may be among them.
    let mark = replies.missed.load(Ordering::Acquire);
    let span = crate::trace::socket_span(kind, upgrade, request.traceparent());
    let run = async move {
        let result = match request {
            ClientMessage::Auth { .. } => Ok(Answered::Ran(serde_json::json!({}))),
            ClientMessage::Turn {
                text, mode, key, ..
            } => turn(&state, (&handle, &who), text, mode, key).await,
            ClientMessage::Approval {
                call_id, decision, ..
            } => may_answer(&state, &who, &handle)
                .and_then(|()| {
                    let by = state.auth.enforced().then(|| who.label());
                    Ok(handle.answer_approval_as(&call_id, decision, by)?)
                })
                .map(|()| {
                    Answered::Ran(serde_json::json!({ "callId": call_id, "decision": decision }))
                }),
            ClientMessage::Command { command, key, .. } => {
                command_once(&state, &handle, command, key).await
            }
            ClientMessage::Message { message, .. } => handle
                .inbound(message.into())
                .await
                .map(|events| Answered::Ran(serde_json::json!({ "events": events })))
                .map_err(ApiError::from),
        };
        let answer = match result {
            Ok(Answered::Ran(body)) => Answer::plain(done_body(kind, body)),
            Ok(Answered::Turn(body, events)) => Answer {
                body: done_body(kind, body),
                turn: Some((mark, events)),
            },
            Ok(Answered::Replayed(outcome)) => Answer::plain(replayed(kind, outcome)),
            Err(error) => Answer::plain(error_body(kind, &error)),
        };
        replies.send(answer).await;
    };
    tokio::spawn(run.instrument(span));
}

/// What a request answered: what it ran to (a turn with its events), or the stored answer of
/// its key.
enum Answered {
    Ran(serde_json::Value),
    Turn(serde_json::Value, Vec<HostEvent>),
    Replayed(KeyOutcome),
}

fn done_body(kind: &str, mut body: serde_json::Value) -> serde_json::Value {
    body["type"] = "done".into();
    body["request"] = kind.into();
    body
}

fn error_body(request: &str, error: &ApiError) -> serde_json::Value {
    let mut body = error.body();
    body["type"] = "error".into();
    body["request"] = request.into();
    body
}

/// One request's answer on its way to the socket, through the forwarder.
struct Answer {
    /// The `done` or `error` message.
    body: serde_json::Value,
    /// A finished turn: the socket's missed count when the turn was read, and the turn's
    /// events, carried in its `done` when the socket missed events since.
    turn: Option<(u64, Vec<HostEvent>)>,
}

impl Answer {
    fn plain(body: serde_json::Value) -> Self {
        Self { body, turn: None }
    }

    /// The message, once every event the session sent before it was written (or missed, with
    /// `missed` counting every event the socket missed so far).
    fn message(self, missed: u64) -> Message {
        let mut body = self.body;
        if let Some((mark, events)) = self.turn {
            if missed > mark {
                body["events"] = serde_json::to_value(events).unwrap_or_default();
            }
        }
        text(&body)
    }
}

/// Where a request's task hands its answer: the forwarder, or the socket itself once the
/// forwarder has ended (the session closed; nothing orders the answer after events then).
#[derive(Clone)]
struct Replies {
    answers: mpsc::Sender<Answer>,
    out: mpsc::Sender<Message>,
    missed: Arc<AtomicU64>,
}

impl Replies {
    async fn send(&self, answer: Answer) {
        if let Err(mpsc::error::SendError(answer)) = self.answers.send(answer).await {
            let missed = self.missed.load(Ordering::Acquire);
            let _ = self.out.send(answer.message(missed)).await;
        }
    }
}

/// The session's live events as one socket reads them.
struct Feed {
    live: broadcast::Receiver<Arc<HostEvent>>,
    /// Events the socket missed so far (a reader too slow for the bounded feed).
    missed: Arc<AtomicU64>,
}

impl Feed {
    /// Writes the event or the `lagged` a receive gave; false when the socket is gone.
    async fn write(
        &self,
        received: Result<Arc<HostEvent>, u64>,
        out: &mpsc::Sender<Message>,
    ) -> bool {
        let message = match received {
            Ok(event) => text(&serde_json::json!({ "type": "event", "event": &*event })),
            Err(missed) => {
                self.missed.fetch_add(missed, Ordering::AcqRel);
                text(&serde_json::json!({ "type": "lagged", "missed": missed }))
            }
        };
        out.send(message).await.is_ok()
    }

    /// Writes every event the session sent so far; false when the socket is gone.
    async fn catch_up(&mut self, out: &mpsc::Sender<Message>) -> bool {
        loop {
            let received = match self.live.try_recv() {
                Ok(event) => Ok(event),
                Err(broadcast::error::TryRecvError::Lagged(missed)) => Err(missed),
                Err(_) => return true,
            };
            if !self.write(received, out).await {
                return false;
            }
        }
    }

    /// Writes `answer` after every event the session sent before it; false when the socket is
    /// gone.
    async fn answer(&mut self, answer: Answer, out: &mpsc::Sender<Message>) -> bool {
        if !self.catch_up(out).await {
            return false;
        }
        let missed = self.missed.load(Ordering::Acquire);
        out.send(answer.message(missed)).await.is_ok()
    }
}

/// A stored answer: `done` (a turn's without its events, which went out as they happened), or
/// the stored error; either marked `"replayed": true`.
fn replayed(kind: &str, outcome: KeyOutcome) -> serde_json::Value {
    let mut body = outcome.body;
    if let Some(fields) = body.as_object_mut() {
        if kind == "turn" {
            fields.remove("events");
        }
        fields.insert("replayed".into(), true.into());
    }
    if outcome.status == 200 {
        return done_body(kind, body);
    }
    body["type"] = "error".into();
    body["request"] = kind.into();
    body
}

/// `key` parsed as the `Idempotency-Key` header is (400 `bad-idempotency-key`).
fn parse_key(key: Option<String>) -> Result<Option<IdempotencyKey>, ApiError> {
    key.map(|key| {
        IdempotencyKey::parse(key.trim())
            .map_err(|bad| ApiError::BadIdempotencyKey(bad.to_string()))
    })
    .transpose()
}

async fn turn(
    state: &AppState,
    (handle, who): (&SessionHandle, &Principal),
    text: String,
    mode: Option<TurnMode>,
    key: Option<String>,
) -> Result<Answered, ApiError> {
    state.admit()?;
    let running_turn = state.limiter.admit_turn(&who.owner().tenant)?;
    let key = parse_key(key)?;
    // The digest of `POST /v1/sessions/{id}/turns`: one key, one entry, whichever way it came.
    let digest = digest(&serde_json::json!(["turns", text, mode]));
    let ticket = match claim(state, handle, key, digest).await? {
        Claim::Replay(outcome) => return Ok(Answered::Replayed(outcome)),
        Claim::Run(ticket) => ticket,
    };
    let input = TurnBody { text, mode }.input();
    let handle = handle.clone();
    // A WebSocket turn streams its events: `hook-changed` carries the patch only. A keyed one
    // stores the answer a JSON turn gets (with its events).
    let report = once(ticket, async move {
        let _running_turn = running_turn;
        run_turn(&handle, input, hookline_host::state::Detail::Changes).await
    })
    .await?;
    // The SSE `done`'s data: usage absent, not zero, when the provider reported none (issue 21).
    // The events go with it to the forwarder, for a socket that missed some of them.
    let body = serde_json::to_value(TurnDone::of(&report)).unwrap_or_default();
    Ok(Answered::Turn(body, report.events))
}

async fn command_once(
    state: &AppState,
    handle: &SessionHandle,
    command: String,
    key: Option<String>,
) -> Result<Answered, ApiError> {
    let key = parse_key(key)?;
    let digest = digest(&serde_json::json!(["commands", command]));
    let ticket = match claim(state, handle, key, digest).await? {
        Claim::Replay(outcome) => return Ok(Answered::Replayed(outcome)),
        Claim::Run(ticket) => ticket,
    };
    let (state, handle) = (state.clone(), handle.clone());
    once(ticket, async move {
        run_command(&state, &handle, &command).await
    })
    .await
    .map(Answered::Ran)
}

/// Sends the session's events to the socket until the session closes, and each request's
/// answer after the events the session sent before it.
async fn forward(
    handle: SessionHandle,
    mut feed: Feed,
    mut answers: mpsc::Receiver<Answer>,
    out: mpsc::Sender<Message>,
) {
    let mut status = handle.watch_status();
    loop {
        tokio::select! {
            biased;
            event = feed.live.recv() => {
                let received = match event {
                    Ok(event) => Ok(event),
                    Err(broadcast::error::RecvError::Lagged(missed)) => Err(missed),
                    Err(broadcast::error::RecvError::Closed) => break,
                };
                if !feed.write(received, &out).await {
                    return;
                }
            }
            Some(answer) = answers.recv() => {
                if !feed.answer(answer, &out).await {
                    return;
                }
            }
            changed = status.changed() => {
                if changed.is_err() || status.borrow().activity == Activity::Closed {
                    break;
                }
            }
        }
    }
    // The session ended (closed, or the server drained): its last events and the answers
    // already given, then the close.
    if !feed.catch_up(&out).await {
        return;
    }
    while let Ok(answer) = answers.try_recv() {
        if !feed.answer(answer, &out).await {
            return;
        }
    }
    // Issue 49: a session that moved to the server replacing this one goes on there; the
    // client reconnects (RFC 6455 1012, service restart).
    let close = if handle.is_moving() {
        CloseFrame {
            code: CLOSE_SERVICE_RESTART,
            reason: Utf8Bytes::from_static(
                "the server was replaced; the session goes on there: reconnect",
            ),
        }
    } else {
        CloseFrame {
            code: 1001,
            reason: Utf8Bytes::from_static("the session has ended"),
        }
    };
    let _ = out.send(Message::Close(Some(close))).await;
}
