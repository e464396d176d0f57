//! Closing a turn a crash or a lost lease cut off (issue 22 item 2), when its session is opened
//! again: the records [`OpenTurn::closing`] makes (a failed result for every call left without
//! one, then the marker), the note and the `turn-finished` entry, stored in one durable append
//! before `on_turn_finished` runs with [`StopReason::Interrupted`] (as every turn ends,
//! [`Turn::finish`]).

use hookline_messages::cut_off::OpenTurn;
use hookline_messages::user::{StopReason, TurnInfo};

use super::Turn;
use crate::state::HostError;

impl Turn<'_> {
    /// Closes the cut-off turn `open`, so the next request and the plugins read what happened.
    pub(crate) async fn close_cut_off(&mut self, open: OpenTurn) -> Result<(), HostError> {
        self.session.store(&open.closing())?;
        self.note(open.note())?;
        let info = TurnInfo {
            user_text: open.user_text,
            mode: open.mode,
            stop_reason: None,
        };
        self.finish(info, StopReason::Interrupted).await
    }
}
