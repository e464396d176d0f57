//! Per-session state the coordinator owns: the call queue that keeps a session's calls in order,
//! and the notes the session has already seen.

use std::collections::{HashSet, VecDeque};

use actix::Context;
use hookline_messages::note::Note;

use super::PipelineCoordinator;

/// A call waiting for its session's previous call to finish (only a busy session's later calls
/// wait here; a free session's call goes straight into its hook's batch).
pub(crate) type Queued =
    Box<dyn FnOnce(&mut PipelineCoordinator, &mut Context<PipelineCoordinator>)>;

#[derive(Default)]
pub(crate) struct SessionState {
    pub(crate) running: bool,
    pub(crate) forget: bool,
    pub(crate) queue: VecDeque<Queued>,
    seen: HashSet<Note>,
}

impl SessionState {
    /// Keeps the notes this session has not recorded before (SPEC P1.4: the same note is recorded
    /// once per session, not once per call).
    pub(crate) fn first_seen(&mut self, notes: Vec<Note>) -> Vec<Note> {
        notes
            .into_iter()
            .filter(|note| self.seen.insert(note.clone()))
            .collect()
    }
}
