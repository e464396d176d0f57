//! The session routes: open, list, show (state and records, paged), close, resume, the archive,
//! answer an approval, run a slash command. A turn is `turn.rs`.

use crate::openapi::errors::{
    BadBody, BadKeyedBody, Internal, KeyBusy, KeyReused, Leased, Moved, NotJson, NotOpen,
    SessionBusy, SessionEnded, TenantLimited, TimedOut, TooLarge, Unauthorized, Unavailable,
};
use std::path::Path;
use std::time::Duration;

use axum::extract::{FromRequest, Path as UrlPath, Query, Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use hookline_messages::record::Decision;
use hookline_messages::scenario::SlashCommand;
use hookline_messages::session::{ApprovalMode, SessionId};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use utoipa::IntoParams;

use super::answers::{
    ApprovalAnswer, ArchiveView, CommandAnswer, EventsAnswer, RecordsView, SessionView,
    SessionsList,
};
use super::idempotency::{claim, digest, once, replay_json, Claim, IdempotencyHeader};
use crate::auth::{Caller, Principal};
use crate::metrics::model_tokens;
use crate::ApprovalAnswerers;
use crate::{resolve_workspace, ApiError, AppState, ErrorBody, WorkspaceRoot};
use hookline_host::gateway::{Activity, OpenSession, SessionHandle};
use hookline_host::session::SessionCommand;
use hookline_host::state::HostError;
use hookline_host::store::Role;
use hookline_host::store::StoreError;

/// The most records one page holds.
const MAX_PAGE: usize = 1000;

/// How long a command's answer waits for the session's status to settle.
const STATUS_SETTLE: Duration = Duration::from_secs(1);

/// A JSON body: the content type must be JSON when given; an empty body or `null` reads as `{}`
/// (so a missing required field is named). Rejections are [`ApiError`]s (400 naming the field,
/// 413).
pub(crate) struct Body<T>(pub(crate) T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let json_type = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.starts_with("application/json") || v.contains("+json"));
        if json_type == Some(false) {
            return Err(ApiError::NotJson);
        }
        let bytes = axum::body::Bytes::from_request(request, state)
            .await
            .map_err(|rejection| ApiError::Status(rejection.status(), rejection.body_text()))?;
        let bytes: &[u8] =
            if bytes.iter().all(u8::is_ascii_whitespace) || bytes.trim_ascii() == b"null" {
                b"{}"
            } else {
                &bytes
            };
        axum::Json::<T>::from_bytes(bytes)
            .map(|Json(value)| Self(value))
            .map_err(ApiError::from)
    }
}

/// The open session `id` names, when `who` may see it (issue 48: else the same 404
/// `unknown-session` as for a session that does not exist, checked before anything else about
/// it); one this node does not have open is taken over here when its holder is gone (dead, or
/// its lease expired: issue 40 item 2), with the checks of `/resume`, so the request is answered
/// as if the session had always been here. 409 `session-leased` while a holder that runs has
/// it; 404 `unknown-session` otherwise.
pub(crate) async fn session(
    state: &AppState,
    who: &Principal,
    id: &str,
) -> Result<SessionHandle, ApiError> {
    visible(state, who, id).await?;
    Ok(state
        .gateway
        .session_or_take_over(&SessionId::new(id))
        .await?)
}

/// 429 `tenant-limit` when `who`'s tenant holds its `max_sessions` on this node.
fn admit_session(state: &AppState, who: &Principal) -> Result<(), ApiError> {
    let tenant = who.owner().tenant;
    let open = state
        .gateway
        .sessions()
        .iter()
        .filter(|s| {
            s.owner
                .as_ref()
                .map_or(crate::DEFAULT_TENANT, |o| &o.tenant)
                == tenant
        })
        .count();
    state.limiter.admit_session(&tenant, open)
}

/// 404 `unknown-session` unless `who` may see session `id`: open here (its status names its
/// owner), or as stored (its facts do, so another node and a restart know it).
pub(crate) async fn visible(state: &AppState, who: &Principal, id: &str) -> Result<(), ApiError> {
    if who.may_see_all() {
        return Ok(());
    }
    let key = SessionId::new(id);
    // Outer `None`: no such session.
    let owner = match state.gateway.session(&key) {
        Some(handle) => Some(handle.status().owner),
        None => match state.gateway.session_store().read(&key).await {
            Ok(stored) => stored.map(|stored| stored.facts.owner),
            Err(StoreError::InvalidSessionId { .. }) => None,
            Err(error) => return Err(HostError::Store(error).into()),
        },
    };
    match owner {
        Some(owner) if who.may_see(owner.as_ref()) => Ok(()),
        _ => Err(ApiError::UnknownSession(id.to_owned())),
    }
}

