//! Closing a turn a crash or a lost lease cut off (issue 22 item 2), when its session is opened
//! again: the records [`OpenTurn::closing`] makes (a failed result for every call left without
//! one, then the marker), the note, `on_turn_finished` with [`StopReason::Interrupted`], and the
//! `turn-finished` entry, all stored in the resume's one durable append.

use hookline_messages::cut_off::OpenTurn;
use hookline_messages::hook::OnTurnFinished;
use hookline_messages::record::ArchiveEntry;
use hookline_messages::user::{StopReason, TurnInfo};

use super::Turn;
use crate::state::{HostError, HostEvent};

impl Turn<'_> {
    /// Closes the cut-off turn `open`, so the next request and the plugins read what happened.
    pub(crate) async fn close_cut_off(&mut self, open: OpenTurn) -> Result<(), HostError> {
        self.session.store(&open.closing())?;
        self.note(open.note())?;
        let stop_reason = StopReason::Interrupted;
        self.hook::<OnTurnFinished>(TurnInfo {
            user_text: open.user_text,
            mode: open.mode,
            stop_reason: Some(stop_reason),
        })
        .await?;
        self.archive(ArchiveEntry::TurnFinished { stop_reason })?;
        self.engine
            .events
            .push(HostEvent::TurnFinished { stop_reason });
        Ok(())
    }
}
