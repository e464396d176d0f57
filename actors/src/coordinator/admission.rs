//! A shard's admission count, shared by the callers and the coordinator: a call is counted (or
//! refused with `Overloaded`) by its caller before it is sent, so a backlog is shed at the door,
//! never parked in the callers waiting for room in the coordinator's mailbox.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Calls admitted to one shard (running or queued behind their session), and the bound.
#[derive(Debug)]
pub(crate) struct Admission {
    admitted: AtomicUsize,
    bound: usize,
}

impl Admission {
    pub(crate) fn new(bound: usize) -> Self {
        Self {
            admitted: AtomicUsize::new(0),
            bound: bound.max(1),
        }
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
