//! Faults pinned on a plugin rather than on a call: a second reply to a call already answered
//! belongs to no call in flight, so no call is skipped for it; the plugin gets a note instead
//! (issue 15 defect 3, `docs/protocol.md`). The log outlives restarts and is bounded.

use std::sync::{Mutex, PoisonError};

use hookline_messages::note::{Note, SkipReason};

/// How many distinct faults wait to be taken; more are counted only by the tracing warning.
const MAX_FAULTS: usize = 64;

/// A plugin's faults since the last [`FaultLog::take`], without repeats.
#[derive(Debug, Default)]
pub(crate) struct FaultLog {
    notes: Mutex<Vec<Note>>,
}

impl FaultLog {
    /// Records that `plugin` committed `reason`; a fault already waiting is not repeated.
    pub(crate) fn record(&self, plugin: &str, reason: SkipReason) {
        let note = Note::PluginFault {
            plugin: plugin.to_owned(),
            reason,
        };
        let mut notes = self.notes.lock().unwrap_or_else(PoisonError::into_inner);
        if notes.len() < MAX_FAULTS && !notes.contains(&note) {
            notes.push(note);
        }
    }

    /// The waiting faults, oldest first; the log is empty afterwards.
    pub(crate) fn take(&self) -> Vec<Note> {
        std::mem::take(&mut *self.notes.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fault_is_noted_once_until_taken() {
        let log = FaultLog::default();
        log.record("p", SkipReason::RepeatedReplyId);
        log.record("p", SkipReason::RepeatedReplyId);
        assert_eq!(
            log.take(),
            [Note::PluginFault {
                plugin: "p".into(),
                reason: SkipReason::RepeatedReplyId
            }]
        );
        assert!(log.take().is_empty());
    }
}
