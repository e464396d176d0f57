//! A shard's admission count, shared by the callers and the coordinator: a call is counted (or
//! refused with `Overloaded`) by its caller before it is sent, so a backlog is shed at the door,
//! never parked in the callers waiting for room in the coordinator's mailbox.
//!
//! It also counts the admitting messages (`Admit`, `AdmitMany`) sent and not yet handled, so a
//! caller on the shard's thread admits a call in place only when none could be ahead of it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Gives each shard a number of its own for the process's life.
static NEXT_UID: AtomicU64 = AtomicU64::new(1);

/// Calls admitted to one shard (running or queued behind their session), and the bound.
#[derive(Debug)]
pub(crate) struct Admission {
    admitted: AtomicUsize,
    bound: usize,
    /// Admitting messages sent to the coordinator and not handled yet.
    queued: AtomicUsize,
    uid: u64,
}

impl Admission {
    pub(crate) fn new(bound: usize) -> Self {
        Self {
            admitted: AtomicUsize::new(0),
            bound: bound.max(1),
            queued: AtomicUsize::new(0),
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The shard's number (unique in the process).
    pub(crate) fn uid(&self) -> u64 {
        self.uid
    }

    /// Counts an admitting message about to be sent to the coordinator.
    pub(crate) fn sent(&self) {
        self.queued.fetch_add(1, Ordering::AcqRel);
    }

    /// Counts an admitting message out: handled by the coordinator, or never delivered.
    pub(crate) fn received(&self) {
        self.queued.fetch_sub(1, Ordering::AcqRel);
    }

    /// True when every admitting message sent so far has been handled.
    pub(crate) fn none_queued(&self) -> bool {
        self.queued.load(Ordering::Acquire) == 0
    }

    /// Counts one call in; false (and nothing counted) when `bound` calls are admitted already.
    pub(crate) fn try_admit(&self) -> bool {
        if self.admitted.fetch_add(1, Ordering::AcqRel) >= self.bound {
            self.admitted.fetch_sub(1, Ordering::AcqRel);
            return false;
        }
        true
    }

    /// Counts one admitted call out (answered, or never sent).
    pub(crate) fn release(&self) {
        self.admitted.fetch_sub(1, Ordering::AcqRel);
    }

    /// Counts `count` admitted calls out at once (a batch's).
    pub(crate) fn release_many(&self, count: usize) {
        if count > 0 {
            self.admitted.fetch_sub(count, Ordering::AcqRel);
        }
    }

    /// Calls admitted now.
    pub(crate) fn admitted(&self) -> usize {
        self.admitted.load(Ordering::Acquire)
    }

    /// The most calls admitted at once.
    pub(crate) fn bound(&self) -> usize {
        self.bound
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admission_refuses_beyond_its_bound_and_admits_again_after_a_release() {
        let admission = Admission::new(2);
        assert!(admission.try_admit() && admission.try_admit());
        assert!(!admission.try_admit());
        assert_eq!(admission.admitted(), 2);
        admission.release();
        assert!(admission.try_admit());
        assert_eq!(admission.admitted(), 2);
    }
}
