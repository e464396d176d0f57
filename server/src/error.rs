//! The one error type of `hookline serve`: every refusal a client can meet, each with its HTTP
//! status and a stable kebab-case code, answered as
//! `{"error": {"code": "...", "message": "An English sentence."}}` (docs/serve.md, "Errors").
//!
//! Nothing a client can send ends in a 500: a 500 (`internal`) is only the host's own failure
//! (a store that cannot write, a pipeline that stopped).

use axum::extract::rejection::{JsonRejection, PathRejection, QueryRejection};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use hookline_actors::PipelineError;

use hookline_host::gateway::{NotWaiting, RequestError};
use hookline_host::state::{HostError, Unrestorable};
use hookline_host::store::StoreError;

/// Seconds a client is told to wait before retrying a 503 or 429.
pub const RETRY_AFTER_SECS: u64 = 1;

/// A request the server refused or could not serve.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// No open session has this id (404 `unknown-session`).
    #[error("no open session is called '{0}'")]
    UnknownSession(String),
    /// The session ended while the request waited (410 `session-ended`).
    #[error("session '{0}' has ended")]
    SessionEnded(String),
    /// Nothing waits for this approval (404 `not-waiting`).
    #[error("no approval is waiting for tool call '{0}'")]
    NotWaiting(String),
    /// No route has this path (404 `not-found`).
    #[error("there is no route {0}")]
    NoRoute(String),
    /// No API key has this id (404 `unknown-key`, issue 48).
    #[error("no API key has the id '{0}' (GET /v1/keys lists them)")]
    UnknownKey(String),
    /// The body is not the JSON the route takes (400 `bad-json`); the message names the field.
    #[error("the request body is not valid: {0}")]
    BadJson(String),
    /// The body is not JSON at all by its content type (415 `unsupported-media-type`).
    #[error("the request body must be JSON (content-type: application/json)")]
    NotJson,
    /// A query parameter is not valid (400 `bad-query`).
    #[error("the query is not valid: {0}")]
    BadQuery(String),
    /// The request is well-formed but asks for something that cannot be (400 `invalid-request`).
    #[error("{0}")]
    Invalid(String),
    /// The workspace named lies outside `--workspace-root` (403 `workspace-outside-root`).
    #[error("workspace '{0}' is outside the server's workspace root")]
    OutsideRoot(String),
    /// A stored session's workspace lies outside `--workspace-root` (403
    /// `workspace-outside-root`): it is not resumed here.
    #[error("{0}")]
    OutsideRootResume(String),
    /// The body is larger than the cap (413 `body-too-large`).
    #[error("the request body is larger than {0} bytes")]
    TooLarge(usize),
    /// No or a wrong bearer token (401 `unauthorized`).
    #[error("this route needs 'Authorization: Bearer <token>' with the server's token")]
    Unauthorized,
    /// A credential the server refuses, and why (401 `unauthorized`): a revoked or expired
    /// key, a JWT that does not verify (issue 48).
    #[error("the credential is refused: {0}")]
    BadCredentials(String),
    /// A limit of the caller's tenant (issue 48): 429 `tenant-limit` with `Retry-After`, or
    /// 413 `body-too-large` for its `body_limit`; the message names the limit.
    #[error("{message}")]
    TenantLimit {
        /// The limit's name in the config file (`turns_per_second`, `max_sessions`, ...).
        limit: &'static str,
        /// The sentence.
        message: String,
        /// Seconds to wait, at least 1.
        retry_after: u64,
    },
    /// The caller's role is below the route's (403 `forbidden`, issue 48).
    #[error("this route needs the {needed} role; the caller is {}", article(*role))]
    Forbidden {
        /// The role the route needs.
        needed: hookline_host::store::Role,
        /// The caller's.
        role: hookline_host::store::Role,
    },
    /// As many sessions are open as `--max-sessions` allows (503 `full`, `Retry-After`).
    #[error("the server already holds its limit of {0} sessions")]
    Full(usize),
    /// The hook pipeline refused more calls (503 `overloaded`, `Retry-After`).
    #[error("the hook pipeline is overloaded; retry later")]
    Overloaded,
    /// Too many requests wait for this session (429 `session-busy`, `Retry-After`).
    #[error("session '{0}' has too many requests waiting; retry later")]
    Busy(String),
    /// The server is shutting down (503 `draining`).
    #[error("the server is shutting down and takes no new sessions or turns")]
    Draining,
    /// A plugin with fail-closed guard hooks is not running (503 `plugin-down`, from `/readyz`):
    /// the message names it, its state and why.
    #[error("{0}")]
    PluginDown(String),
    /// The request took longer than the server's request timeout (408 `timeout`).
    #[error("the request took longer than the server's request timeout")]
    Timeout,
    /// Any other status a layer answered with (its reason phrase).
    #[error("{1}")]
    Status(StatusCode, String),
    /// Another node holds the session's lease (409 `session-leased`, `Retry-After`): it runs
    /// there, or its node died and the lease has not expired yet.
    #[error("{0}; retry once its lease has expired, or send the session's requests to that node")]
    Leased(String),
    /// Another node took the session over while this node held it: the request's writes were
    /// refused by the database (a newer fencing token exists) and this node dropped the session
    /// (409 `lease-lost`).
    #[error("this node lost session '{0}' to another node, so nothing of this request was stored; resume it with POST /v1/sessions/{0}/resume")]
    LeaseLost(String),
    /// The process ran out of file descriptors while storing the request (503
    /// `out-of-descriptors`, `Retry-After`): too many sessions and connections at once. Nothing
    /// is lost: the session keeps what the request did and stores it with its next write.
    #[error("the server is out of file descriptors ({0}); nothing stored is lost, and an open session keeps what this request did and stores it with its next write; retry later")]
    OutOfDescriptors(String),
    /// A session asked for a model that is not configured (400 `unknown-model`); the message
    /// names the configured ones.
    #[error("{0}")]
    UnknownModel(String),
    /// A stored session cannot be resumed as it was (409 `cannot-restore`): its model is not
    /// configured here, or its workspace is gone. Nothing ran; the session stays as stored.
    #[error("{0}")]
    CannotRestore(String),
    /// The `Idempotency-Key` header is malformed: empty, too long, not printable ASCII, or
    /// given twice (400 `bad-idempotency-key`).
    #[error("the Idempotency-Key header is not valid: {0}")]
    BadIdempotencyKey(String),
    /// The first request with this key still runs (409 `request-in-progress`, `Retry-After`).
    #[error(
        "a request with Idempotency-Key '{0}' is still running; retry later to get its answer"
    )]
    KeyInProgress(String),
    /// The key was used for another request (another route or body) within its lifetime (422
    /// `idempotency-key-reused`).
    #[error("Idempotency-Key '{0}' was already used for another request to this session; use a new key for a new request")]
    KeyReused(String),
    /// The first request with this key was cut off when the process running it stopped; it is
    /// not run again (409 `request-interrupted`, stored as its answer).
    #[error("the request with Idempotency-Key '{key}' was cut off when the process running it stopped, and it is not run again; GET /v1/sessions/{session} shows what it stored")]
    Interrupted {
        /// The key.
        key: String,
        /// The session it ran in.
        session: String,
    },
    /// This server is being replaced and hands its sessions over (issue 49): the request was
    /// not run here; send it again (307 `session-moved`, `Location` the same URL,
    /// `Connection: close`: the next connection reaches the server that replaced this one).
    #[error("this server is being replaced and hands its sessions over; send the request again to the same URL")]
    Moved,
    /// The server was replaced while this turn waited for an approval (202 `turn-moved`): the
    /// turn goes on in the new server, which asks the approval again with the same call id and
    /// deadline; its outcome shows in the session's records and events there.
    #[error("the server was replaced while this turn waited for an approval; the turn goes on in the new server, which asks the approval again with the same call id and deadline")]
    TurnMoved,
    /// The host failed (500 `internal`): not the client's doing.
    #[error("the host failed: {0}")]
    Internal(String),
}

