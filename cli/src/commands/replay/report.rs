//! What `hookline replay` reports: per session and in total whether the replay reproduced the
//! recording, each difference (turn, hook, plugins, JSON Patch), the calls the recording could
//! not answer, each plugin's latency per hook, and the rate. `--json` prints it as one document;
//! otherwise [`human`] renders a summary.

use std::fmt::Write as _;
use std::time::Duration;

use hookline_host::replay::SessionReplay;
use serde::Serialize;

use super::latency::HookLatency;

/// The whole replay.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Report {
    /// Sessions replayed.
    pub(super) sessions: usize,
    /// Sessions whose replay differs from their recording.
    pub(super) differing: usize,
    /// Turns replayed.
    pub(super) turns: usize,
    /// Differences in all sessions.
    pub(super) differences: usize,
    /// Wall time of the replay, milliseconds.
    pub(super) elapsed_ms: u64,
    /// Turns replayed per second of wall time.
    pub(super) turns_per_second: f64,
    /// Each session's replay, in store order.
    pub(super) results: Vec<SessionReplay>,
    /// Each plugin's latency per hook during the replay.
    pub(super) latency: Vec<HookLatency>,
}

impl Report {
    pub(super) fn new(
        results: Vec<SessionReplay>,
        elapsed: Duration,
        latency: Vec<HookLatency>,
    ) -> Self {
        let turns = results.iter().map(|r| r.turns).sum::<usize>();
        let seconds = elapsed.as_secs_f64();
        Self {
            sessions: results.len(),
            differing: results.iter().filter(|r| r.differs()).count(),
            turns,
            differences: results.iter().map(|r| r.differences.len()).sum(),
            elapsed_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
            turns_per_second: if seconds > 0.0 {
                turns as f64 / seconds
            } else {
                0.0
            },
            results,
            latency,
        }
    }
}

/// The readable summary.
pub(super) fn human(report: &Report) -> String {
    let mut out = String::new();
    for result in &report.results {
        session(&mut out, result);
    }
    if !report.latency.is_empty() {
        let _ = writeln!(out, "\nPlugin latency per hook (p50 / p99):");
        for l in &report.latency {
            let _ = writeln!(
                out,
                "  {:<20} {:<20} {:>8} timed  {:>6} µs / {:>6} µs",
                l.plugin, l.hook, l.samples, l.p50_us, l.p99_us
            );
        }
    }
    let _ = writeln!(
        out,
        "\n{} of {} sessions differ ({} differences); {} turns in {} ms ({:.0} turns/s).",
        report.differing,
        report.sessions,
        report.differences,
        report.turns,
        report.elapsed_ms,
        report.turns_per_second
    );
    out.trim_end().to_owned()
}

fn session(out: &mut String, result: &SessionReplay) {
    let verdict = if result.differs() {
        "differs"
    } else {
        "reproduced"
    };
    let turns = if result.turns == 1 { "turn" } else { "turns" };
    let _ = writeln!(
        out,
        "{}: {} {turns}, {verdict}",
        result.session, result.turns
    );
    for d in &result.differences {
        let turn = match d.turn {
            Some(t) => format!("turn {t}"),
            None if d.what.starts_with("record:") => "records".to_owned(),
            None => "after the last turn".to_owned(),
        };
        let hook = match (d.hook, &d.event) {
            (Some(hook), _) => hook.to_string(),
            (None, Some(event)) => event.clone(),
            (None, None) => "no hook".to_owned(),
        };
        let plugins = if d.plugins.is_empty() {
            "no plugin changed it in the replay".to_owned()
        } else {
            d.plugins.join(", ")
        };
        let patch = shorten(&serde_json::to_string(&d.patch).unwrap_or_default());
        let _ = writeln!(
            out,
            "  {turn}, {} {}: {hook} ({plugins}): {patch}",
            d.what, d.index
        );
    }
    for u in &result.unmatched {
        let _ = writeln!(out, "  turn {}: {}", u.turn, u.what);
    }
}

/// A patch as shown in the summary: at most [`SHOWN`] characters (`--json` has it whole).
fn shorten(patch: &str) -> String {
    match patch.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{}... (--json shows it whole)", &patch[..end]),
        None => patch.to_owned(),
    }
}

/// How much of a patch the summary shows.
const SHOWN: usize = 160;