/// `POST /v1/sessions` body.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct OpenBody {
    /// A directory under the workspace root (made when missing); the root itself when absent.
    workspace: Option<String>,
    /// The session's approval mode; the server's default when absent.
    approval_mode: Option<ApprovalMode>,
    /// A configured model's name (docs/configuration.md); the default model when absent.
    model: Option<String>,
}

/// `POST /v1/sessions`: 201 with the new session's status.
#[utoipa::path(
    post, path = "/v1/sessions", tag = "sessions",
    request_body(content = Option<OpenBody>, description = "Where and how the session runs; an empty body opens it in the workspace root with the defaults.", content_type = "application/json"),
    responses(
        (status = 201, description = "The new session's status.", body = ref("#/components/schemas/SessionStatus"), headers(("Location" = String, description = "The session's address, `/v1/sessions/{key}`."))),
        BadBody,
        Unauthorized,
        (status = 403, description = "The workspace lies outside `--workspace-root` (`workspace-outside-root`).", body = ErrorBody),
        TimedOut,
        TooLarge,
        NotJson,
        TenantLimited,
        Internal,
        Unavailable,
        Moved,
    )
)]
pub(crate) async fn open(
    Caller(who): Caller,
    State(state): State<AppState>,
    Body(body): Body<OpenBody>,
) -> Result<Response, ApiError> {
    state.admit()?;
    admit_session(&state, &who)?;
    let root = &state.root;
    let workspace = match &body.workspace {
        Some(dir) => resolve_workspace(root, root.path(), dir)?,
        None => root.path().to_path_buf(),
    };
    let handle = state
        .gateway
        .open(OpenSession {
            workspace: Some(workspace),
            approval_mode: body.approval_mode,
            model: body.model,
            // Issue 48: the session belongs to its opener (nobody is named without auth).
            owner: state.auth.enforced().then(|| who.owner()),
        })
        .await?;
    // The new session's address: a balancer learns from it which node holds the session
    // (deploy/haproxy.cfg).
    let location = format!("/v1/sessions/{}", handle.key());
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        Json(handle.status()),
    )
        .into_response())
}

/// `POST /v1/sessions/{id}/resume`: opens the stored session `id` on this node (issue 14 item
/// 3): takes its lease (at once when it was released or has expired; 409 `session-leased` while
/// another node holds it), reads its records and continues where it stopped; its start hooks
/// run here as it becomes active (SPEC P3.10). 200 with its status; also when it is open here
/// already. 404 when the store does not have it.
#[utoipa::path(
    post, path = "/v1/sessions/{id}/resume", tag = "sessions",
    params(("id" = String, Path, description = "The session's key (`key` in its status).")),
    responses(
        (status = 200, description = "The session's status, resumed here (or open here already).", body = ref("#/components/schemas/SessionStatus")),
        (status = 400, description = "The session asks for a model not configured here (`unknown-model`).", body = ErrorBody),
        Unauthorized,
        (status = 403, description = "Its stored workspace lies outside `--workspace-root` (`workspace-outside-root`).", body = ErrorBody),
        (status = 404, description = "The store does not have this session (`unknown-session`).", body = ErrorBody),
        TimedOut,
        (status = 409, description = "Another node holds the session (`session-leased`, with `Retry-After`) or took it over (`lease-lost`), or it cannot be restored as stored (`cannot-restore`).", body = ErrorBody),
        TenantLimited,
        Internal,
        Unavailable,
        Moved,
    )
)]
pub(crate) async fn resume(
    Caller(who): Caller,
    State(state): State<AppState>,
    UrlPath(id): UrlPath<String>,
) -> Result<Json<hookline_host::gateway::SessionStatus>, ApiError> {
    visible(&state, &who, &id).await?;
    state.admit()?;
    if state
        .gateway
        .session(&SessionId::new(id.as_str()))
        .is_none()
    {
        admit_session(&state, &who)?;
    }
    let handle = state.gateway.resume(&SessionId::new(id.as_str())).await?;
    Ok(Json(handle.status()))
}

