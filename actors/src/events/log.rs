//! The bus's note log: notes from deliveries nobody awaits (queued and detached events), kept
//! once each and bounded.

use std::collections::HashSet;

use hookline_messages::note::Note;

/// Distinct notes in the order first recorded, at most `limit` of them.
pub(crate) struct NoteLog {
    notes: Vec<Note>,
    seen: HashSet<Note>,
    limit: usize,
}

impl NoteLog {
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            notes: Vec::new(),
            seen: HashSet::new(),
            limit,
        }
    }

    /// Records `notes` not seen since the last [`NoteLog::take`]. Beyond the limit a note is
    /// counted in a metric and not kept: the log never grows without bound.
    pub(crate) fn record(&mut self, notes: impl IntoIterator<Item = Note>) {
        for note in notes {
            if self.notes.len() >= self.limit {
                metrics::counter!("hookline_event_notes_discarded_total").increment(1);
            } else if self.seen.insert(note.clone()) {
                self.notes.push(note);
            }
        }
    }

    /// The notes recorded so far; the log starts over.
    pub(crate) fn take(&mut self) -> Vec<Note> {
        self.seen.clear();
        std::mem::take(&mut self.notes)
    }
}
