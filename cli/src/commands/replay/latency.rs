//! Each plugin's latency per hook during a replay. Every plugin actor records its hook calls in
//! the `hookline_hook_seconds` histogram, labelled by plugin and hook; the replay installs a
//! global `metrics` recorder that keeps that one histogram in an HDR histogram per (plugin, hook)
//! and drops every other metric. It must be installed before the pipeline starts (the actors
//! resolve their handles then).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use hdrhistogram::Histogram as Hdr;
use hookline_actors::metrics::HOOK_SECONDS;
use metrics::{
    Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit,
};
use serde::Serialize;

/// One plugin's latency at one hook.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct HookLatency {
    pub(super) plugin: String,
    pub(super) hook: String,
    /// Calls timed (the plugin actors time one inline batch in 16, and every call that awaits).
    pub(super) samples: u64,
    pub(super) p50_us: u64,
    pub(super) p99_us: u64,
}

/// The histograms by (plugin, hook).
pub(super) type Table = Mutex<BTreeMap<(String, String), Arc<Cell>>>;

/// The process's latency table: `None` when another global recorder was installed first.
pub(super) fn table() -> Option<Arc<Table>> {
    static TABLE: OnceLock<Option<Arc<Table>>> = OnceLock::new();
    TABLE
        .get_or_init(|| {
            let table = Arc::new(Table::default());
            let recorder = Latencies {
                table: table.clone(),
            };
            metrics::set_global_recorder(recorder).ok().map(|()| table)
        })
        .clone()
}

/// Empties every histogram (a replay reports its own calls only).
pub(super) fn reset(table: &Table) {
    for cell in lock(table).values() {
        cell.hdr().reset();
    }
}

/// The latencies recorded so far, by plugin then hook; hooks never called are left out.
pub(super) fn read(table: &Table) -> Vec<HookLatency> {
    lock(table)
        .iter()
        .filter_map(|((plugin, hook), cell)| {
            let hdr = cell.hdr();
            (!hdr.is_empty()).then(|| HookLatency {
                plugin: plugin.clone(),
                hook: hook.clone(),
                samples: hdr.len(),
                p50_us: hdr.value_at_quantile(0.5),
                p99_us: hdr.value_at_quantile(0.99),
            })
        })
        .collect()
}

fn lock(table: &Table) -> std::sync::MutexGuard<'_, BTreeMap<(String, String), Arc<Cell>>> {
    table.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One histogram, in microseconds (1 µs to 60 s, 3 significant digits).
pub(super) struct Cell(Mutex<Hdr<u64>>);

impl Cell {
    fn new() -> Option<Self> {
        Hdr::new_with_bounds(1, 60_000_000, 3)
            .ok()
            .map(|hdr| Self(Mutex::new(hdr)))
    }

    fn hdr(&self) -> std::sync::MutexGuard<'_, Hdr<u64>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl HistogramFn for Cell {
    fn record(&self, seconds: f64) {
        let micros = (seconds * 1e6).round().clamp(1.0, 60_000_000.0) as u64;
        self.hdr().saturating_record(micros);
    }
}

/// A recorder of the hook latency histogram alone.
struct Latencies {
    table: Arc<Table>,
}

impl Recorder for Latencies {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, _: &Key, _: &Metadata<'_>) -> Counter {
        Counter::noop()
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        if key.name() != HOOK_SECONDS {
            return Histogram::noop();
        }
        let label = |name: &str| {
            key.labels()
                .find(|l| l.key() == name)
                .map(|l| l.value().to_owned())
                .unwrap_or_default()
        };
        let slot = (label("plugin"), label("hook"));
        let mut table = lock(&self.table);
        if let Some(cell) = table.get(&slot) {
            return Histogram::from_arc(cell.clone());
        }
        match Cell::new() {
            Some(cell) => {
                let cell = Arc::new(cell);
                table.insert(slot, cell.clone());
                Histogram::from_arc(cell)
            }
            None => Histogram::noop(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hook_latency_is_kept_per_plugin_and_hook_and_nothing_else() {
        let table = Arc::new(Table::default());
        let recorder = Latencies {
            table: table.clone(),
        };
        metrics::with_local_recorder(&recorder, || {
            let h = metrics::histogram!(HOOK_SECONDS, "hook" => "on_prompt", "plugin" => "a");
            for _ in 0..99 {
                h.record(0.000_010);
            }
            h.record(0.5);
            metrics::histogram!("other_seconds").record(1.0);
        });
        let read = read(&table);
        assert_eq!(read.len(), 1);
        assert_eq!(
            (read[0].plugin.as_str(), read[0].hook.as_str()),
            ("a", "on_prompt")
        );
        assert_eq!(read[0].samples, 100);
        assert_eq!(read[0].p50_us, 10);
        assert!(read[0].p99_us <= 11, "{:?}", read[0]);
        reset(&table);
        assert!(super::read(&table).is_empty());
    }
}
