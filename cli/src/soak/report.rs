//! The soak's report: what ran, what was measured, and the checks that pass or fail.

use std::fmt;

use serde::Serialize;

use super::watch::QueuePeaks;

/// Resident memory grows by less than this, in percent, from the warm-up sample to the end.
pub const MAX_MEMORY_GROWTH_PERCENT: f64 = 10.0;

/// How late past its budget a shutdown may return and still pass: the budget bounds the
/// lifecycle's timeouts, and a single-threaded runtime under 10,000 sessions' load needs a moment
/// to run the code after the timer fires.
pub const SHUTDOWN_SLACK_MS: u64 = 250;

/// One note text and how often it was recorded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NoteCount {
    /// The note's kind (its `kind` tag in the store: `skipped`, `plugin-images-ignored`, ...).
    pub kind: String,
    /// Its English text.
    pub text: String,
    /// How many times sessions recorded it.
    pub count: u64,
    /// Whether it is one of the faults the soak injects (the demo's known notes).
    pub injected: bool,
}

/// Resident memory samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Memory {
    /// When the warm-up ended, ms after the start.
    pub warmup_ms: u64,
    /// Whether every session slot had finished two sessions by then.
    pub warmup_complete: bool,
    /// The highest `VmRSS` over the warm-up's last tenth of the run, bytes.
    pub after_warmup_bytes: Option<u64>,
    /// The highest `VmRSS` over the load's last tenth (before the shutdown), bytes.
    pub at_end_bytes: Option<u64>,
}

impl Memory {
    /// Growth from the warm-up sample to the end, in percent (negative when it shrank).
    pub fn growth_percent(&self) -> Option<f64> {
        let (Some(warm), Some(end)) = (self.after_warmup_bytes, self.at_end_bytes) else {
            return None;
        };
        if warm == 0 {
            return None;
        }
        #[allow(clippy::cast_precision_loss)] // byte counts far below 2^52
        Some((end as f64 - warm as f64) * 100.0 / warm as f64)
    }
}

/// The shutdown under load.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ShutdownMeasured {
    /// Sessions open when it started (each got its session-end hooks from the shutdown).
    pub active_sessions: usize,
    /// Turns still running when the drain budget ran out, stopped like `/stop`.
    pub stopped_turns: usize,
    /// How long the caller waited, ms.
    pub elapsed_ms: u64,
    /// Its budget ([`SoakConfig::shutdown_budget`](super::SoakConfig::shutdown_budget)), ms.
    pub budget_ms: u64,
    /// Whether the shared state was closed afterwards (SPEC G2.3).
    pub shared_state_closed: bool,
    /// The notes the shutdown returned (a session-end timeout would be one), as text.
    pub notes: Vec<String>,
    /// Why it failed, when the lifecycle refused it.
    pub error: Option<String>,
}

/// One pass/fail check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Check {
    /// What is checked.
    pub name: &'static str,
    /// Whether it held.
    pub passed: bool,
    /// The figures behind the verdict.
    pub detail: String,
}

/// Everything a soak run reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SoakReport {
    /// How the sessions were driven (`gateway`: see `docs/reliability.md`).
    pub driver: &'static str,
    /// Sessions open at once (one per slot).
    pub concurrent_sessions: usize,
    /// The load's length, seconds.
    pub duration_secs: f64,
    /// How long every slot took to open its first session, seconds (before the load's clock
    /// started).
    pub open_secs: f64,
    /// Sessions that ran every step and closed.
    pub sessions_completed: u64,
    /// Sessions the shutdown's drain interrupted part way.
    pub sessions_drained: u64,
    /// User turns completed during the load.
    pub turns: u64,
    /// Turns per second over the load.
    pub turns_per_sec: f64,
    /// Hook calls the pipeline made during the load (`None`: another metrics recorder was
    /// installed, so they could not be counted).
    pub hook_calls: Option<u64>,
    /// Hook calls per second over the load.
    pub hook_calls_per_sec: Option<f64>,
    /// Session requests (open, inbound, turn, command, close) that failed.
    pub request_errors: u64,
    /// The first failure's message.
    pub first_error: Option<String>,
    /// Resident memory.
    pub memory: Memory,
    /// Queue peaks against their bounds.
    pub queues: QueuePeaks,
    /// Events the bus dropped because its queue was full.
    pub events_dropped: u64,
    /// Notes recorded at load (the demo's raw hook and unknown subscription), as text.
    pub load_notes: Vec<String>,
    /// Notes recorded by sessions, by kind and text.
    pub notes: Vec<NoteCount>,
    /// Sessions whose notes were not exactly the injected faults, once each.
    pub sessions_with_other_notes: u64,
    /// The shutdown under load.
    pub shutdown: ShutdownMeasured,
    /// The verdicts.
    pub checks: Vec<Check>,
}