/// `GET /v1/sessions`.
#[utoipa::path(
    get, path = "/v1/sessions", tag = "sessions",
    responses(
        (status = 200, description = "Every open session's status.", body = SessionsList),
        Unauthorized,
    )
)]
pub(crate) async fn list(Caller(who): Caller, State(state): State<AppState>) -> Json<SessionsList> {
    let mut sessions = state.gateway.sessions();
    sessions.retain(|status| who.may_see(status.owner.as_ref()));
    Json(SessionsList { sessions })
}

/// `GET /v1/sessions/{id}` query.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct Page {
    /// The index of the first record of the page (0 when absent).
    #[serde(default)]
    #[param(maximum = 2147483647)]
    offset: usize,
    /// How many records the page holds at most (100 when absent; more than 1000 reads as 1000).
    #[param(maximum = 2147483647)]
    limit: Option<usize>,
}

/// `GET /v1/sessions/{id}?offset=0&limit=100`.
#[utoipa::path(
    get, path = "/v1/sessions/{id}", tag = "sessions",
    params(("id" = String, Path, description = "The session's key (`key` in its status)."), Page),
    responses(
        (status = 200, description = "The session's status, a page of its records and the approvals it waits for.", body = SessionView),
        (status = 400, description = "The query is not valid (`bad-query`).", body = ErrorBody),
        Unauthorized,
        NotOpen,
        Leased,
        TimedOut,
        SessionEnded,
        Internal,
        Unavailable,
        Moved,
    )
)]
pub(crate) async fn show(
    Caller(who): Caller,
    State(state): State<AppState>,
    UrlPath(id): UrlPath<String>,
    page: Result<Query<Page>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<SessionView>, ApiError> {
    let Query(page) = page?;
    let handle = session(&state, &who, &id).await?;
    let limit = page.limit.unwrap_or(100).min(MAX_PAGE);
    let status = handle.status();
    // Records are read on the session's task between requests: while a turn runs (perhaps
    // waiting for an approval) the page would wait for it and take a slot of its inbox, so the
    // answer says the session is busy instead; the `session` event of /v1/events tells when it
    // is idle again. A turn queued just before the read (the status still said idle) is waited
    // for at most STATUS_SETTLE, never for its approval (issue 34 item 2).
    let busy_view = || RecordsView {
        total: status.records,
        offset: page.offset,
        items: Vec::new(),
        busy: true,
    };
    let records = if matches!(status.activity, Activity::Turn | Activity::Approval) {
        busy_view()
    } else {
        match tokio::time::timeout(STATUS_SETTLE, handle.records(page.offset, limit)).await {
            Ok(records) => {
                let records = records?;
                RecordsView {
                    total: records.total,
                    offset: page.offset,
                    items: records.records,
                    busy: false,
                }
            }
            Err(_) => busy_view(),
        }
    };
    let answered = state
        .answered
        .of(&state.gateway, &status, STATUS_SETTLE)
        .await
        .to_vec();
    Ok(Json(SessionView {
        session: status,
        records,
        pending_approvals: handle.pending_approvals(),
        approvals: handle.approvals(),
        answered,
    }))
}

/// `GET /v1/sessions/{id}/archive?offset=0&limit=100`: a page of the active session's archive as
/// the store holds it (issue 46 item 3), read without its lease: a running turn is never waited
/// for, and its steps show once they are stored.
#[utoipa::path(
    get, path = "/v1/sessions/{id}/archive", tag = "sessions",
    params(("id" = String, Path, description = "The session's key (`key` in its status)."), Page),
    responses(
        (status = 200, description = "A page of the active session's archive.", body = ArchiveView),
        (status = 400, description = "The query is not valid (`bad-query`).", body = ErrorBody),
        Unauthorized,
        NotOpen,
        Leased,
        TimedOut,
        Internal,
        Unavailable,
        Moved,
    )
)]
pub(crate) async fn archive(
    Caller(who): Caller,
    State(state): State<AppState>,
    UrlPath(id): UrlPath<String>,
    page: Result<Query<Page>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<ArchiveView>, ApiError> {
    let Query(page) = page?;
    let handle = session(&state, &who, &id).await?;
    let limit = page.limit.unwrap_or(100).min(MAX_PAGE);
    let session_id = handle.status().session_id;
    // Only the page is kept as the store reads the archive (PostgreSQL fetches only its rows):
    // a long session's is megabytes.
    let stored = match &session_id {
        Some(active) => state
            .gateway
            .session_store()
            .archive_page(active, page.offset, limit)
            .await
            .map_err(|e| ApiError::from(hookline_host::HostError::Store(e)))?,
        None => None,
    };
    let stored = stored.unwrap_or_default();
    let items = stored
        .entries
        .iter()
        .filter_map(|entry| match serde_json::to_value(entry) {
            Ok(serde_json::Value::Object(map)) => Some(map),
            _ => None,
        })
        .collect();
    Ok(Json(ArchiveView {
        session_id,
        total: usize::try_from(stored.total).unwrap_or(usize::MAX),
        offset: page.offset,
        turns_before: stored.turns_before,
        items,
    }))
}

/// `DELETE /v1/sessions/{id}`: the session's end hooks run (SPEC P3.11); a session whose
/// holder is gone is taken over first, as a turn would (issue 46 item 8).
#[utoipa::path(
    delete, path = "/v1/sessions/{id}", tag = "sessions",
    params(("id" = String, Path, description = "The session's key (`key` in its status).")),
    responses(
        (status = 200, description = "The session is closed; what closing it reported.", body = EventsAnswer),
        Unauthorized,
        NotOpen,
        Leased,
        TimedOut,
        SessionEnded,
        SessionBusy,
        Internal,
        Unavailable,
        Moved,
    )
)]
pub(crate) async fn close(
    Caller(who): Caller,
    State(state): State<AppState>,
    UrlPath(id): UrlPath<String>,
) -> Result<Json<EventsAnswer>, ApiError> {
    visible(&state, &who, &id).await?;
    let events = state.gateway.close(&SessionId::new(id.as_str())).await?;
    Ok(Json(EventsAnswer { events }))
}