impl ApiError {
    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::UnknownSession(_)
            | Self::NotWaiting(_)
            | Self::NoRoute(_)
            | Self::UnknownKey(_) => StatusCode::NOT_FOUND,
            Self::SessionEnded(_) => StatusCode::GONE,
            Self::BadJson(_) | Self::BadQuery(_) | Self::Invalid(_) | Self::UnknownModel(_) => {
                StatusCode::BAD_REQUEST
            }
            Self::NotJson => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::OutsideRoot(_) | Self::OutsideRootResume(_) => StatusCode::FORBIDDEN,
            Self::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Self::Unauthorized | Self::BadCredentials(_) => StatusCode::UNAUTHORIZED,
            Self::Forbidden { .. } => StatusCode::FORBIDDEN,
            Self::TenantLimit {
                limit: "body_limit",
                ..
            } => StatusCode::PAYLOAD_TOO_LARGE,
            Self::TenantLimit { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Full(_)
            | Self::Overloaded
            | Self::Draining
            | Self::OutOfDescriptors(_)
            | Self::PluginDown(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Busy(_) => StatusCode::TOO_MANY_REQUESTS,
            Self::Leased(_)
            | Self::LeaseLost(_)
            | Self::CannotRestore(_)
            | Self::KeyInProgress(_)
            | Self::Interrupted { .. } => StatusCode::CONFLICT,
            Self::BadIdempotencyKey(_) => StatusCode::BAD_REQUEST,
            Self::KeyReused(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::Timeout => StatusCode::REQUEST_TIMEOUT,
            Self::Status(status, _) => *status,
            Self::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            Self::Moved => StatusCode::TEMPORARY_REDIRECT,
            Self::TurnMoved => StatusCode::ACCEPTED,
        }
    }

    /// The stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            Self::UnknownSession(_) => "unknown-session",
            Self::SessionEnded(_) => "session-ended",
            Self::NotWaiting(_) => "not-waiting",
            Self::NoRoute(_) => "not-found",
            Self::UnknownKey(_) => "unknown-key",
            Self::BadJson(_) => "bad-json",
            Self::NotJson => "unsupported-media-type",
            Self::BadQuery(_) => "bad-query",
            Self::Invalid(_) => "invalid-request",
            Self::OutsideRoot(_) | Self::OutsideRootResume(_) => "workspace-outside-root",
            Self::TooLarge(_) => "body-too-large",
            Self::Unauthorized | Self::BadCredentials(_) => "unauthorized",
            Self::Forbidden { .. } => "forbidden",
            Self::TenantLimit {
                limit: "body_limit",
                ..
            } => "body-too-large",
            Self::TenantLimit { .. } => "tenant-limit",
            Self::Full(_) => "full",
            Self::Overloaded => "overloaded",
            Self::OutOfDescriptors(_) => "out-of-descriptors",
            Self::Busy(_) => "session-busy",
            Self::Leased(_) => "session-leased",
            Self::LeaseLost(_) => "lease-lost",
            Self::CannotRestore(_) => "cannot-restore",
            Self::UnknownModel(_) => "unknown-model",
            Self::Draining => "draining",
            Self::PluginDown(_) => "plugin-down",
            Self::Timeout => "timeout",
            Self::Status(StatusCode::METHOD_NOT_ALLOWED, _) => "method-not-allowed",
            Self::Status(StatusCode::PAYLOAD_TOO_LARGE, _) => "body-too-large",
            Self::Status(..) => "http",
            Self::BadIdempotencyKey(_) => "bad-idempotency-key",
            Self::KeyInProgress(_) => "request-in-progress",
            Self::KeyReused(_) => "idempotency-key-reused",
            Self::Interrupted { .. } => "request-interrupted",
            Self::Internal(_) => "internal",
            Self::Moved => "session-moved",
            Self::TurnMoved => "turn-moved",
        }
    }

    /// The answer for a status a layer produced without a JSON body (tower-http's timeout and
    /// body limit, axum's 405).
    pub(crate) fn from_status(status: StatusCode, limit: usize) -> Self {
        match status {
            StatusCode::PAYLOAD_TOO_LARGE => Self::TooLarge(limit),
            StatusCode::REQUEST_TIMEOUT => Self::Timeout,
            StatusCode::UNAUTHORIZED => Self::Unauthorized,
            status => Self::Status(
                status,
                format!(
                    "the server answered {}",
                    status.canonical_reason().unwrap_or("with an error")
                ),
            ),
        }
    }

    /// The error as the JSON body clients read.
    pub fn body(&self) -> serde_json::Value {
        serde_json::to_value(self.answer()).unwrap_or_default()
    }

    /// The error as the typed body ([`ErrorBody`]).
    pub fn answer(&self) -> ErrorBody {
        ErrorBody {
            error: ErrorDetail {
                code: self.code().to_owned(),
                message: sentence(&self.to_string()),
            },
        }
    }
}

