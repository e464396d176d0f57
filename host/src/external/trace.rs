//! The trace context an external plugin receives: each request to a plugin process carries the
//! W3C `traceparent` of the host's span for that round trip (docs/protocol.md, "Trace context"),
//! so a plugin that starts its own spans under it joins the turn's trace.
//!
//! The runtime does not depend on OpenTelemetry: it only knows `tracing` spans. Whoever exports
//! traces (`hookline serve` and the CLI, docs/observability.md) installs the function that reads
//! the current span's context as a `traceparent` string, once per process. Without one, requests
//! carry no `traceparent` and nothing here costs more than one atomic load.

use std::sync::OnceLock;

/// Reads the current span's W3C trace context (`00-<trace id>-<span id>-<flags>`), or `None`
/// when it has none.
pub type TraceparentSource = fn() -> Option<String>;

static SOURCE: OnceLock<TraceparentSource> = OnceLock::new();

/// Installs how requests to plugin processes read their `traceparent`. The first call wins;
/// returns whether this one did.
pub fn set_traceparent_source(source: TraceparentSource) -> bool {
    SOURCE.set(source).is_ok()
}

/// The current span's `traceparent`, when a source is installed and the span has a context.
pub(crate) fn traceparent() -> Option<String> {
    SOURCE.get().and_then(|source| source())
}
