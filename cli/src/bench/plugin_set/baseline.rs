//! Baselines: a saved report (`--save-baseline FILE`) and the comparison of a run with one
//! (`--baseline FILE`, `--fail-above PCT`).
//!
//! Each hook's whole call and each plugin at each hook is compared by its rounds, each round by
//! its 10th percentile (the figure a loaded machine moves least: its delays only add to a call,
//! while a slower plugin moves the bulk of its calls). On a shared machine a round caught in a
//! slow spell can be many times slower than the others, and a spell can cover most of a run; the
//! quiet rounds are what the plugins cost. So a run stands for its best round, and its noise is
//! how far its next best rounds are from it: up to its lower quartile of rounds (at least its
//! second best). The ratio is this run's best round over the baseline's. A difference is beyond
//! the noise of both when this run's best round is slower than the baseline's lower quartile (or
//! the baseline's best slower than this run's lower quartile: faster); how far beyond is that
//! gap, less one. A comparison fails `--fail-above PCT` when the gap is above PCT percent.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::report::{SetReport, FORMAT};

/// How a run compares with its baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The baseline file.
    pub baseline: String,
    /// `--fail-above`, in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_above_pct: Option<f64>,
    /// Per hook (its whole call, `plugin` absent) and per plugin at each hook.
    pub entries: Vec<Compared>,
    /// Hooks of this run the baseline did not measure (not compared).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_in_baseline: Vec<String>,
    /// Whether some entry is slower than `--fail-above` allows.
    pub failed: bool,
}

/// Where a difference stands against the noise of both runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// This run's best round slower than the baseline's lower quartile of rounds.
    Slower,
    /// The baseline's best round slower than this run's lower quartile of rounds.
    Faster,
    /// Neither: within the noise.
    WithinNoise,
}

/// One hook's whole call, or one plugin at one hook, against the baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Compared {
    /// The hook.
    pub hook: String,
    /// The plugin; absent for the whole call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin: Option<String>,
    /// This run's best round (each round by its p10) over the baseline's (above 1: slower).
    pub ratio: f64,
    /// Against the noise of both.
    pub verdict: Verdict,
    /// How far beyond the noise, in percent: this run's best round over the baseline's lower
    /// quartile of rounds, less one (slower); the baseline's best round over this run's lower
    /// quartile, less one, negated (faster); 0 within the noise.
    pub beyond_noise_pct: f64,
    /// Whether it is slower than `--fail-above` allows.
    pub fails: bool,
}

/// Reads a saved report.
///
/// # Errors
/// An unreadable file, or one that is not a report of this format and version.
pub fn load(file: &Path) -> Result<SetReport, String> {
    let shown = file.display();
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("the baseline '{shown}' could not be read: {e}"))?;
    let json: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("the baseline '{shown}' is not JSON: {e}"))?;
    let format = json.get("format").and_then(serde_json::Value::as_u64);
    if format != Some(u64::from(FORMAT)) {
        return Err(format!(
            "the baseline '{shown}' is not a plugin set report of format {FORMAT} (save it again \
with --save-baseline)"
        ));
    }
    let version = json.get("hookline_version").and_then(|v| v.as_str());
    let ours = env!("CARGO_PKG_VERSION");
    if version != Some(ours) {
        return Err(format!(
            "the baseline '{shown}' was measured by hookline {}, this is hookline {ours}: \
measure the baseline again with this version",
            version.unwrap_or("of an unknown version")
        ));
    }
    serde_json::from_value(json)
        .map_err(|e| format!("the baseline '{shown}' is not a plugin set report: {e}"))
}

/// Writes `report` to `file`.
///
/// # Errors
/// The file could not be written.
pub fn save(report: &SetReport, file: &Path) -> Result<(), String> {
    let json = serde_json::to_string_pretty(report).map_err(|e| e.to_string())?;
    std::fs::write(file, json + "\n").map_err(|e| {
        format!(
            "the baseline '{}' could not be written: {e}",
            file.display()
        )
    })
}

/// Checks that `baseline` measured the same plugin set in the same shape as `current`.
///
/// # Errors
/// What differs, as an English phrase.
pub fn check_same(baseline: &SetReport, current: &SetReport, file: &Path) -> Result<(), String> {
    let shown = file.display();
    let set = |r: &SetReport| -> Vec<String> {
        let plugins = r.plugin_set.plugins.iter();
        plugins
            .map(|p| {
                format!(
                    "{} ({}, {}: {})",
                    p.name,
                    p.kind,
                    p.state,
                    p.hooks.join(" ")
                )
            })
            .collect()
    };
    let (theirs, ours) = (set(baseline), set(current));
    if theirs != ours {
        return Err(format!(
            "the baseline '{shown}' measured another plugin set: [{}], this run [{}]",
            theirs.join(", "),
            ours.join(", ")
        ));
    }
    if (baseline.sessions, baseline.arbiters) != (current.sessions, current.arbiters) {
        return Err(format!(
            "the baseline '{shown}' ran {} on {}, this run {} on {}: give the same --sessions \
and --arbiters",
            crate::bench::counted(baseline.sessions as u64, "session"),
            crate::bench::counted(baseline.arbiters as u64, "arbiter"),
            crate::bench::counted(current.sessions as u64, "session"),
            crate::bench::counted(current.arbiters as u64, "arbiter"),
        ));
    }
    if !current
        .hooks
        .iter()
        .any(|h| baseline.hooks.iter().any(|b| b.hook == h.hook))
    {
        return Err(format!(
            "the baseline '{shown}' measured none of this run's hooks"
        ));
    }
    Ok(())
}

