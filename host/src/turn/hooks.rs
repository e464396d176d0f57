//! Calling one hook from a turn: run it through the pipeline, report its effect, and archive its
//! notes in the session (the coordinator already keeps each note once per session).

use hookline_actors::plugin::Dispatch;
use hookline_actors::Outcome;
use hookline_messages::note::Note;

use super::Turn;
use crate::state::{record_note, HostError, HostEvent};

impl Turn<'_> {
    /// Runs hook `H` (whose rule needs no context) and returns the value it produced.
    pub(crate) async fn hook<H: Dispatch<Context = ()>>(
        &mut self,
        value: H::Value,
    ) -> Result<H::Value, HostError> {
        Ok(self.hook_with::<H>((), value).await?.value)
    }

    /// Runs hook `H` with the facts its rule needs, and returns the whole outcome.
    pub(crate) async fn hook_with<H: Dispatch>(
        &mut self,
        context: H::Context,
        value: H::Value,
    ) -> Result<Outcome<H::Value>, HostError> {
        let id = self.session.info.session_id.clone();
        // Kept to report the change: what the hook was given and what it made of it.
        let before = value.clone();
        let outcome = self
            .engine
            .pipeline
            .call_with::<H>(&id, context, value)
            .await?;
        if !outcome.changed_by.is_empty() {
            self.engine.events.push(HostEvent::HookChanged {
                hook: H::KIND,
                changed_by: outcome.changed_by.iter().map(ToString::to_string).collect(),
                before: serde_json::to_value(&before).unwrap_or_default(),
                after: serde_json::to_value(&outcome.value).unwrap_or_default(),
            });
        }
        for note in &outcome.notes {
            self.note(note.clone())?;
        }
        Ok(outcome)
    }

    /// Records a note in the session's archive and reports it.
    pub(crate) fn note(&mut self, note: Note) -> Result<(), HostError> {
        record_note(&mut self.engine.events, self.session, note)
    }
}
