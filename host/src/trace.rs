//! The trace context the runtime hands on: each request to a plugin process (docs/protocol.md,
//! "Trace context") and each request to a model provider (`hookline-providers`) carries the W3C
//! `traceparent` of the host's span it is sent under, so a plugin, a provider or a proxy that
//! traces joins the turn's trace (docs/observability.md).
//!
//! The runtime does not depend on OpenTelemetry: it only knows `tracing` spans. Whoever exports
//! traces (`hookline serve` and the CLI) installs the function that reads the current span's
//! context as a `traceparent` string, once per process. Without one, requests carry no
//! `traceparent` and nothing here costs more than one atomic load.

use std::sync::OnceLock;

/// Reads the current span's W3C trace context (`00-<trace id>-<span id>-<flags>`), or `None`
/// when it has none.
pub type TraceparentSource = fn() -> Option<String>;

static SOURCE: OnceLock<TraceparentSource> = OnceLock::new();

/// Installs how outgoing requests read their `traceparent`. The first call wins; returns
/// whether this one did.
pub fn set_traceparent_source(source: TraceparentSource) -> bool {
    SOURCE.set(source).is_ok()
}

/// The current span's `traceparent`, when a source is installed and the span has a context.
pub fn traceparent() -> Option<String> {
    SOURCE.get().and_then(|source| source())
}