/// `POST /v1/sessions/{id}/approvals/{call_id}` body.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApprovalBody {
    /// `allow` runs the call, `deny` refuses it.
    decision: Decision,
}

/// `POST /v1/sessions/{id}/approvals/{call_id}`.
#[utoipa::path(
    post, path = "/v1/sessions/{id}/approvals/{call_id}", tag = "approvals",
    params(("id" = String, Path, description = "The session's key (`key` in its status)."), ("call_id" = String, Path, description = "The tool call's id (`callId` of `approval-requested`).")),
    request_body(content = ApprovalBody, description = "The operator's decision.", content_type = "application/json"),
    responses(
        (status = 200, description = "The answer was taken: the waiting tool call runs or is refused.", body = ApprovalAnswer),
        BadBody,
        Unauthorized,
        (status = 403, description = "The caller may not answer this session's approvals: its tenant's are answered by operators, or by operators and the session's owner (`forbidden`).", body = ErrorBody),
        Leased,
        (status = 404, description = "No open session has this id (`unknown-session`), or no approval waits for this call (`not-waiting`).", body = ErrorBody),
        TimedOut,
        TooLarge,
        NotJson,
        Moved,
    )
)]
pub(crate) async fn approve(
    Caller(who): Caller,
    State(state): State<AppState>,
    UrlPath((id, call_id)): UrlPath<(String, String)>,
    Body(body): Body<ApprovalBody>,
) -> Result<Json<ApprovalAnswer>, ApiError> {
    // The session first (404), then whether this caller answers its approvals (403).
    let handle = session(&state, &who, &id).await?;
    may_answer(&state, &who, &handle)?;
    let by = state.auth.enforced().then(|| who.label());
    match handle.answer_approval_as(&call_id, body.decision, by) {
        Ok(()) => {}
        // Issue 49: the turn moved to the server replacing this one, which asks it again.
        Err(_) if handle.is_moving() => return Err(ApiError::Moved),
        Err(not_waiting) => return Err(not_waiting.into()),
    }
    Ok(Json(ApprovalAnswer {
        call_id,
        decision: body.decision,
    }))
}