impl SoakReport {
    /// Whether every check passed.
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.passed)
    }

    /// Computes the checks from the figures (replacing any already there).
    pub(super) fn judge(&mut self) {
        self.checks = vec![
            self.memory_check(),
            queue_check("coordinator within max_pending", &self.queues.coordinator),
            queue_check("event queue within its capacity", &self.queues.event_queue),
            queue_check(
                "pipeline session table within the sessions open",
                &self.queues.session_table,
            ),
            self.notes_check(),
            Check {
                name: "no session request failed",
                passed: self.request_errors == 0 && self.sessions_completed > 0,
                detail: format!(
                    "{} errors, {} sessions completed{}",
                    self.request_errors,
                    self.sessions_completed,
                    self.first_error
                        .as_ref()
                        .map(|e| format!("; first: {e}"))
                        .unwrap_or_default()
                ),
            },
            self.shutdown_check(),
        ];
    }

    fn memory_check(&self) -> Check {
        let growth = self.memory.growth_percent();
        Check {
            name: "resident memory flat after warm-up",
            passed: growth.is_some_and(|g| g < MAX_MEMORY_GROWTH_PERCENT),
            detail: match growth {
                Some(g) => format!(
                    "{} after the warm-up ({} ms{}) -> {} at the end ({g:+.1} %, limit \
                     {MAX_MEMORY_GROWTH_PERCENT} %)",
                    mib(self.memory.after_warmup_bytes),
                    self.memory.warmup_ms,
                    if self.memory.warmup_complete {
                        ""
                    } else {
                        ", not every slot had finished two sessions"
                    },
                    mib(self.memory.at_end_bytes)
                ),
                None => "VmRSS could not be read".into(),
            },
        }
    }

    fn notes_check(&self) -> Check {
        let other: u64 = self
            .notes
            .iter()
            .filter(|n| !n.injected)
            .map(|n| n.count)
            .sum();
        Check {
            name: "only the injected notes, once per session",
            passed: other == 0 && self.sessions_with_other_notes == 0,
            detail: format!(
                "{other} other notes, {} sessions with other notes than the injected ones",
                self.sessions_with_other_notes
            ),
        }
    }

    fn shutdown_check(&self) -> Check {
        let s = &self.shutdown;
        Check {
            name: "shutdown under load within its budget",
            passed: s.error.is_none()
                && s.elapsed_ms <= s.budget_ms + SHUTDOWN_SLACK_MS
                && s.shared_state_closed
                && s.notes.is_empty(),
            detail: format!(
                "{} ms of {} ms (+{SHUTDOWN_SLACK_MS} ms slack) with {} open sessions, {} turns \
                 stopped by the drain; shared state closed: {}; {} notes{}",
                s.elapsed_ms,
                s.budget_ms,
                s.active_sessions,
                s.stopped_turns,
                s.shared_state_closed,
                s.notes.len(),
                s.error
                    .as_ref()
                    .map(|e| format!("; error: {e}"))
                    .unwrap_or_default()
            ),
        }
    }
}

fn queue_check(name: &'static str, peak: &super::watch::QueuePeak) -> Check {
    Check {
        name,
        passed: peak.within_bound(),
        detail: format!(
            "peak {} of {} ({} samples)",
            peak.peak, peak.bound, peak.samples
        ),
    }
}

fn mib(bytes: Option<u64>) -> String {
    #[allow(clippy::cast_precision_loss)]
    bytes.map_or_else(
        || "?".into(),
        |b| format!("{:.1} MiB", b as f64 / 1_048_576.0),
    )
}

impl fmt::Display for SoakReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "soak: {} sessions at once for {:.1} s through the {} with the demo plugins \
             (opened in {:.1} s)",
            self.concurrent_sessions, self.duration_secs, self.driver, self.open_secs
        )?;
        let calls = match (self.hook_calls, self.hook_calls_per_sec) {
            (Some(calls), Some(rate)) => format!("{calls} hook calls ({rate:.0}/s)"),
            _ => "hook calls not counted".into(),
        };
        writeln!(
            f,
            "  {} sessions completed ({} drained at the shutdown), {} turns ({:.0}/s), {calls}, \
             {} events dropped",
            self.sessions_completed,
            self.sessions_drained,
            self.turns,
            self.turns_per_sec,
            self.events_dropped
        )?;
        writeln!(f, "  load notes:")?;
        for note in &self.load_notes {
            writeln!(f, "    {note}")?;
        }
        writeln!(f, "  session notes by kind:")?;
        for n in &self.notes {
            let tag = if n.injected { "injected" } else { "OTHER" };
            writeln!(f, "    {:>8} x [{}, {tag}] {}", n.count, n.kind, n.text)?;
        }
        writeln!(f, "  checks:")?;
        for c in &self.checks {
            let verdict = if c.passed { "pass" } else { "FAIL" };
            writeln!(f, "    {verdict}  {}: {}", c.name, c.detail)?;
        }
        let verdict = if self.passed() { "passed" } else { "FAILED" };
        write!(f, "soak {verdict}")
    }
}
