//! Baselines: a saved report (`--save-baseline FILE`) and the comparison of a run with one
//! (`--baseline FILE`, `--fail-above PCT`).
//!
//! Each hook's whole call and each plugin at each hook is compared by its rounds, each round by
//! its 10th percentile (the figure a loaded machine moves least: its delays only add to a call,
//! while a slower plugin moves the bulk of its calls). The ratio is the median round of this run
//! over the median round of the baseline. The noise
//! of a run is the spread of its rounds' middle half (lower to upper quartile: one round caught
//! in a slow spell moves neither end). A difference is beyond the noise of both when the middle
//! halves do not overlap: this run's lower quartile above the baseline's upper quartile (slower),
//! or its upper quartile below the baseline's lower one (faster). How far beyond is the gap
//! between them: this run's lower quartile over the baseline's upper one, less one. A comparison
//! fails `--fail-above PCT` when that gap is above PCT percent, so a machine whose speed comes
//! and goes widens the noise instead of failing the job.

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
    /// The middle half of this run's rounds above the baseline's.
    Slower,
    /// The middle half of this run's rounds below the baseline's.
    Faster,
    /// The middle halves overlap: within the noise.
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
    /// This run's median round (each round's p10) over the baseline's (above 1: slower).
    pub ratio: f64,
    /// Against the noise of both.
    pub verdict: Verdict,
    /// How far beyond the noise, in percent: this run's lower quartile of rounds over the
    /// baseline's upper quartile, less one (slower); the baseline's lower quartile over this
    /// run's upper one, less one, negated (faster); 0 within the noise.
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
            "the baseline '{shown}' ran {} session(s) on {} arbiter(s), this run {} on {}: give \
the same --sessions and --arbiters",
            baseline.sessions, baseline.arbiters, current.sessions, current.arbiters
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
    let (t_low, t_high, t_mid) = spread(theirs)?;
    let (o_low, o_high, o_mid) = spread(ours)?;
    let (verdict, beyond) = if o_low > t_high {
        (Verdict::Slower, (o_low / t_high - 1.0) * 100.0)
    } else if o_high < t_low {
        (Verdict::Faster, -(t_low / o_high - 1.0) * 100.0)
    } else {
        (Verdict::WithinNoise, 0.0)
    };
    Some(Compared {
        hook: hook.to_owned(),
        plugin,
        ratio: o_mid / t_mid,
        verdict,
        beyond_noise_pct: beyond,
        fails: false,
    })
}

/// The lower quartile, upper quartile and median of `rounds` (at least 1 ns each), if any (of
/// up to 4 rounds: the smallest and the largest).
fn spread(rounds: &[u64]) -> Option<(f64, f64, f64)> {
    let mut sorted: Vec<f64> = rounds.iter().map(|&ns| ns.max(1) as f64).collect();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let quarter = n.saturating_sub(1) / 4;
    let (first, last) = (*sorted.get(quarter)?, *sorted.get(n - 1 - quarter)?);
    let median = if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    };
    Some((first, last, median))
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
    fn rounds_that_overlap_are_within_the_noise_and_a_gap_beyond_it_fails() {
        let same = against("h", None, &[100, 120, 110], &[115, 105, 125]);
        assert_eq!(same.map(|c| c.verdict), Some(Verdict::WithinNoise));
        let slower = against("h", None, &[100, 120, 110], &[300, 310, 290]).unwrap();
        assert_eq!(slower.verdict, Verdict::Slower);
        assert!((slower.beyond_noise_pct - (290.0 / 120.0 - 1.0) * 100.0).abs() < 1e-9);
        assert!((slower.ratio - 300.0 / 110.0).abs() < 1e-9);
        let faster = against("h", None, &[300, 310, 290], &[100, 120, 110]).unwrap();
        assert_eq!(faster.verdict, Verdict::Faster);
        // One round in a slow spell (of five) moves neither quartile.
        let spiked = against(
            "h",
            None,
            &[100, 110, 105, 5000, 108],
            &[300, 310, 290, 295, 305],
        );
        assert_eq!(spiked.map(|c| c.verdict), Some(Verdict::Slower));
        assert!(against("h", None, &[], &[1]).is_none());
    }
}
