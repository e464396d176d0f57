//! Counts the pipeline's hook calls during a soak. The coordinator counts every call it launches
//! in the `hookline_hook_calls_total` metric (the counter `GET /metrics` shows); the soak
//! installs a global `metrics` recorder that keeps that one counter in an atomic and drops every
//! other metric, so counting costs one atomic add per batch and no memory grows with the load.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};

/// The metric the coordinator increments per launched hook call.
const HOOK_CALLS: &str = "hookline_hook_calls_total";

/// The process's hook call counter: `None` when another global recorder was installed first
/// (an embedding program's, or `hookline serve`'s), in which case the soak cannot count calls.
pub(super) fn hook_calls() -> Option<Arc<AtomicU64>> {
    static CALLS: OnceLock<Option<Arc<AtomicU64>>> = OnceLock::new();
    CALLS
        .get_or_init(|| {
            let calls = Arc::new(AtomicU64::new(0));
            let recorder = HookCalls {
                calls: calls.clone(),
            };
            metrics::set_global_recorder(recorder).ok().map(|()| calls)
        })
        .clone()
}

/// Hook calls counted so far, or `None` when they cannot be counted.
pub(super) fn count(calls: Option<&Arc<AtomicU64>>) -> Option<u64> {
    calls.map(|c| c.load(Ordering::Relaxed))
}

/// A recorder of the hook call counter alone.
struct HookCalls {
    calls: Arc<AtomicU64>,
}

impl Recorder for HookCalls {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        if key.name() == HOOK_CALLS {
            Counter::from_arc(self.calls.clone())
        } else {
            Counter::noop()
        }
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hook_calls_are_counted() {
        let calls = Arc::new(AtomicU64::new(0));
        let recorder = HookCalls {
            calls: calls.clone(),
        };
        metrics::with_local_recorder(&recorder, || {
            metrics::counter!(HOOK_CALLS, "hook" => "on_prompt").increment(3);
            metrics::counter!(HOOK_CALLS, "hook" => "on_tool_call").increment(2);
            metrics::counter!("hookline_events_dropped_total").increment(7);
        });
        assert_eq!(count(Some(&calls)), Some(5));
        assert_eq!(count(None), None);
    }
}
