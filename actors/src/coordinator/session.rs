//! Per-session state the coordinator owns, in a dense table (issue 23): each session gets a slot
//! when it is first seen or opened ([`Pipeline::open_session`]), and its calls carry the slot, so
//! releasing a finished call indexes the table instead of hashing the session id, and a call made
//! with a [`SessionKey`] is admitted without hashing at all. A slot holds the call queue that keeps
//! a session's calls in order and the notes the session has already seen.
//!
//! [`Pipeline::open_session`]: crate::Pipeline::open_session
//! [`SessionKey`]: crate::SessionKey

use std::collections::{HashSet, VecDeque};

use actix::Context;
use hookline_messages::note::Note;
use hookline_messages::session::SessionId;
use rustc_hash::FxHashMap;

use super::PipelineCoordinator;

/// A call waiting for its session's previous call to finish (only a busy session's later calls
/// wait here; a free session's call goes straight into its hook's batch).
pub(crate) type Queued =
    Box<dyn FnOnce(&mut PipelineCoordinator, &mut Context<PipelineCoordinator>)>;

#[derive(Default)]
pub(crate) struct SessionState {
    /// The session in this slot; `None` while the slot is free.
    id: Option<SessionId>,
    pub(crate) running: bool,
    pub(crate) forget: bool,
    pub(crate) queue: VecDeque<Queued>,
    seen: HashSet<Note>,
}

impl SessionState {
    /// Keeps the notes this session has not recorded before (SPEC P1.4: the same note is recorded
    /// once per session, not once per call).
    pub(crate) fn first_seen(&mut self, notes: impl IntoIterator<Item = Note>) -> Vec<Note> {
        notes
            .into_iter()
            .filter(|note| self.seen.insert(note.clone()))
            .collect()
    }
}

/// The shard's sessions: a dense table of slots, the slot of each session id, and the free slots.
#[derive(Default)]
pub(crate) struct Sessions {
    slots: Vec<SessionState>,
    index: FxHashMap<SessionId, u32>,
    free: Vec<u32>,
}

impl Sessions {
    /// The slot of `id`: `hint` when it holds `id` (a [`crate::SessionKey`]'s slot: no hashing),
    /// else the slot the id has, else a new one.
    pub(crate) fn slot(&mut self, id: &SessionId, hint: Option<u32>) -> u32 {
        if let Some(slot) = hint {
            if self.holds(slot, id) {
                return slot;
            }
        }
        if let Some(&slot) = self.index.get(id) {
            return slot;
        }
        let state = SessionState {
            id: Some(id.clone()),
            ..SessionState::default()
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                if let Some(free) = self.slots.get_mut(slot as usize) {
                    *free = state;
                }
                slot
            }
            None => {
                self.slots.push(state);
                u32::try_from(self.slots.len() - 1).unwrap_or(u32::MAX)
            }
        };
        self.index.insert(id.clone(), slot);
        slot
    }

    /// Whether `slot` holds `id` (a short comparison of the id, no hashing).
    fn holds(&self, slot: u32, id: &SessionId) -> bool {
        self.slots
            .get(slot as usize)
            .and_then(|state| state.id.as_ref())
            .is_some_and(|held| held == id)
    }

    /// The state in `slot`, if the slot holds a session.
    pub(crate) fn get_mut(&mut self, slot: u32) -> Option<&mut SessionState> {
        self.slots
            .get_mut(slot as usize)
            .filter(|state| state.id.is_some())
    }

    /// How many sessions hold a slot.
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    /// The slot of `id`, if it has one.
    pub(crate) fn find(&self, id: &SessionId) -> Option<u32> {
        self.index.get(id).copied()
    }

    /// Frees `slot` (its session's state is dropped; the slot is reused by the next new session).
    pub(crate) fn close(&mut self, slot: u32) {
        let Some(state) = self.slots.get_mut(slot as usize) else {
            return;
        };
        if let Some(id) = state.id.take() {
            self.index.remove(&id);
            *state = SessionState::default();
            self.free.push(slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_dense_reused_after_close_and_a_stale_hint_falls_back_to_the_id() {
        let mut sessions = Sessions::default();
        let (a, b, c) = (
            SessionId::new("a"),
            SessionId::new("b"),
            SessionId::new("c"),
        );
        assert_eq!(sessions.slot(&a, None), 0);
        assert_eq!(sessions.slot(&b, None), 1);
        assert_eq!(sessions.slot(&a, Some(0)), 0);
        // A hint that holds another session is ignored.
        assert_eq!(sessions.slot(&a, Some(1)), 0);
        sessions.close(0);
        assert!(sessions.get_mut(0).is_none() && sessions.find(&a).is_none());
        assert_eq!(sessions.slot(&c, None), 0, "the freed slot is reused");
        assert_eq!(
            sessions.slot(&a, Some(0)),
            2,
            "a stale key's slot holds another session"
        );
    }
}