/// 403 unless `who` may answer the approvals of the session `handle` (which it may see):
/// operators and admins always; the client that opened it when its tenant says
/// `owner-or-operator` (issue 48).
pub(crate) fn may_answer(
    state: &AppState,
    who: &Principal,
    handle: &SessionHandle,
) -> Result<(), ApiError> {
    if who.role >= Role::Operator {
        return Ok(());
    }
    let owner = handle.status().owner;
    let owners_answer = owner.as_ref().is_some_and(|owner| {
        state.tenants.policy(&owner.tenant).approvals == ApprovalAnswerers::OwnerOrOperator
            && who.may_see(Some(owner))
    });
    if owners_answer {
        Ok(())
    } else {
        Err(ApiError::Forbidden {
            needed: Role::Operator,
            role: who.role,
        })
    }
}

/// `POST /v1/sessions/{id}/commands` body.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CommandBody {
    /// The command line, slash first.
    pub(crate) command: String,
}

/// A slash command as the session runs it, fenced: `/cd` stays inside the workspace root, and
/// `/space` (a directory beside the workspace) is not served.
pub(crate) fn session_command(
    root: &WorkspaceRoot,
    workspace: &str,
    line: &str,
) -> Result<SessionCommand, ApiError> {
    let command = SlashCommand::parse(line.trim()).map_err(ApiError::Invalid)?;
    Ok(match command {
        SlashCommand::Cd(dir) => {
            SessionCommand::Cd(resolve_workspace(root, Path::new(workspace), &dir)?)
        }
        SlashCommand::Space(_) => return Err(ApiError::Invalid(
            "the server does not serve /space; use /cd with a directory under the workspace root"
                .into(),
        )),
        other => SessionCommand::from(other),
    })
}

/// Runs a command line on `handle` and returns its events and the session's status after it.
pub(crate) async fn run_command(
    state: &AppState,
    handle: &SessionHandle,
    line: &str,
) -> Result<serde_json::Value, ApiError> {
    state.admit()?;
    let workspace = handle.status().workspace;
    let command = session_command(&state.root, &workspace, line)?;
    let report = handle.command_report(command, None).await?;
    // A `/compact`'s model call counts like a turn's (issue 34).
    model_tokens(report.model.as_deref(), report.usage.as_ref());
    let mut status = handle.watch_status();
    let _ = tokio::time::timeout(
        STATUS_SETTLE,
        status.wait_for(|s| s.activity != Activity::Turn),
    )
    .await;
    let answer = CommandAnswer {
        events: report.events,
        usage: report.usage,
        session: handle.status(),
    };
    Ok(serde_json::to_value(answer).unwrap_or_default())
}

/// `POST /v1/sessions/{id}/commands`. With an `Idempotency-Key`, a repeated request gets the
/// first one's stored answer (`idempotency.rs`).
#[utoipa::path(
    post, path = "/v1/sessions/{id}/commands", tag = "sessions",
    params(("id" = String, Path, description = "The session's key (`key` in its status)."), IdempotencyHeader),
    request_body(content = CommandBody, description = "A slash command line (`/model`, `/cd`, `/new`, `/stop`, ...).", content_type = "application/json"),
    responses(
        (status = 200, description = "What the command reported and the session's status after it.", body = CommandAnswer),
        BadKeyedBody,
        Unauthorized,
        (status = 403, description = "`/cd` names a directory outside `--workspace-root` (`workspace-outside-root`).", body = ErrorBody),
        NotOpen,
        TimedOut,
        KeyBusy,
        KeyReused,
        SessionEnded,
        TooLarge,
        NotJson,
        SessionBusy,
        Internal,
        Unavailable,
        Moved,
    )
)]
pub(crate) async fn command(
    Caller(who): Caller,
    State(state): State<AppState>,
    UrlPath(id): UrlPath<String>,
    IdempotencyHeader(key): IdempotencyHeader,
    Body(body): Body<CommandBody>,
) -> Result<Response, ApiError> {
    let handle = session(&state, &who, &id).await?;
    let digest = digest(&serde_json::json!(["commands", body.command]));
    let ticket = match claim(&state, &handle, key, digest).await? {
        Claim::Replay(outcome) => return Ok(replay_json(outcome)),
        Claim::Run(ticket) => ticket,
    };
    let answer = once(ticket, async move {
        run_command(&state, &handle, &body.command).await
    })
    .await?;
    Ok(Json(answer).into_response())
}
