//! What the soak watches while the load runs: resident memory, the coordinator's admitted calls
//! and the event bus queue, each against its bound.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Duration;

use hookline_actors::Pipeline;
use serde::Serialize;

/// How often the queues are sampled.
const SAMPLE_EVERY: Duration = Duration::from_millis(20);

/// The process's resident memory in bytes (`VmRSS` in `/proc/self/status`); `None` where that
/// file does not exist or does not say.
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_vm_rss(&status)
}

/// The `VmRSS:` line of a `/proc/<pid>/status` text, in bytes.
fn parse_vm_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let mut words = line.split_whitespace().skip(1);
    let amount: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => amount.checked_mul(1024),
        _ => None,
    }
}

/// The highest value a queue reached and its bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct QueuePeak {
    /// The highest sampled length.
    pub peak: usize,
    /// The bound it must stay within.
    pub bound: usize,
    /// How many samples were taken.
    pub samples: u64,
}

impl QueuePeak {
    fn sample(&mut self, length: usize, bound: usize) {
        self.peak = self.peak.max(length);
        self.bound = bound;
        self.samples += 1;
    }

    /// Whether every sample stayed within the bound (and there was at least one).
    pub fn within_bound(&self) -> bool {
        self.samples > 0 && self.peak <= self.bound
    }
}

/// The peaks the sampler saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct QueuePeaks {
    /// The coordinator's admitted calls against `max_pending`.
    pub coordinator: QueuePeak,
    /// The event bus queue against its capacity.
    pub event_queue: QueuePeak,
    /// The sessions the pipeline's tables hold against the sessions open at once: a session the
    /// gateway closed is forgotten there (`Pipeline::admitted`'s `sessions`).
    pub session_table: QueuePeak,
}

/// Samples the queues of `pipeline` every [`SAMPLE_EVERY`] until `stop` is set; `sessions` is
/// how many sessions are open at once.
pub(super) async fn sample_queues(
    pipeline: Pipeline,
    sessions: usize,
    stop: Rc<Cell<bool>>,
) -> QueuePeaks {
    let mut peaks = QueuePeaks::default();
    let mut tick = tokio::time::interval(SAMPLE_EVERY);
    while !stop.get() {
        tick.tick().await;
        if let Ok(admitted) = pipeline.admitted().await {
            peaks.coordinator.sample(admitted.calls, admitted.bound);
            peaks.session_table.sample(admitted.sessions, sessions);
        }
        let bus = pipeline.events();
        peaks.event_queue.sample(bus.queued(), bus.queue_capacity());
    }
    peaks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vm_rss_is_read_in_bytes() {
        let status = "Name:\thookline\nVmPeak:\t  2000 kB\nVmRSS:\t   1536 kB\nThreads:\t4\n";
        assert_eq!(parse_vm_rss(status), Some(1536 * 1024));
        assert_eq!(parse_vm_rss("VmRSS:\t12 MB\n"), None);
        assert_eq!(parse_vm_rss("Name:\tx\n"), None);
    }

    #[test]
    fn a_peak_over_its_bound_fails() {
        let mut peak = QueuePeak::default();
        assert!(!peak.within_bound(), "no sample proves nothing");
        peak.sample(3, 4);
        assert!(peak.within_bound());
        peak.sample(5, 4);
        assert!(!peak.within_bound());
    }
}
