//! A turn taken over while it waited for an operator's approval (issue 40 item 3): on a
//! conversation that continues such turns (a gateway's), resuming its session keeps the turn
//! open instead of closing it as cut off, and [`Conversation::continue_waiting_turn`] asks again
//! and goes on with it. Every other cut-off turn is closed as before (`turn/cut_off.rs`).

use hookline_messages::cut_off::{OpenTurn, WaitingApproval};
use hookline_messages::user::StopReason;

use super::Conversation;
use crate::state::HostError;

/// Whether this conversation continues waiting turns, and the one kept to continue.
#[derive(Default)]
pub(crate) struct WaitingTurn {
    continues: bool,
    turn: Option<(OpenTurn, WaitingApproval)>,
}

impl WaitingTurn {
    /// Keeps `open` to continue when it waits for an approval and this conversation continues
    /// such turns; otherwise hands it back, to be closed.
    pub(crate) fn keep(&mut self, mut open: OpenTurn) -> Option<OpenTurn> {
        match open.waiting.take() {
            Some(waiting) if self.continues => {
                self.turn = Some((open, waiting));
                None
            }
            waiting => {
                open.waiting = waiting;
                Some(open)
            }
        }
    }
}

impl Conversation {
    /// Makes resuming a session whose turn waits for an approval keep that turn open, to go on
    /// with [`Conversation::continue_waiting_turn`] (a gateway, whose operator answers remotely).
    pub(crate) fn continue_waiting_approvals(&mut self) {
        self.waiting.continues = true;
    }

    /// Whether a resumed turn waits to be continued.
    pub(crate) fn has_waiting_turn(&self) -> bool {
        self.waiting.turn.is_some()
    }

    /// Continues the resumed turn that waits for an approval: asks the operator again (same call
    /// id, deadline from the first question), then runs the rest of the turn. `None` when no
    /// turn waits.
    ///
    /// # Errors
    /// As a user turn's.
    pub(crate) async fn continue_waiting_turn(&mut self) -> Result<Option<StopReason>, HostError> {
        let Some((open, waiting)) = self.waiting.turn.take() else {
            return Ok(None);
        };
        self.engine.stop.clear();
        let stop = self.turn()?.continue_waiting(open, waiting).await?;
        self.touch();
        self.record_event_notes().await?;
        self.flush().await?;
        Ok(Some(stop))
    }
}
