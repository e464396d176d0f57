//! Compaction events (SPEC G5.6, G3.3): `before` when a compaction starts, `after` only when it
//! completes. The [`CompactionInFlight`] token makes a lone `after` impossible to emit.

use hookline_actors::events::{Delivery, EventBus, EventError};
use hookline_messages::event::{CompactAfterContext, CompactBeforeContext, Event};

use super::GatewayEvents;

/// A compaction whose `before` event was emitted. Finish it with exactly one of
/// [`completed`](Self::completed), [`failed`](Self::failed) or [`skipped`](Self::skipped).
#[derive(Debug)]
#[must_use = "a compaction ends as completed, failed or skipped"]
pub struct CompactionInFlight {
    bus: EventBus,
    session_id: String,
    missing_session_key: bool,
}

/// What a completed compaction reports. Unknown token counts stay `None` (absent, never zero).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactionResult {
    /// Messages after compaction.
    pub message_count: u64,
    /// Tokens after compaction, when counted.
    pub token_count: Option<u64>,
    /// Messages folded into the summary.
    pub compacted_count: u64,
    /// The summary's length in characters.
    pub summary_length: Option<u64>,
    /// Tokens before, when counted.
    pub tokens_before: Option<u64>,
    /// Tokens after, when counted.
    pub tokens_after: Option<u64>,
    /// The first entry kept verbatim.
    pub first_kept_entry_id: Option<String>,
}

impl GatewayEvents {
    /// Emits `session:compact:before` and waits for its handlers. A retry calls this again
    /// (SPEC G3.3: `before` may repeat).
    ///
    /// # Errors
    /// [`EventError::Stopped`] when the bus is gone.
    pub async fn compaction_started(
        &self,
        before: CompactBeforeContext,
    ) -> Result<(CompactionInFlight, Delivery), EventError> {
        let in_flight = CompactionInFlight {
            bus: self.bus.clone(),
            session_id: before.session_id.clone(),
            missing_session_key: before.missing_session_key,
        };
        let delivery = self
            .bus
            .dispatch(Event::SessionCompactBefore(before))
            .await?;
        Ok((in_flight, delivery))
    }
}

impl CompactionInFlight {
    /// The compaction completed: emits `session:compact:after` and waits for its handlers.
    ///
    /// # Errors
    /// [`EventError::Stopped`] when the bus is gone.
    pub async fn completed(self, result: CompactionResult) -> Result<Delivery, EventError> {
        let after = CompactAfterContext {
            session_id: self.session_id,
            missing_session_key: self.missing_session_key,
            message_count: result.message_count,
            token_count: result.token_count,
            compacted_count: result.compacted_count,
            summary_length: result.summary_length,
            tokens_before: result.tokens_before,
            tokens_after: result.tokens_after,
            first_kept_entry_id: result.first_kept_entry_id,
        };
        self.bus.dispatch(Event::SessionCompactAfter(after)).await
    }

    /// The compaction failed: no `after` is emitted (SPEC G3.3).
    pub fn failed(self) {}

    /// The compaction was skipped: no `after` is emitted (SPEC G3.3).
    pub fn skipped(self) {}
}