/// The body of every error answer: `{"error": {"code": "...", "message": "..."}}`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// What went wrong, for a program and for a person.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct ErrorDetail {
    /// A stable kebab-case code (`unknown-session`, `bad-json`, `body-too-large`, `full`, ...;
    /// docs/serve.md, "Errors").
    pub code: String,
    /// An English sentence.
    pub message: String,
}

/// `a client`, `an operator`, `an admin`.
fn article(role: hookline_host::store::Role) -> String {
    let name = role.name();
    if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        format!("an {name}")
    } else {
        format!("a {name}")
    }
}

/// An English sentence: a capital first letter and a full stop.
fn sentence(text: &str) -> String {
    let mut chars = text.chars();
    let mut out: String = match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    };
    if !out.ends_with(['.', '?', '!']) {
        out.push('.');
    }
    out
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let mut response = (status, Json(self.answer())).into_response();
        let headers = response.headers_mut();
        if matches!(
            self,
            Self::Full(_)
                | Self::Overloaded
                | Self::OutOfDescriptors(_)
                | Self::Draining
                | Self::Busy(_)
                | Self::Leased(_)
                | Self::KeyInProgress(_)
        ) {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
        }
        if let Self::TenantLimit {
            limit, retry_after, ..
        } = &self
        {
            if *limit != "body_limit" {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after));
            }
        }
        if matches!(self, Self::Moved) {
            // The route layer sets `Location` to the request's own URL (`routes::moved`).
            headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        if matches!(self, Self::Unauthorized | Self::BadCredentials(_)) {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

impl From<RequestError> for ApiError {
    fn from(error: RequestError) -> Self {
        match error {
            RequestError::Draining => Self::Draining,
            RequestError::Full(max) => Self::Full(max),
            RequestError::Busy(key) => Self::Busy(key.to_string()),
            RequestError::Unknown(key) => Self::UnknownSession(key.to_string()),
            RequestError::Ended(key) => Self::SessionEnded(key.to_string()),
            RequestError::Moving => Self::Moved,
            RequestError::Host(error) => error.into(),
        }
    }
}

impl From<HostError> for ApiError {
    fn from(error: HostError) -> Self {
        match error {
            HostError::Pipeline(PipelineError::Overloaded) => Self::Overloaded,
            // The pipeline stops only when the server shuts down: a turn caught by the drain is
            // refused like one that came after it (its durable steps are kept; docs/serve.md, "Drain").
            HostError::Pipeline(PipelineError::Stopped) => Self::Draining,
            HostError::UnknownSession(id) => Self::UnknownSession(id),
            HostError::SessionMoved => Self::Moved,
            HostError::TurnMoved => Self::TurnMoved,
            HostError::Workspace { path, source } => {
                Self::Invalid(format!("cannot use workspace {path}: {source}"))
            }
            HostError::Gateway(_) => Self::Draining,
            error @ HostError::UnknownModel { .. } => Self::UnknownModel(format!("{error}.")),
            // A session whose stored workspace the fence now refuses: the same 403 as opening
            // one there (issue 26: never resumed elsewhere with a looser default).
            error @ HostError::Unrestorable {
                reason: Unrestorable::WorkspaceOutsideFence(_),
                ..
            } => Self::OutsideRootResume(format!("{error}.")),
            error @ HostError::Unrestorable { .. } => Self::CannotRestore(format!("{error}.")),
            HostError::Store(StoreError::Leased { session, holder }) => {
                Self::Leased(format!("session '{session}' is held by {holder}"))
            }
            // An id no store could hold is no stored session either.
            HostError::Store(StoreError::InvalidSessionId { id, .. }) => Self::UnknownSession(id),
            HostError::Store(StoreError::LeaseLost { session, .. }) => {
                Self::LeaseLost(session.to_string())
            }
            HostError::Store(error) if error.is_out_of_descriptors() => {
                Self::OutOfDescriptors(error.to_string())
            }
            other => Self::Internal(other.to_string()),
        }
    }
}

impl From<NotWaiting> for ApiError {
    fn from(error: NotWaiting) -> Self {
        Self::NotWaiting(error.call_id)
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        match rejection {
            JsonRejection::MissingJsonContentType(_) => Self::NotJson,
            rejection if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                Self::Status(StatusCode::PAYLOAD_TOO_LARGE, rejection.body_text())
            }
            // axum's text names the field: "Failed to deserialize the JSON body into the
            // target type: text: missing field `text` at line 1 column 2".
            rejection => Self::BadJson(rejection.body_text()),
        }
    }
}

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> Self {
        Self::BadQuery(rejection.body_text())
    }
}

