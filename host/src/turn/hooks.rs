//! Calling one hook from a turn: run it through the pipeline, report its effect, and archive its
//! notes in the session (the coordinator already keeps each note once per session).

use hookline_actors::plugin::Dispatch;
use hookline_actors::Outcome;
use hookline_messages::hook::HookKind;
use hookline_messages::note::Note;

use super::{TappedChange, Turn};
use crate::state::{record_note, Changes, Detail, HostError, HostEvent};

impl Turn<'_> {
    /// Runs hook `H` (whose rule needs no context) and returns the value it produced.
    pub(crate) async fn hook<H: Dispatch<Context = ()>>(
        &mut self,
        value: H::Value,
    ) -> Result<H::Value, HostError>
    where
        H::Value: Changes,
    {
        Ok(self.hook_with::<H>((), value).await?.value)
    }

    /// Runs hook `H` with the facts its rule needs, and returns the whole outcome.
    ///
    /// The value moves into the pipeline: nothing is copied to report the change. When a plugin
    /// changed it, the pipeline hands the value it was given back beside the new one
    /// ([`Outcome::before`]), and the event carries the patch between them (the full values too
    /// only with [`Detail::Full`]).
    pub(crate) async fn hook_with<H: Dispatch>(
        &mut self,
        context: H::Context,
        value: H::Value,
    ) -> Result<Outcome<H::Value>, HostError>
    where
        H::Value: Changes,
    {
        let pipeline = &self.engine.pipeline;
        // By the session's key once the conversation opened it on the pipeline (no hashing, the
        // shard's own copy of the id); by its id before that.
        let outcome = match &self.session.pipeline_key {
            Some(key) => pipeline.call_with::<H>(key, context, value).await?,
            None => {
                pipeline
                    .call_with::<H>(&self.session.info.session_id, context, value)
                    .await?
            }
        };
        let changed = !outcome.changed_by.is_empty();
        if let (Some(tap), true) = (&self.engine.tap, changed) {
            // A replay: what it blames differences on, without a patch nobody reads.
            let request = matches!(H::KIND, HookKind::RebuildModel | HookKind::TransformModel);
            let change = TappedChange {
                hook: H::KIND,
                by: outcome.changed_by.iter().map(ToString::to_string).collect(),
                after: (!request).then(|| crate::state::patch_json(&outcome.value)),
            };
            tap.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .changes
                .push(change);
        } else if let Some(before) = outcome.before().filter(|_| changed) {
            let full = self.engine.events.detail() == Detail::Full;
            self.engine.events.push(HostEvent::HookChanged {
                hook: H::KIND,
                changed_by: outcome.changed_by.iter().map(ToString::to_string).collect(),
                patch: H::Value::patch(&before, &outcome.value),
                before: full.then(|| crate::state::patch_json(&*before)),
                after: full.then(|| crate::state::patch_json(&outcome.value)),
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
