//! What `hookline bench --plugins DIR` reports, as JSON (`--json`, `--save-baseline`) and as a
//! text table: per hook the whole call beside the bare pipeline and the direct loop, and per
//! plugin its latency, its share of the call and its skips by reason.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::baseline::Comparison;

/// The report's format; a baseline of another format is refused.
pub const FORMAT: u32 = 1;

/// One run of a plugin set.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SetReport {
    /// [`FORMAT`].
    pub format: u32,
    /// The hookline that measured it.
    pub hookline_version: String,
    /// The plugins, in load order.
    pub plugin_set: PluginSet,
    /// Sessions in flight.
    pub sessions: usize,
    /// Arbiters (the pipeline's shards).
    pub arbiters: usize,
    /// Rounds: each runs every hook once (set, bare pipeline, direct loop in turn).
    pub rounds: u32,
    /// The whole run's planned length, in seconds.
    pub duration_s: f64,
    /// Per hook, in the order of the sixteen hooks.
    pub hooks: Vec<HookFigures>,
    /// What the pipeline noted when it loaded the set (raw hooks registered, unknown events).
    #[serde(default)]
    pub load_notes: Vec<String>,
    /// The comparison with `--baseline`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
}

/// The plugin set as loaded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PluginSet {
    /// The directories it was loaded from.
    pub dirs: Vec<String>,
    /// Every plugin directory, in load order (disabled ones too).
    pub plugins: Vec<SetPlugin>,
}

/// One plugin of the set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetPlugin {
    /// Its name.
    pub name: String,
    /// `python3`, `node`, `executable`, ...
    pub kind: String,
    /// `loaded` or `disabled`.
    pub state: String,
    /// The hooks it implements (none when disabled).
    pub hooks: Vec<String>,
}

/// Latency percentiles and throughput of one loop, in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// Calls made.
    pub calls: u64,
    /// Calls per second.
    pub calls_per_second: f64,
    /// 10th percentile.
    pub p10_ns: u64,
    /// Median.
    pub p50_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Mean.
    pub mean_ns: f64,
}

/// One hook's figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HookFigures {
    /// The hook's wire name.
    pub hook: String,
    /// What it was called with.
    pub values: String,
    /// The whole call through the plugin set.
    pub call: Figures,
    /// Each round's p10 of the whole call: what a baseline comparison compares, and the
    /// run-to-run noise it weighs.
    pub rounds_p10_ns: Vec<u64>,
    /// The same calls through the pipeline with no plugin, same run.
    pub bare_pipeline: Figures,
    /// The plugins' hooks called in load order from a plain loop, one call at a time, same run.
    pub direct_loop: Figures,
    /// The plugins that implement the hook, in load order.
    pub plugins: Vec<PluginFigures>,
}

/// One plugin at one hook.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PluginFigures {
    /// The plugin's name.
    pub plugin: String,
    /// Calls timed (every call that awaits, such as an external plugin's; one inline batch in
    /// 64 of an in-process plugin's).
    pub timed: u64,
    /// 10th percentile.
    pub p10_ns: u64,
    /// Median latency.
    pub p50_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Mean latency.
    pub mean_ns: f64,
    /// Its mean over the whole call's mean.
    pub share: f64,
    /// Each round's p10 (rounds where it was timed), as for the whole call.
    pub rounds_p10_ns: Vec<u64>,
    /// Skipped calls (each one a note) by reason: `failed`, `timed-out`, `refused`, ...
    pub skips: BTreeMap<String, u64>,
}

/// A duration in nanoseconds, in the unit that suits it.
pub(super) fn shown(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.1} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

fn skips(skips: &BTreeMap<String, u64>) -> String {
    if skips.is_empty() {
        return "-".into();
    }
    let parts: Vec<String> = skips.iter().map(|(r, n)| format!("{n} {r}")).collect();
    parts.join(", ")
}

impl fmt::Display for SetReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let loaded: Vec<&str> = self
            .plugin_set
            .plugins
            .iter()
            .filter(|p| p.state == "loaded")
            .map(|p| p.name.as_str())
            .collect();
        writeln!(
            f,
            "plugin set {} ({}), {} in flight on {}, {}",
            self.plugin_set.dirs.join(" + "),
            loaded.join(", "),
            crate::bench::counted(self.sessions as u64, "session"),
            crate::bench::counted(self.arbiters as u64, "arbiter"),
            crate::bench::counted(self.rounds, "round")
        )?;
        for plugin in self
            .plugin_set
            .plugins
            .iter()
            .filter(|p| p.state != "loaded")
        {
            writeln!(f, "  {} is {} (not run)", plugin.name, plugin.state)?;
        }
        for note in &self.load_notes {
            writeln!(f, "  note: {note}")?;
        }
        for hook in &self.hooks {
            writeln!(f)?;
            write!(f, "{hook}")?;
        }
        if let Some(comparison) = &self.comparison {
            writeln!(f)?;
            write!(f, "{comparison}")?;
        }
        Ok(())
    }
}

fn loop_line(f: &mut fmt::Formatter<'_>, name: &str, l: &Figures) -> fmt::Result {
    writeln!(
        f,
        "  {name:<16} {:>10} {:>10} {:>10} {:>10} {:>10.0} calls/s",
        shown(l.p10_ns as f64),
        shown(l.p50_ns as f64),
        shown(l.p99_ns as f64),
        shown(l.p999_ns as f64),
        l.calls_per_second
    )
}

impl fmt::Display for HookFigures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} ({})", self.hook, self.values)?;
        let head = ["", "p10", "p50", "p99", "p999"];
        writeln!(
            f,
            "  {:<16} {:>10} {:>10} {:>10} {:>10}",
            head[0], head[1], head[2], head[3], head[4]
        )?;
        loop_line(f, "whole call", &self.call)?;
        loop_line(f, "bare pipeline", &self.bare_pipeline)?;
        loop_line(f, "direct loop", &self.direct_loop)?;
        writeln!(
            f,
            "  {:<16} {:>10} {:>10} {:>10} {:>10}  skips (notes) by reason",
            "plugin", "p10", "p50", "p99", "share"
        )?;
        for p in &self.plugins {
            writeln!(
                f,
                "  {:<16} {:>10} {:>10} {:>10} {:>9.0}%  {}",
                p.plugin,
                shown(p.p10_ns as f64),
                shown(p.p50_ns as f64),
                shown(p.p99_ns as f64),
                p.share * 100.0,
                skips(&p.skips)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::shown;

    #[test]
    fn durations_are_shown_in_the_unit_that_suits_them() {
        assert_eq!(shown(850.0), "850 ns");
        assert_eq!(shown(12_340.0), "12.3 µs");
        assert_eq!(shown(1_234_000.0), "1.23 ms");
    }
}
