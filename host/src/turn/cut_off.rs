//! Closing a turn a crash or a lost lease cut off (issue 22 item 2), when its session is opened
//! again: the records [`OpenTurn::closing`] makes (a failed result for every call left without
//! one, then the marker), the note and the `turn-finished` entry, stored in one durable append
//! before `on_turn_finished` runs with [`StopReason::Interrupted`] (as every turn ends,
//! [`Turn::finish`]).
//!
//! The one exception (issue 40 item 3): a turn cut off while the operator was asked about a call
//! ([`OpenTurn::waiting`]) is continued on a gateway instead: the operator is asked again with
//! the same call id and the deadline counted from the first question; the answer decides the
//! call, which then runs (once, here) or is refused, and the turn goes on as it would have.

use hookline_messages::cut_off::{OpenTurn, WaitingApproval};
use hookline_messages::record::Decider;
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

    /// Continues the turn `open`, cut off while `waiting` was asked: asks again, then the call's
    /// remaining steps, the turn's later calls, its further model calls (within what is left of
    /// its budget) and its end.
    pub(crate) async fn continue_waiting(
        &mut self,
        open: OpenTurn,
        waiting: WaitingApproval,
    ) -> Result<StopReason, HostError> {
        let WaitingApproval {
            call,
            classification,
            asked_ms,
            later_calls,
            model_calls,
        } = waiting;
        let purpose = super::purpose_of(open.mode);
        let images_allowed = self.request(purpose, None).accepts_images;
        let answer = (self.engine.operator)
            .answer_asked(&call, &classification, asked_ms)
            .await;
        if let Some(note) = answer.note {
            self.note(note)?;
        }
        let decision = self.record_approval(
            &call,
            classification,
            (answer.decision, Decider::Operator),
            answer.answered_by,
        )?;
        self.finish_call(&call, decision, images_allowed).await?;
        for later in later_calls {
            self.tool_call(later, images_allowed).await?;
        }
        // Issue 49: the process that continues the turn may run other plugins (a replaced
        // server): its later model calls carry the system text they compose now (stored only
        // when it changed, SPEC R2).
        self.compose_turn_prompt(open.mode).await?;
        // The turn's budget goes on from the calls it made before it was cut off (issue 46
        // item 8): a takeover never hands a turn a fresh one.
        let stop_reason = self.model_loop(open.mode, model_calls).await?;
        let info = TurnInfo {
            user_text: open.user_text,
            mode: open.mode,
            stop_reason: None,
        };
        self.finish(info, stop_reason).await?;
        Ok(stop_reason)
    }
}
