//! The pipeline's metrics, named in one place (`docs/serve.md`, "Metrics"). They go to whatever
//! `metrics` recorder the process installed (`hookline serve` installs a Prometheus one); without
//! one every handle is a no-op.
//!
//! A plugin actor resolves its handles once, when it is built: per call it only adds to a
//! counter it already holds, never formats a label or looks a key up. So a recorder must be
//! installed before the pipeline starts for these to count.

use hookline_messages::hook::{HookKind, HookSet};
use hookline_messages::note::SkipReason;
use metrics::{Counter, Histogram};

/// The pipeline's calls of a hook, once per call however many plugins implement it: `{hook}`.
pub const HOOK_CALLS: &str = "hookline_hook_calls_total";
/// One plugin's calls of a hook, skipped ones too (but not `unavailable` ones: the plugin's
/// actor had stopped and never saw them): `{plugin, hook}`.
pub const PLUGIN_HOOK_CALLS: &str = "hookline_plugin_hook_calls_total";
/// One plugin's skipped calls of a hook, by reason ([`SkipReason::label`]):
/// `{plugin, hook, reason}`.
pub const HOOK_SKIPS: &str = "hookline_hook_skips_total";
/// One plugin's hook latency in seconds (a sample of inline calls, every call that awaits):
/// `{hook, plugin}`.
pub const HOOK_SECONDS: &str = "hookline_hook_seconds";

/// Describes the pipeline's metrics to the installed recorder (their `# HELP` lines).
pub fn describe() {
    metrics::describe_counter!(HOOK_CALLS, "Hook calls admitted by the pipeline, by hook.");
    metrics::describe_counter!(
        PLUGIN_HOOK_CALLS,
        "Hook calls a plugin handled (skipped ones included), by plugin and hook."
    );
    metrics::describe_counter!(
        HOOK_SKIPS,
        "Plugin hook calls skipped, by plugin, hook and reason."
    );
    metrics::describe_histogram!(
        HOOK_SECONDS,
        metrics::Unit::Seconds,
        "One plugin's hook latency, by hook and plugin."
    );
}

/// One plugin's metric handles, one per hook, resolved when its actor is built.
pub(crate) struct PluginMetrics {
    /// Calls per hook, indexed by [`HookKind`]; a no-op for hooks the plugin does not implement
    /// (so only its own hooks appear, at 0 until they run).
    calls: Box<[Counter]>,
    /// Latency per hook, indexed by [`HookKind`]; a no-op for hooks the plugin does not
    /// implement too (issue 46 item 8: no `hookline_hook_seconds` series for a hook it never
    /// handles).
    latency: Box<[Histogram]>,
}

impl PluginMetrics {
    /// The handles of `plugin`, which implements `hooks`.
    pub(crate) fn new(plugin: &str, hooks: HookSet) -> Self {
        let calls = HookKind::ALL
            .iter()
            .map(|hook| {
                if hooks.contains(*hook) {
                    metrics::counter!(
                        PLUGIN_HOOK_CALLS,
                        "plugin" => plugin.to_owned(),
                        "hook" => hook.wire_name()
                    )
                } else {
                    Counter::noop()
                }
            })
            .collect();
        let latency = HookKind::ALL
            .iter()
            .map(|hook| {
                if hooks.contains(*hook) {
                    metrics::histogram!(
                        HOOK_SECONDS,
                        "hook" => hook.wire_name(),
                        "plugin" => plugin.to_owned()
                    )
                } else {
                    Histogram::noop()
                }
            })
            .collect();
        Self { calls, latency }
    }

    /// Counts `count` calls of `hook`.
    pub(crate) fn called(&self, hook: HookKind, count: usize) {
        self.calls[hook as usize].increment(count as u64);
    }

    /// The latency histogram of `hook`.
    pub(crate) fn latency(&self, hook: HookKind) -> &Histogram {
        &self.latency[hook as usize]
    }
}

/// Counts one skipped call of `hook` by `plugin`. Skips are the slow path (each also renders a
/// note and a log line), so the key is looked up here rather than held.
pub(crate) fn skipped(plugin: &str, hook: HookKind, reason: &SkipReason) {
    metrics::counter!(
        HOOK_SKIPS,
        "plugin" => plugin.to_owned(),
        "hook" => hook.wire_name(),
        "reason" => reason.label()
    )
    .increment(1);
}

/// The pipeline's call counters, one per hook, indexed by [`HookKind`]: a coordinator resolves
/// them once and adds each batch's size.
pub(crate) fn pipeline_calls() -> Box<[Counter]> {
    HookKind::ALL
        .iter()
        .map(|hook| metrics::counter!(HOOK_CALLS, "hook" => hook.wire_name()))
        .collect()
}
