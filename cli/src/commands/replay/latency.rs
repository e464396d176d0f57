//! Each plugin's latency per hook during a replay, from the plugin actors' own timing
//! ([`PluginTimes`], the recorder `hookline bench --plugins DIR` reads too). It must be installed
//! before the pipeline starts (the actors resolve their handles then).

use std::sync::Arc;

use serde::Serialize;

use crate::bench::plugin_set::PluginTimes;

/// One plugin's latency at one hook.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct HookLatency {
    pub(super) plugin: String,
    pub(super) hook: String,
    /// Calls timed (the plugin actors time one inline batch in 64, and every call that awaits).
    pub(super) samples: u64,
    pub(super) p50_us: u64,
    pub(super) p99_us: u64,
}

/// The process's latency table: `None` when another global recorder was installed first.
pub(super) fn table() -> Option<Arc<PluginTimes>> {
    PluginTimes::installed()
}

/// Empties every histogram (a replay reports its own calls only).
pub(super) fn reset(table: &PluginTimes) {
    table.take();
}

/// The latencies recorded since the last reset, by plugin then hook; hooks never called are
/// left out.
pub(super) fn read(table: &PluginTimes) -> Vec<HookLatency> {
    let micros = |ns: u64| ns.div_ceil(1000);
    table
        .take()
        .into_iter()
        .filter_map(|((plugin, hook), taken)| {
            let hdr = taken.latency?;
            Some(HookLatency {
                plugin,
                hook,
                samples: hdr.len(),
                p50_us: micros(hdr.value_at_quantile(0.5)),
                p99_us: micros(hdr.value_at_quantile(0.99)),
            })
        })
        .collect()
}
