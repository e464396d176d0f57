//! A conversation's part of the gateway's shutdown (SPEC G2): the gateway lifecycle actor runs
//! `gateway:shutdown` with its bounded wait, `gateway:pre-restart` only when a restart is
//! expected, and the end hooks of every active session under the session-end budget; then each
//! conversation reports and archives what happened to its session and hands its open files to
//! the shared state, which closes only once every shutdown handler has really finished.

use hookline_actors::lifecycle::{ShutdownReport, ShutdownRequest};
use hookline_messages::event::EventKey;
use hookline_messages::note::Note;
use hookline_messages::record::ArchiveEntry;
use hookline_messages::session::SessionInfo;

use super::{Conversation, HostError, HostEvent};
use crate::shared::Shared;
use crate::state::record_note;

/// Runs the gateway lifecycle's shutdown for `active` sessions (their end hooks run there, once).
///
/// # Errors
/// [`HostError::Gateway`] on a second shutdown.
pub(crate) async fn shut_down(
    shared: &Shared,
    reason: String,
    restart_expected_ms: Option<u64>,
    active: Vec<SessionInfo>,
) -> Result<ShutdownReport, HostError> {
    let request = ShutdownRequest {
        reason,
        restart_expected_ms,
        active_sessions: active,
    };
    let report = shared.lifecycle.shutdown(request).await?;
    shared.claim_shutdown();
    Ok(report)
}

impl Conversation {
    /// Records the gateway's shutdown in this conversation: the shutdown events, its active
    /// session's end (whose hooks the lifecycle ran), and the lifecycle's `notes`, archived in
    /// the session; then parks the session's open files with the shared state.
    ///
    /// # Errors
    /// A store failure archiving the end or the notes.
    pub(crate) async fn ended_by_shutdown(
        &mut self,
        restart_expected: bool,
        notes: &[Note],
    ) -> Result<(), HostError> {
        let events = &mut self.engine.events;
        events.push(HostEvent::gateway(EventKey::GatewayShutdown, "bounded"));
        if restart_expected {
            events.push(HostEvent::gateway(EventKey::GatewayPreRestart, "bounded"));
        }
        let mut session = self.session.take();
        if let Some(session) = session.as_mut() {
            let info = session.info.clone();
            events.push(HostEvent::SessionEnded(info.clone()));
            session.archive(&ArchiveEntry::SessionEnded(info))?;
        }
        for note in notes.iter().cloned() {
            match session.as_mut() {
                Some(session) => record_note(events, session, note)?,
                None => events.push(HostEvent::Note {
                    text: note.text(),
                    note,
                }),
            }
        }
        if let Some(mut session) = session {
            session.flush().await?;
            if let Some(late) = self.shared.resources.park(session) {
                late.release().await?;
            }
        }
        Ok(())
    }

    /// Whether the gateway this conversation runs on has shut down.
    pub fn is_shut_down(&self) -> bool {
        self.shared.is_shut_down()
    }
}
