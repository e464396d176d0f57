//! The span of each HTTP request (`http request`, named `METHOD /route` in OpenTelemetry;
//! docs/observability.md): a tower-http [`TraceLayer`](tower_http::trace::TraceLayer) whose
//! spans continue the W3C `traceparent` a client sent, and carry the method, the matched route,
//! the path and the answer's status.
//!
//! Requests sent over a session's WebSocket get a span each ([`socket_span`], `WS <request>`),
//! a child of the `traceparent` the message carries, else of the upgrade request's span.
//!
//! The context is read through OpenTelemetry's global propagator, which `hookline serve` sets
//! only when it exports traces; otherwise the spans are disabled and nothing is parsed.

use std::collections::HashMap;
use std::time::Duration;

use axum::extract::MatchedPath;
use axum::http::{Request, Response};
use opentelemetry::trace::TraceContextExt as _;
use opentelemetry::Context;
use opentelemetry_http::HeaderExtractor;
use tracing::field::Empty;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The span of one request, a child of the trace the client's `traceparent` names, if any.
pub(crate) fn request_span<B>(request: &Request<B>) -> Span {
    let method = request.method().as_str();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("", MatchedPath::as_str);
    let span = tracing::info_span!(
        "http request",
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "server",
        otel.status_code = Empty,
        http.request.method = method,
        http.route = route,
        url.path = request.uri().path(),
        http.response.status_code = Empty,
    );
    if !span.is_disabled() {
        let parent = opentelemetry::global::get_text_map_propagator(|propagator| {
            propagator.extract(&HeaderExtractor(request.headers()))
        });
        // A request without a (valid) traceparent starts a trace of its own.
        let _ = span.set_parent(parent);
    }
    span
}

/// Records the answer's status on the request's span; a server error marks the span failed.
pub(crate) fn record_response<B>(response: &Response<B>, _latency: Duration, span: &Span) {
    let status = response.status();
    span.record("http.response.status_code", status.as_u16());
    if status.is_server_error() {
        span.record("otel.status_code", "ERROR");
    }
}

/// The context the requests of a socket continue when they carry none: the upgrade request's
/// span (the current one), which ends when the socket opens. `None` when spans are off.
pub(crate) fn upgrade_context() -> Option<Context> {
    let span = Span::current();
    (!span.is_disabled()).then(|| span.context())
}

/// The span of one request sent over a session's WebSocket (`request`: `turn`, `command`, ...),
/// under which it runs: a child of the message's own `traceparent` when it carries a valid one,
/// else of the upgrade request (`upgrade`, from [`upgrade_context`]).
pub(crate) fn socket_span(
    request: &str,
    upgrade: Option<&Context>,
    traceparent: Option<&str>,
) -> Span {
    let span = tracing::info_span!(
        "socket request",
        otel.name = %format_args!("WS {request}"),
        otel.kind = "server",
        request,
    );
    if span.is_disabled() {
        return span;
    }
    let carried = traceparent
        .map(|traceparent| {
            let carrier = HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
            opentelemetry::global::get_text_map_propagator(|propagator| {
                propagator.extract(&carrier)
            })
        })
        .filter(|context| context.span().span_context().is_valid());
    if let Some(parent) = carried.or_else(|| upgrade.cloned()) {
        let _ = span.set_parent(parent);
    }
    span
}
