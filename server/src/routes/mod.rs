//! The router: `/healthz`, `/readyz`, `/metrics`, and the versioned API under `/v1`
//! (docs/serve.md). Layers, outermost first: tracing (a span per request continuing the client's
//! `traceparent`, docs/observability.md), request counting, error shaping (every
//! error answer is the JSON error shape), the request timeout, the body cap, then the root auth
//! layer (`auth::authenticate`, fail closed: every route but `/healthz` and the console's page
//! gets a principal or a 401), and each handler's role extractor (403).

mod answers;
pub(crate) mod approvals;
pub(crate) mod events;
mod idempotency;
pub(crate) mod sessions;
pub(crate) mod socket;
mod socket_close;
pub(crate) mod turn;

pub(crate) use answers::{
    ApprovalAnswer, ArchiveView, CommandAnswer, EventsAnswer, Health, SessionView, SessionsList,
    TurnAnswer, TurnDone,
};
pub(crate) use approvals::ApprovalsList;
pub(crate) use sessions::{ApprovalBody, CommandBody, OpenBody};
pub(crate) use socket::ClientMessage as SocketRequest;
pub(crate) use turn::TurnBody;

use crate::auth::{AdminCaller, Caller};
use crate::openapi::errors::{NeedsAdmin, Unauthorized};
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

use answers::HealthState;
pub(crate) use idempotency::Keys;

use super::metrics::{count_requests, refresh};
use super::{auth, ApiError, AppState, ErrorBody, PluginsView};

/// How long `/readyz` waits for the session store to answer.
const STORE_PING_WAIT: Duration = Duration::from_secs(2);

/// The whole API over `state`.
pub(crate) fn router(state: AppState, request_timeout: Duration) -> Router {
    let limit = state.body_limit;
    let v1 = Router::new()
        .route("/plugins", get(plugins))
        .route("/sessions", post(sessions::open).get(sessions::list))
        .route(
            "/sessions/{id}",
            get(sessions::show).delete(sessions::close),
        )
        .route("/sessions/{id}/resume", post(sessions::resume))
        .route("/sessions/{id}/archive", get(sessions::archive))
        .route("/sessions/{id}/turns", post(turn::turn))
        .route(
            "/sessions/{id}/approvals/{call_id}",
            post(sessions::approve),
        )
        .route("/sessions/{id}/commands", post(sessions::command))
        .route("/sessions/{id}/ws", get(socket::upgrade))
        .route("/events", get(events::feed))
        .route("/approvals", get(approvals::list))
        .route("/whoami", get(auth::whoami::show))
        .route(
            "/keys",
            get(auth::keys_api::list).post(auth::keys_api::create),
        )
        .route("/keys/{id}", axum::routing::delete(auth::keys_api::revoke))
        .route("/openapi.json", get(openapi));
    let authenticate = middleware::from_fn_with_state(state.clone(), auth::authenticate);
    Router::new()
        .route("/healthz", get(healthz))
        .merge(super::console::routes())
        .nest("/v1", v1)
        .route("/readyz", get(readyz))
        .route("/metrics", get(prometheus))
        .fallback(no_route)
        .layer(authenticate)
        .with_state(state)
        .layer(DefaultBodyLimit::max(limit))
        .layer(RequestBodyLimitLayer::new(limit))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            request_timeout,
        ))
        .layer(middleware::from_fn(move |request, next| {
            shape_errors(request, next, limit)
        }))
        .layer(middleware::from_fn(count_requests))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(crate::trace::request_span)
                .on_response(crate::trace::record_response),
        )
}

/// `GET /healthz`: the process answers.
#[utoipa::path(
    get, path = "/healthz", tag = "health", security(()),
    responses((status = 200, description = "The process answers; no token needed.", body = Health))
)]
pub(crate) async fn healthz() -> Json<Health> {
    Json(Health {
        status: HealthState::Ok,
    })
}

