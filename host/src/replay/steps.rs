//! What happened between two turns, replayed in archive order (issue 34): each session start and
//! end runs its hook again, each awaited gateway event is delivered again to the replay's
//! handlers, each side question is asked again, each compaction runs again. What they archive
//! (the entry, then its notes, as the recording has them) is compared like a turn's.

use hookline_messages::event::{Event, WireEvent};
use hookline_messages::hook::{OnSessionEnded, OnSessionStarted};
use hookline_messages::record::ArchiveEntry;
use hookline_messages::session::SessionInfo;

use super::plan::Step;
use super::recorded::Script;
use super::Replayer;
use crate::state::HostError;
use crate::turn::{compact, Turn};

impl Replayer {
    /// Replays `steps` on `turn`'s session, in order.
    pub(super) async fn run_steps(
        &self,
        steps: &[Step],
        turn: &mut Turn<'_>,
        script: &Script,
    ) -> Result<(), HostError> {
        for step in steps {
            match step {
                Step::SessionStarted(info) => self.session_hook(turn, info, true).await?,
                Step::SessionEnded(info) => self.session_hook(turn, info, false).await?,
                Step::Event(wire) => self.event(turn, wire, script).await?,
                Step::Side(question) => {
                    turn.side_question(question.clone()).await?;
                }
                Step::Compaction => {
                    compact(turn).await?;
                }
            }
        }
        Ok(())
    }

    /// A session start or end: its entry, then its hook's notes (as the lifecycle ran it, by the
    /// session's id; SPEC P3.10, P3.11).
    async fn session_hook(
        &self,
        turn: &mut Turn<'_>,
        info: &SessionInfo,
        started: bool,
    ) -> Result<(), HostError> {
        let id = &info.session_id;
        let (entry, outcome) = if started {
            let outcome = self.pipeline.call::<OnSessionStarted>(id, info.clone());
            (
                ArchiveEntry::SessionStarted(info.clone()),
                outcome.await?.notes,
            )
        } else {
            let outcome = self.pipeline.call::<OnSessionEnded>(id, info.clone());
            (
                ArchiveEntry::SessionEnded(info.clone()),
                outcome.await?.notes,
            )
        };
        turn.session.archive(&entry)?;
        for note in outcome {
            turn.note(note)?;
        }
        Ok(())
    }

    /// An awaited event, delivered again: its entry with what the handlers did (their calls,
    /// the bootstrap files they handed on), then their notes (SPEC G1.3, G5.4).
    async fn event(
        &self,
        turn: &mut Turn<'_>,
        wire: &WireEvent,
        script: &Script,
    ) -> Result<(), HostError> {
        let event = match Event::from_wire(wire.clone()) {
            Ok(event) => event,
            Err(error) => {
                script.unmatched_now(format!(
                    "The archived event {} cannot be read ({error}); it was not delivered.",
                    wire.key
                ));
                return Ok(());
            }
        };
        let read = match &event {
            Event::AgentBootstrap(context) => Some(context.bootstrap_files.clone()),
            _ => None,
        };
        let delivery = self.pipeline.events().dispatch(event).await?;
        let handed_on = match (read, delivery.event) {
            (Some(read), Event::AgentBootstrap(after)) if after.bootstrap_files != read => {
                Some(after.bootstrap_files)
            }
            _ => None,
        };
        turn.session.archive(&ArchiveEntry::GatewayEvent {
            event: wire.clone(),
            calls: delivery.calls,
            handed_on,
        })?;
        for note in delivery.notes {
            turn.note(note)?;
        }
        Ok(())
    }
}
