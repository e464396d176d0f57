//! Traces and logs of the `hookline` command line (issue 24 item 3, docs/observability.md).
//!
//! - **Traces**: when the standard OpenTelemetry variables ask for them
//!   (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
//!   `OTEL_EXPORTER_OTLP_PROTOCOL`, `OTEL_SERVICE_NAME`, `OTEL_TRACES_SAMPLER`), the runtime's
//!   `tracing` spans go to an OTLP/HTTP (protobuf) endpoint through a batch processor; W3C
//!   `traceparent` is the propagator (HTTP requests continue it, plugin requests carry it).
//! - **Logs**: `RUST_LOG` (an `EnvFilter`) writes log lines to stderr.
//!
//! With neither, no subscriber is installed: every span and event of the runtime is disabled at
//! its call site, which costs one load of the global level per site.
//!
//! [`Telemetry::shutdown`] flushes the spans still queued (bounded): the binary calls it after
//! the command returns, so `hookline serve` flushes once its drain is done.

mod client;
mod settings;

use std::collections::HashMap;
use std::time::Duration;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::filter::{EnvFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

use settings::Settings;
pub(crate) use settings::TelemetryError;

/// How long one export may take (OpenTelemetry's default `OTEL_EXPORTER_OTLP_TIMEOUT`).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the flush at exit may take.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// The service name when `OTEL_SERVICE_NAME` (or `service.name` in `OTEL_RESOURCE_ATTRIBUTES`)
/// gives none.
const DEFAULT_SERVICE_NAME: &str = "hookline";

/// What was installed; flush it with [`Telemetry::shutdown`].
#[must_use = "spans are flushed by Telemetry::shutdown"]
pub(crate) struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Sets up what the environment asks for.
    ///
    /// # Errors
    /// [`TelemetryError`]: a protocol or exporter other than OTLP over HTTP/protobuf, a bad
    /// `RUST_LOG`, or an exporter that cannot be built.
    pub(crate) fn from_env() -> Result<Self, TelemetryError> {
        let settings = Settings::read(|name| std::env::var(name).ok())?;
        if !settings.traces && settings.logs.is_none() {
            return Ok(Self { provider: None });
        }
        let provider = if settings.traces {
            Some(provider(settings.service_name_given)?)
        } else {
            None
        };
        let traces = provider.as_ref().map(|provider| {
            tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("hookline"))
                // What a span costs on the hook path: no busy/idle timing, thread or source
                // location attributes, only the fields the runtime sets.
                .with_tracked_inactivity(false)
                .with_threads(false)
                .with_location(false)
                .with_target(false)
                // The runtime's own spans: hookline_server, hookline_host, hookline_actors...
                .with_filter(Targets::new().with_target("hookline", tracing::Level::INFO))
        });
        let logs = match settings.logs {
            Some(filter) => Some(
                tracing_subscriber::fmt::layer()
                    .with_writer(std::io::stderr)
                    .with_filter(
                        EnvFilter::try_new(&filter)
                            .map_err(|e| TelemetryError::Logs(filter, e.to_string()))?,
                    ),
            ),
            None => None,
        };
        tracing_subscriber::registry()
            .with(traces)
            .with(logs)
            .try_init()
            .map_err(|e| TelemetryError::Setup(e.to_string()))?;
        if provider.is_some() {
            opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
            hookline_host::trace::set_traceparent_source(current_traceparent);
        }
        Ok(Self { provider })
    }

    /// Flushes the spans still queued and stops the exporter, within a bound. A failure is
    /// reported on stderr: the command's own outcome stands.
    pub(crate) fn shutdown(self) {
        if let Some(provider) = self.provider {
            if let Err(error) = provider.shutdown_with_timeout(SHUTDOWN_WAIT) {
                eprintln!("hookline: traces were not all exported: {error}");
            }
        }
    }
}

/// The tracer provider: OTLP over HTTP/protobuf, batched, with the SDK's sampler from
/// `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG`.
fn provider(service_name_given: bool) -> Result<SdkTracerProvider, TelemetryError> {
    let client = client::OtlpHttp::new(EXPORT_TIMEOUT).map_err(TelemetryError::Setup)?;
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_timeout(EXPORT_TIMEOUT)
        .with_http_client(client)
        .build()
        .map_err(|e| TelemetryError::Setup(e.to_string()))?;
    let mut resource = Resource::builder();
    if !service_name_given {
        resource = resource.with_service_name(DEFAULT_SERVICE_NAME);
    }
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build())
}

/// The current span's context as a W3C `traceparent`, for requests to plugin processes and
/// model providers.
fn current_traceparent() -> Option<String> {
    let span = tracing::Span::current();
    if span.is_disabled() {
        return None;
    }
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&span.context(), &mut carrier);
    carrier.remove("traceparent")
}