/// `GET /readyz`: plugins loaded, every fail-closed plugin running, the store writable and
/// (PostgreSQL) answering; 503 while draining.
#[utoipa::path(
    get, path = "/readyz", tag = "health",
    responses(
        (status = 200, description = "Plugins are loaded, every fail-closed plugin runs, and the store is writable.", body = Health),
        Unauthorized,
        (status = 503, description = "Draining (`draining`), a plugin that fails closed is not running (`plugin-down`, naming it), or the store cannot be written or does not answer.", body = ErrorBody),
    )
)]
pub(crate) async fn readyz(
    _: Caller,
    State(state): State<AppState>,
) -> Result<Json<Health>, ApiError> {
    state.admit()?;
    // A fail-closed plugin that is down denies its guard hooks: every turn that reaches one is
    // refused, so this server is not ready for work (issue 46 item 2).
    if let Some(down) = state.plugins.fail_closed_down() {
        return Err(ApiError::PluginDown(down));
    }
    let dir = state.gateway.store().root().to_path_buf();
    // A store that cannot take a file cannot take a record either.
    let writable = tokio::task::spawn_blocking(move || tempfile::tempfile_in(dir).is_ok())
        .await
        .unwrap_or(false);
    if !writable {
        return Err(ApiError::Status(
            StatusCode::SERVICE_UNAVAILABLE,
            "the store is not writable".into(),
        ));
    }
    // A shared store (PostgreSQL) must answer too, within a bound.
    let ping = tokio::time::timeout(STORE_PING_WAIT, state.gateway.session_store().ping()).await;
    if !matches!(ping, Ok(Ok(()))) {
        return Err(ApiError::Status(
            StatusCode::SERVICE_UNAVAILABLE,
            "the session store does not answer".into(),
        ));
    }
    Ok(Json(Health {
        status: HealthState::Ready,
    }))
}

/// `GET /metrics`: Prometheus text.
#[utoipa::path(
    get, path = "/metrics", tag = "health",
    responses(
        (status = 200, description = "The Prometheus text exposition (docs/serve.md, \"Metrics\").", body = String, content_type = "text/plain"),
        Unauthorized,
        NeedsAdmin,
    )
)]
pub(crate) async fn prometheus(_: AdminCaller, State(state): State<AppState>) -> Response {
    refresh(&state.gateway, &state.plugins).await;
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
        .into_response()
}

/// `GET /v1/plugins`.
#[utoipa::path(
    get, path = "/v1/plugins", tag = "server",
    responses(
        (status = 200, description = "The plugins the server runs and what loading them noted.", body = PluginsView),
        Unauthorized,
        NeedsAdmin,
    )
)]
pub(crate) async fn plugins(_: AdminCaller, State(state): State<AppState>) -> Json<PluginsView> {
    Json(state.plugins.now())
}

/// `GET /v1/openapi.json`: this API's OpenAPI document (docs/openapi.json).
#[utoipa::path(
    get, path = "/v1/openapi.json", tag = "server",
    responses(
        (status = 200, description = "The OpenAPI 3.1 document, as docs/openapi.json holds it.", body = Object),
        Unauthorized,
    )
)]
pub(crate) async fn openapi(_: Caller) -> Response {
    crate::openapi::answer()
}

async fn no_route(request: Request) -> ApiError {
    ApiError::NoRoute(format!("{} {}", request.method(), request.uri().path()))
}

/// Gives every error answer the JSON error shape: layers (the timeout, the body cap, axum's
/// 405) answer with an empty or plain body. A 307 `session-moved` (a server handing its
/// sessions over, issue 49) points at the request's own URL: sent again, it reaches the server
/// that replaced this one.
async fn shape_errors(request: Request, next: Next, limit: usize) -> Response {
    let own_url = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned());
    let mut response = next.run(request).await;
    let status = response.status();
    if status == StatusCode::TEMPORARY_REDIRECT {
        let location = own_url.and_then(|url| header::HeaderValue::from_str(&url).ok());
        if let Some(location) = location {
            response
                .headers_mut()
                .entry(header::LOCATION)
                .or_insert(location);
        }
    }
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if (status.is_client_error() || status.is_server_error()) && !json {
        let (parts, _) = response.into_parts();
        let mut shaped = ApiError::from_status(status, limit).into_response();
        for (name, value) in &parts.headers {
            if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
                shaped.headers_mut().insert(name.clone(), value.clone());
            }
        }
        return shaped;
    }
    response
}
