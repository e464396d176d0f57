//! The server's metrics (docs/serve.md, "Metrics"): the Prometheus recorder `hookline serve`
//! installs as the process's global recorder, so the pipeline's own counters and histograms
//! (`hookline_actors::metrics`: calls per hook and per plugin and hook, skips by plugin, hook and
//! reason, latency per plugin and hook; `hookline_events_dropped_total`) appear on `GET /metrics`
//! beside the server's: open sessions, queue depths, turns, turn latency and HTTP requests.

use std::sync::{Arc, OnceLock, PoisonError};
use std::time::Duration;

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tokio::sync::watch;

use crate::PluginsView;
use hookline_host::gateway::{Activity, Gateway};
use hookline_messages::model::UsageTotals;
use hookline_messages::user::StopReason;

/// How often histograms are drained and the gauges refreshed.
const UPKEEP_EVERY: Duration = Duration::from_secs(5);

/// How long a refresh waits for the pipeline's shards to say how many calls they admitted (a
/// shard's mailbox may be full under load; the gauge then keeps its last value).
const ADMITTED_WAIT: Duration = Duration::from_millis(500);

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// The process's Prometheus recorder, installed as the global recorder on first use. When
/// another global recorder is installed already, a recorder of our own still renders the
/// server's view (without the other recorder's metrics).
pub fn install_recorder() -> PrometheusHandle {
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new().build_recorder();
            let handle = recorder.handle();
            if metrics::set_global_recorder(recorder).is_err() {
                tracing::warn!("a metrics recorder was installed already; /metrics shows less");
            }
            describe();
            handle
        })
        .clone()
}

fn describe() {
    hookline_actors::metrics::describe();
    metrics::describe_gauge!("hookline_sessions_open", "Sessions open in the gateway.");
    metrics::describe_gauge!(
        "hookline_sessions_in_turn",
        "Sessions running a turn or a command."
    );
    metrics::describe_gauge!(
        "hookline_sessions_waiting_approval",
        "Sessions whose turn waits for an operator's approval."
    );
    metrics::describe_gauge!(
        "hookline_session_requests_queued",
        "Requests waiting in the sessions' inboxes, summed."
    );
    metrics::describe_gauge!(
        "hookline_session_inbox_deepest",
        "Requests waiting in the fullest session inbox."
    );
    metrics::describe_gauge!(
        "hookline_session_inbox_capacity",
        "Requests one session's inbox holds."
    );
    metrics::describe_gauge!(
        "hookline_pipeline_calls_admitted",
        "Hook calls the pipeline admitted (running or queued behind their session)."
    );
    metrics::describe_gauge!(
        "hookline_pipeline_calls_bound",
        "Hook calls the pipeline admits at once before refusing more."
    );
    metrics::describe_gauge!(
        "hookline_event_queue_depth",
        "Queued gateway events waiting for delivery."
    );
    metrics::describe_gauge!(
        "hookline_event_queue_capacity",
        "Queued gateway events the queue holds before dropping."
    );
    metrics::describe_gauge!(
        "hookline_process_resident_bytes",
        "Resident memory of the server process."
    );
    metrics::describe_gauge!(
        "hookline_plugin_state",
        "1 for each loaded plugin's state now (loaded, restarting, exited, suspended), 0 for its other states."
    );
    metrics::describe_counter!(
        "hookline_model_tokens_total",
        "Model tokens the provider reported, by model and direction (input, output)."
    );
    metrics::describe_counter!(
        "hookline_turns_total",
        "User turns finished, by stop reason and tenant."
    );
    metrics::describe_histogram!(
        "hookline_turn_latency_seconds",
        "Time from a turn's request to its answer, by tenant."
    );
    metrics::describe_counter!(
        "hookline_http_requests_total",
        "HTTP requests answered, by route and status."
    );
    metrics::describe_gauge!(
        "hookline_http_requests_in_flight",
        "HTTP requests being answered."
    );
}

/// Refreshes the gauges now: sessions, queue depths, memory, each plugin's state.
pub(crate) async fn refresh(gateway: &Gateway, plugins: &PluginsView) {
    plugins.record_states();
    let sessions = gateway.sessions();
    let count = |activity| sessions.iter().filter(|s| s.activity == activity).count();
    metrics::gauge!("hookline_sessions_open").set(sessions.len() as f64);
    metrics::gauge!("hookline_sessions_in_turn").set(count(Activity::Turn) as f64);
    metrics::gauge!("hookline_sessions_waiting_approval").set(count(Activity::Approval) as f64);
    refresh_queues(gateway).await;
    if let Some(bytes) = resident_bytes() {
        metrics::gauge!("hookline_process_resident_bytes").set(bytes as f64);
    }
}

/// The queue depths: the sessions' inboxes, the pipeline's admission, the gateway event queue.
async fn refresh_queues(gateway: &Gateway) {
    let queued = gateway.queued_requests();
    metrics::gauge!("hookline_session_requests_queued").set(queued.total as f64);
    metrics::gauge!("hookline_session_inbox_deepest").set(queued.deepest as f64);
    metrics::gauge!("hookline_session_inbox_capacity").set(gateway.limits().inbox as f64);
    let events = gateway.pipeline().events();
    metrics::gauge!("hookline_event_queue_depth").set(events.queued() as f64);
    metrics::gauge!("hookline_event_queue_capacity").set(events.queue_capacity() as f64);
    // A stopped pipeline (a drain) or one too busy to answer in time keeps the last figures.
    if let Ok(Ok(admitted)) =
        tokio::time::timeout(ADMITTED_WAIT, gateway.pipeline().admitted()).await
    {
        metrics::gauge!("hookline_pipeline_calls_admitted").set(admitted.calls as f64);
        metrics::gauge!("hookline_pipeline_calls_bound").set(admitted.bound as f64);
    }
}

