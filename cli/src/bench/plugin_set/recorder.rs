//! Each plugin's hook latency and skips, as the pipeline already reports them. Every plugin actor
//! records its hook calls in the `hookline_hook_seconds` histogram (a sample of inline calls,
//! every call that awaits) and counts each skip in `hookline_hook_skips_total`, both labelled by
//! plugin and hook; this `metrics` recorder keeps those two, per plugin and hook, and drops every
//! other metric. Installed only by the commands that read it (`hookline bench --plugins DIR`,
//! `hookline replay`): without it every handle stays a no-op and the hot path pays nothing.
//!
//! It must be installed before the pipeline starts: the plugin actors resolve their handles then.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use hdrhistogram::Histogram as Hdr;
use hookline_actors::metrics::{HOOK_SECONDS, HOOK_SKIPS};
use metrics::{
    Counter, CounterFn, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
    SharedString, Unit,
};

/// A plugin and a hook.
pub type PluginHook = (String, String);

/// What the plugin actors recorded since the last [`PluginTimes::take`].
#[derive(Default)]
pub struct PluginTimes {
    latency: Mutex<BTreeMap<PluginHook, Arc<Cell>>>,
    skips: Mutex<BTreeMap<(String, String, String), Arc<Tally>>>,
}

/// One plugin's latencies at one hook (nanoseconds) and its skips there, by reason.
#[derive(Clone, Debug)]
pub struct Taken {
    /// The latencies, in nanoseconds (`None` when no call was timed).
    pub latency: Option<Hdr<u64>>,
    /// Skips by reason ([`SkipReason::label`](hookline_messages::note::SkipReason::label)).
    pub skips: BTreeMap<String, u64>,
}

impl PluginTimes {
    /// The process's table, its recorder installed on first use; `None` when another global
    /// recorder was installed first (`hookline bench --metrics`).
    pub fn installed() -> Option<Arc<Self>> {
        static TABLE: OnceLock<Option<Arc<PluginTimes>>> = OnceLock::new();
        TABLE
            .get_or_init(|| {
                let table = Arc::new(Self::default());
                let recorder = Keeper(table.clone());
                metrics::set_global_recorder(recorder).ok().map(|()| table)
            })
            .clone()
    }

    /// What was recorded since the last call, by plugin and hook (pairs with nothing recorded
    /// left out), and every histogram and count emptied.
    pub fn take(&self) -> BTreeMap<PluginHook, Taken> {
        let mut taken: BTreeMap<PluginHook, Taken> = BTreeMap::new();
        for (slot, cell) in lock(&self.latency).iter() {
            let mut hdr = cell.hdr();
            if !hdr.is_empty() {
                let latency = hdr.clone();
                hdr.reset();
                let skips = BTreeMap::new();
                let latency = Some(latency);
                taken.insert(slot.clone(), Taken { latency, skips });
            }
        }
        for ((plugin, hook, reason), tally) in lock(&self.skips).iter() {
            let count = tally.0.swap(0, Ordering::Relaxed);
            if count > 0 {
                let slot = (plugin.clone(), hook.clone());
                let entry = taken.entry(slot).or_insert_with(|| Taken {
                    latency: None,
                    skips: BTreeMap::new(),
                });
                *entry.skips.entry(reason.clone()).or_default() += count;
            }
        }
        taken
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// 1 ns to 60 s at 3 significant digits.
fn new_hdr() -> Option<Hdr<u64>> {
    Hdr::new_with_bounds(1, 60_000_000_000, 3).ok()
}

/// One histogram, in nanoseconds.
struct Cell(Mutex<Hdr<u64>>);

impl Cell {
    fn hdr(&self) -> MutexGuard<'_, Hdr<u64>> {
        lock(&self.0)
    }
}

impl HistogramFn for Cell {
    fn record(&self, seconds: f64) {
        let nanos = (seconds * 1e9).round().clamp(1.0, 60e9) as u64;
        self.hdr().saturating_record(nanos);
    }
}

/// One skip counter.
#[derive(Default)]
struct Tally(AtomicU64);

impl CounterFn for Tally {
    fn increment(&self, value: u64) {
        self.0.fetch_add(value, Ordering::Relaxed);
    }

    fn absolute(&self, value: u64) {
        self.0.store(value, Ordering::Relaxed);
    }
}

/// The recorder: the hook latency histogram and the skip counter, nothing else.
struct Keeper(Arc<PluginTimes>);

fn label(key: &Key, name: &str) -> String {
    key.labels()
        .find(|l| l.key() == name)
        .map(|l| l.value().to_owned())
        .unwrap_or_default()
}

impl Recorder for Keeper {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        if key.name() != HOOK_SKIPS {
            return Counter::noop();
        }
        let slot = (
            label(key, "plugin"),
            label(key, "hook"),
            label(key, "reason"),
        );
        let tally = lock(&self.0.skips).entry(slot).or_default().clone();
        Counter::from_arc(tally)
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        if key.name() != HOOK_SECONDS {
            return Histogram::noop();
        }
        let slot = (label(key, "plugin"), label(key, "hook"));
        let mut table = lock(&self.0.latency);
        if let Some(cell) = table.get(&slot) {
            return Histogram::from_arc(cell.clone());
        }
        match new_hdr() {
            Some(hdr) => {
                let cell = Arc::new(Cell(Mutex::new(hdr)));
                table.insert(slot, cell.clone());
                Histogram::from_arc(cell)
            }
            None => Histogram::noop(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn latency_and_skips_are_kept_per_plugin_and_hook_and_nothing_else() {
        let times = Arc::new(PluginTimes::default());
        let recorder = Keeper(times.clone());
        metrics::with_local_recorder(&recorder, || {
            let h = metrics::histogram!(HOOK_SECONDS, "hook" => "on_prompt", "plugin" => "a");
            for _ in 0..99 {
                h.record(0.000_010);
            }
            h.record(0.5);
            metrics::counter!(HOOK_SKIPS, "plugin" => "a", "hook" => "on_prompt", "reason" => "timeout")
                .increment(2);
            metrics::histogram!("other_seconds").record(1.0);
            metrics::counter!("other_total").increment(1);
        });
        let taken = times.take();
        assert_eq!(taken.len(), 1);
        let a = &taken[&("a".to_owned(), "on_prompt".to_owned())];
        let latency = a.latency.as_ref().unwrap();
        assert_eq!(latency.len(), 100);
        let p50 = latency.value_at_quantile(0.5);
        assert!((9_990..=10_010).contains(&p50), "{p50}");
        assert_eq!(a.skips.get("timeout"), Some(&2));
        assert!(times.take().is_empty(), "taking empties the table");
    }
}
