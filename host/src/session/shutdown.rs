//! The host's shutdown through the gateway lifecycle actor (SPEC G2): `gateway:shutdown` with
//! the bounded wait, `gateway:pre-restart` only when a restart is expected, the active session's
//! end hooks under the session-end budget, and the shared state (plugin processes, the session's
//! open store files) closed only once every shutdown handler has really finished.

use hookline_actors::lifecycle::{SharedStateClosed, ShutdownRequest};
use hookline_messages::event::EventKey;
use hookline_messages::record::ArchiveEntry;

use super::{Host, HostError, HostEvent};
use crate::state::record_note;

impl Host {
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
        self.record_event_notes().await?;
        let active: Vec<_> = self.active().cloned().into_iter().collect();
        let request = ShutdownRequest {
            reason: reason.into(),
            restart_expected_ms,
            active_sessions: active.clone(),
        };
        let report = self.wiring.lifecycle.shutdown(request).await?;
        self.wiring.shut_down = true;
        let events = &mut self.engine.events;
        events.push(HostEvent::gateway(EventKey::GatewayShutdown, "bounded"));
        if restart_expected_ms.is_some() {
            events.push(HostEvent::gateway(EventKey::GatewayPreRestart, "bounded"));
        }
        let mut session = self.session.take();
        for info in active {
            events.push(HostEvent::SessionEnded(info.clone()));
            if let Some(session) = session.as_mut() {
                session.archive(&ArchiveEntry::SessionEnded(info))?;
            }
        }
        for note in report.notes {
            match session.as_mut() {
                Some(session) => record_note(events, session, note)?,
                None => events.push(HostEvent::Note {
                    text: note.text(),
                    note,
                }),
            }
        }
        if let Some(session) = session {
            self.wiring.shared.park(session);
        }
        Ok(report.closed)
    }

    /// Whether [`Host::shutdown`] ran.
    pub fn is_shut_down(&self) -> bool {
        self.wiring.shut_down
    }
}