impl From<PathRejection> for ApiError {
    fn from(rejection: PathRejection) -> Self {
        Self::Invalid(rejection.body_text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_a_client_can_cause_is_a_4xx_or_a_503_with_retry_after() {
        let cases = [
            (ApiError::UnknownSession("s".into()), 404, false),
            (ApiError::BadJson("text: missing field".into()), 400, false),
            (ApiError::TooLarge(10), 413, false),
            (ApiError::Full(3), 503, true),
            (ApiError::Overloaded, 503, true),
            (ApiError::Draining, 503, true),
            (ApiError::OutOfDescriptors("open".into()), 503, true),
            (ApiError::Busy("s".into()), 429, true),
            (ApiError::Unauthorized, 401, false),
        ];
        for (error, status, retry) in cases {
            let code = error.code();
            let response = error.into_response();
            assert_eq!(response.status().as_u16(), status, "{code}");
            assert_eq!(
                response.headers().contains_key(header::RETRY_AFTER),
                retry,
                "{code}"
            );
        }
    }

    #[test]
    fn a_server_handing_over_answers_new_work_307_closing_and_a_moved_turn_202() {
        let moved = ApiError::from(RequestError::Moving).into_response();
        assert_eq!(moved.status(), StatusCode::TEMPORARY_REDIRECT);
        assert_eq!(moved.headers()[header::CONNECTION], "close");
        let moved = ApiError::from(HostError::SessionMoved);
        assert_eq!(moved.code(), "session-moved");
        let turn = ApiError::from(RequestError::Host(HostError::TurnMoved));
        assert_eq!(
            (turn.status(), turn.code()),
            (StatusCode::ACCEPTED, "turn-moved")
        );
    }

    #[test]
    fn an_overloaded_pipeline_inside_a_host_error_is_a_503() {
        let error = ApiError::from(RequestError::Host(HostError::Pipeline(
            PipelineError::Overloaded,
        )));
        assert_eq!(error.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(error.code(), "overloaded");
    }

    #[test]
    fn a_stopped_pipeline_is_the_drain_not_an_internal_error() {
        let error = ApiError::from(RequestError::Host(HostError::Pipeline(
            PipelineError::Stopped,
        )));
        assert_eq!(error.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(error.code(), "draining");
    }

    #[test]
    fn a_store_out_of_file_descriptors_is_a_503_not_a_500() {
        let io = |code| {
            HostError::Store(StoreError::Io {
                path: "/s/records".into(),
                action: "open",
                source: std::io::Error::from_raw_os_error(code),
            })
        };
        for code in [23, 24] {
            let error = ApiError::from(io(code));
            assert_eq!(error.status(), StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(error.code(), "out-of-descriptors");
        }
        // Any other I/O failure stays the host's own (a full disk is no client's doing).
        let other = ApiError::from(io(28));
        assert_eq!(other.code(), "internal");
    }

    #[test]
    fn lease_conflicts_are_409s_that_name_the_session() {
        let leased = ApiError::from(HostError::Store(StoreError::Leased {
            session: "s1".into(),
            holder: "node a for 900 ms more".into(),
        }));
        assert_eq!(leased.status(), StatusCode::CONFLICT);
        assert_eq!(leased.code(), "session-leased");
        assert_eq!(
            leased.body()["error"]["message"],
            "Session 's1' is held by node a for 900 ms more; retry once its lease has expired, \
             or send the session's requests to that node."
        );
        let lost = ApiError::from(RequestError::Host(HostError::Store(
            StoreError::LeaseLost {
                session: "s1".into(),
                token: 3,
            },
        )));
        assert_eq!(lost.status(), StatusCode::CONFLICT);
        assert_eq!(lost.code(), "lease-lost");
        assert!(!lost
            .into_response()
            .headers()
            .contains_key(header::RETRY_AFTER));
    }

    #[test]
    fn messages_are_sentences() {
        let body = ApiError::UnknownSession("abc".into()).body();
        assert_eq!(body["error"]["message"], "No open session is called 'abc'.");
        assert_eq!(body["error"]["code"], "unknown-session");
    }
}
