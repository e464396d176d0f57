//! [`Host`]: the one-conversation embedding API. A host is one [`Conversation`] on a gateway of
//! its own: every conversation method is available on it (through `Deref`), and it adds what
//! only the owner of the whole gateway may do, [`Host::shutdown`].

use std::ops::{Deref, DerefMut};

use hookline_actors::lifecycle::SharedStateClosed;

use super::HostBuilder;
use crate::session::{shutdown, Conversation, HostError};

/// A running host: one conversation that owns its gateway. Not `Sync`: one owner drives it.
pub struct Host {
    conversation: Conversation,
}

impl Host {
    /// A builder with no plugins, no tools, the scripted provider and a refusing operator.
    pub fn builder() -> HostBuilder {
        HostBuilder::default()
    }

    pub(crate) fn new(conversation: Conversation) -> Self {
        Self { conversation }
    }

    /// Shuts the host down. Returns once the bounded waits are over (at most `shutdown_wait`,
    /// plus `pre_restart_wait` when `restart_expected_ms` is set, plus `session_end_budget`),
    /// whatever the handlers do; the returned [`SharedStateClosed`] resolves once the shared
    /// state was closed. The active session ends here (its end hooks run once, here); its end,
    /// the lifecycle notes and any pending event notes are archived in it. Later calls fail.
    ///
    /// # Errors
    /// [`HostError::Gateway`] on a second call; a store failure archiving the notes.
    pub async fn shutdown(
        &mut self,
        reason: impl Into<String>,
        restart_expected_ms: Option<u64>,
    ) -> Result<SharedStateClosed, HostError> {
        let conversation = &mut self.conversation;
        conversation.record_event_notes().await?;
        let active = conversation.active().cloned().into_iter().collect();
        let report = shutdown::shut_down(
            conversation.shared(),
            reason.into(),
            restart_expected_ms,
            active,
        )
        .await?;
        conversation
            .ended_by_shutdown(restart_expected_ms.is_some(), &report.notes)
            .await?;
        Ok(report.closed)
    }
}

impl Deref for Host {
    type Target = Conversation;

    fn deref(&self) -> &Conversation {
        &self.conversation
    }
}

impl DerefMut for Host {
    fn deref_mut(&mut self) -> &mut Conversation {
        &mut self.conversation
    }
}