/// The process's resident memory (Linux: `VmRSS` of `/proc/self/status`).
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Drains histograms and refreshes the gauges until `stop`.
pub(crate) fn spawn_upkeep(
    handle: PrometheusHandle,
    gateway: Gateway,
    plugins: std::sync::Arc<PluginsView>,
    mut stop: watch::Receiver<bool>,
) {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(UPKEEP_EVERY) => {}
                _ = stop.wait_for(|stop| *stop) => return,
            }
            handle.run_upkeep();
            refresh(&gateway, &plugins).await;
        }
    });
}

/// The tenant label of a session's series for a tenant that is not configured.
pub(crate) const OTHER_TENANT: &str = "other";

/// The most tenant names labels are kept for: a bound on the series, whatever is configured.
const MAX_LABELLED_TENANTS: usize = 256;

/// The configured tenants: the names that label series as themselves (issue 48). Process-wide
/// as the recorder is; names are only added (a process runs one server, tests several).
static LABELLED: std::sync::RwLock<Vec<Arc<str>>> = std::sync::RwLock::new(Vec::new());

/// Labels series with the tenants `names` (the configured ones) besides `default`.
pub(crate) fn label_tenants<'a>(names: impl IntoIterator<Item = &'a str>) {
    let mut labelled = LABELLED.write().unwrap_or_else(PoisonError::into_inner);
    for name in names {
        if labelled.len() >= MAX_LABELLED_TENANTS {
            tracing::warn!(
                "more than {MAX_LABELLED_TENANTS} tenants: the rest are labelled '{OTHER_TENANT}'"
            );
            return;
        }
        if !labelled.iter().any(|n| &**n == name) {
            labelled.push(name.into());
        }
    }
}

/// The `tenant` label for `tenant`: itself when it is `default` or configured, else
/// [`OTHER_TENANT`], so a tenant named only by a key or a JWT claim adds no series
/// (cardinality stays bounded by the configuration).
pub(crate) fn tenant_label(tenant: &str) -> Arc<str> {
    if tenant == crate::auth::DEFAULT_TENANT {
        return Arc::from(crate::auth::DEFAULT_TENANT);
    }
    let labelled = LABELLED.read().unwrap_or_else(PoisonError::into_inner);
    labelled
        .iter()
        .find(|n| &***n == tenant)
        .cloned()
        .unwrap_or_else(|| Arc::from(OTHER_TENANT))
}

/// A finished turn of a session of `tenant` (its owner's; `default` for a session nobody owns).
pub(crate) fn turn_finished(stop_reason: Option<StopReason>, took: Duration, tenant: &str) {
    let reason = stop_reason
        .and_then(|r| serde_json::to_value(r).ok())
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_else(|| "refused".to_owned());
    let tenant = tenant_label(tenant);
    metrics::counter!("hookline_turns_total", "stop_reason" => reason, "tenant" => tenant.to_string())
        .increment(1);
    metrics::histogram!("hookline_turn_latency_seconds", "tenant" => tenant.to_string())
        .record(took.as_secs_f64());
}

/// A turn's or a command's reported token usage, by the model that answered (`default` when
/// the provider names none) and direction (issue 21, issue 34). Counts the provider did not
/// report add nothing.
pub(crate) fn model_tokens(model: Option<&str>, usage: Option<&UsageTotals>) {
    let Some(usage) = usage else { return };
    let model = model.unwrap_or("default");
    for (direction, count) in [
        ("input", usage.input_tokens),
        ("output", usage.output_tokens),
    ] {
        if let Some(count) = count {
            metrics::counter!(
                "hookline_model_tokens_total",
                "model" => model.to_owned(),
                "direction" => direction
            )
            .increment(count);
        }
    }
}

/// Counts every request by its route (the pattern, not the path: ids stay out of labels) and
/// status.
pub(crate) async fn count_requests(request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |p| p.as_str().to_owned());
    let gauge = metrics::gauge!("hookline_http_requests_in_flight");
    gauge.increment(1.0);
    let response = next.run(request).await;
    gauge.decrement(1.0);
    metrics::counter!(
        "hookline_http_requests_total",
        "route" => route,
        "status" => response.status().as_u16().to_string()
    )
    .increment(1);
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenants_label_as_themselves_only_when_configured_and_the_labels_stay_bounded() {
        label_tenants(["unit-acme"]);
        assert_eq!(&*tenant_label("unit-acme"), "unit-acme");
        assert_eq!(&*tenant_label("default"), "default");
        assert_eq!(&*tenant_label("unit-unlisted"), OTHER_TENANT);
        let many: Vec<String> = (0..2 * MAX_LABELLED_TENANTS)
            .map(|i| format!("unit-{i}"))
            .collect();
        label_tenants(many.iter().map(String::as_str));
        let labelled = many
            .iter()
            .filter(|name| &*tenant_label(name) != OTHER_TENANT)
            .count();
        assert!(
            labelled < MAX_LABELLED_TENANTS,
            "{labelled} tenants labelled"
        );
        assert_eq!(&*tenant_label("unit-acme"), "unit-acme");
    }
}