/// Compares `current` with `baseline` (checked with [`check_same`]).
pub fn compare(
    baseline: &SetReport,
    current: &SetReport,
    file: &Path,
    fail_above_pct: Option<f64>,
) -> Comparison {
    let mut entries = Vec::new();
    let mut not_in_baseline = Vec::new();
    for hook in &current.hooks {
        let Some(base) = baseline.hooks.iter().find(|b| b.hook == hook.hook) else {
            not_in_baseline.push(hook.hook.clone());
            continue;
        };
        let name = &hook.hook;
        entries.extend(against(
            name,
            None,
            &base.rounds_p10_ns,
            &hook.rounds_p10_ns,
        ));
        for plugin in &hook.plugins {
            let theirs = base.plugins.iter().find(|p| p.plugin == plugin.plugin);
            if let Some(theirs) = theirs {
                let who = Some(plugin.plugin.clone());
                entries.extend(against(
                    name,
                    who,
                    &theirs.rounds_p10_ns,
                    &plugin.rounds_p10_ns,
                ));
            }
        }
    }
    for entry in &mut entries {
        entry.fails = entry.verdict == Verdict::Slower
            && fail_above_pct.is_some_and(|pct| entry.beyond_noise_pct > pct);
    }
    Comparison {
        baseline: file.display().to_string(),
        fail_above_pct,
        failed: entries.iter().any(|e| e.fails),
        entries,
        not_in_baseline,
    }
}

/// One entry from the baseline's rounds and this run's; `None` when either has none.
fn against(hook: &str, plugin: Option<String>, theirs: &[u64], ours: &[u64]) -> Option<Compared> {
    let (t_best, t_next) = spread(theirs)?;
    let (o_best, o_next) = spread(ours)?;
    let (verdict, beyond) = if o_best > t_next {
        (Verdict::Slower, (o_best / t_next - 1.0) * 100.0)
    } else if t_best > o_next {
        (Verdict::Faster, -(t_best / o_next - 1.0) * 100.0)
    } else {
        (Verdict::WithinNoise, 0.0)
    };
    Some(Compared {
        hook: hook.to_owned(),
        plugin,
        ratio: o_best / t_best,
        verdict,
        beyond_noise_pct: beyond,
        fails: false,
    })
}

/// The best round of `rounds` (at least 1 ns) and the edge of its noise: the lower quartile of
/// the rounds, at least the second best (the best itself when there is one round); `None`
/// without rounds.
fn spread(rounds: &[u64]) -> Option<(f64, f64)> {
    let mut sorted: Vec<f64> = rounds.iter().map(|&ns| ns.max(1) as f64).collect();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let quartile = (n.saturating_sub(1) / 4).max(1).min(n.saturating_sub(1));
    Some((*sorted.first()?, *sorted.get(quartile)?))
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "against the baseline {}", self.baseline)?;
        for e in &self.entries {
            let who = e.plugin.as_deref().unwrap_or("whole call");
            let verdict = match e.verdict {
                Verdict::Slower => format!("slower, {:.0}% beyond the noise", e.beyond_noise_pct),
                Verdict::Faster => format!("faster, {:.0}% beyond the noise", -e.beyond_noise_pct),
                Verdict::WithinNoise => "within the noise".to_owned(),
            };
            let fails = if e.fails { "  FAIL" } else { "" };
            writeln!(
                f,
                "  {:<20} {:<16} {:>7.2}x  {verdict}{fails}",
                e.hook, who, e.ratio
            )?;
        }
        for hook in &self.not_in_baseline {
            writeln!(f, "  {hook:<20} not in the baseline")?;
        }
        match (self.fail_above_pct, self.failed) {
            (Some(pct), true) => write!(
                f,
                "slower than the baseline by more than {pct}% beyond the noise"
            ),
            (Some(pct), false) => write!(
                f,
                "nothing slower than the baseline by more than {pct}% beyond the noise"
            ),
            (None, _) => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn rounds_within_the_next_best_are_noise_and_a_gap_beyond_them_fails() {
        let same = against("h", None, &[100, 120, 110], &[115, 105, 125]);
        assert_eq!(same.map(|c| c.verdict), Some(Verdict::WithinNoise));
        let slower = against("h", None, &[100, 120, 110], &[300, 310, 290]).unwrap();
        assert_eq!(slower.verdict, Verdict::Slower);
        // The best of this run over the baseline's second best.
        assert!((slower.beyond_noise_pct - (290.0 / 110.0 - 1.0) * 100.0).abs() < 1e-9);
        assert!((slower.ratio - 2.9).abs() < 1e-9);
        let faster = against("h", None, &[300, 310, 290], &[100, 120, 110]).unwrap();
        assert_eq!(faster.verdict, Verdict::Faster);
        // Rounds caught in a slow spell (most of them) do not hide the quiet ones.
        let base = [100, 4000, 105, 5000, 3000, 108, 2500, 6000];
        let spelled = against(
            "h",
            None,
            &base,
            &[9000, 8000, 104, 7000, 102, 9500, 8800, 9900],
        );
        assert_eq!(spelled.map(|c| c.verdict), Some(Verdict::WithinNoise));
        let slower = against(
            "h",
            None,
            &base,
            &[9000, 8000, 304, 7000, 302, 9500, 8800, 9900],
        );
        assert_eq!(slower.map(|c| c.verdict), Some(Verdict::Slower));
        assert!(against("h", None, &[], &[1]).is_none());
    }
}
