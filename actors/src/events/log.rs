//! The bus's note log: notes from deliveries nobody awaits (queued and detached events), kept
//! once each and bounded.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use hookline_messages::note::Note;

/// Distinct notes in the order first recorded, at most `limit` of them.
pub(crate) struct NoteLog {
    notes: Vec<Note>,
    seen: HashSet<Note>,
    limit: usize,
    /// Whether notes wait to be taken, read without a message by the bus's handles
    /// ([`NoteLog::holding`]).
    holds: Arc<AtomicBool>,
}

impl NoteLog {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            notes: Vec::new(),
            seen: HashSet::new(),
            limit,
            holds: Arc::default(),
        }
    }

    /// A flag that is set while notes wait to be taken: a caller that finds it clear (and no
    /// drop to note) has nothing to take, and need not message the bus (its thread is
    /// another's: issue 47 found one round trip to it per turn).
    pub(crate) fn holding(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.holds)
    }

    /// Records `notes` not seen since the last [`NoteLog::take`]. Beyond the limit a note is
    /// counted in a metric and not kept: the log never grows without bound.
    pub(crate) fn record(&mut self, notes: impl IntoIterator<Item = Note>) {
        for note in notes {
            if self.notes.len() >= self.limit {
                metrics::counter!("hookline_event_notes_discarded_total").increment(1);
            } else if self.seen.insert(note.clone()) {
                self.notes.push(note);
                self.holds.store(true, Ordering::Release);
            }
        }
    }

    /// The notes recorded so far; the log starts over.
    pub(crate) fn take(&mut self) -> Vec<Note> {
        self.seen.clear();
        self.holds.store(false, Ordering::Release);
        std::mem::take(&mut self.notes)
    }
}
