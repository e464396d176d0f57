//! One outbound model call: `rebuild_model` (raw) first, then `transform_model`, the provider
//! call with the request as prepared for the provider, then `on_model_response` (SPEC P3.4,
//! P3.7, R5.1, R5.7).

use hookline_messages::hook::{OnModelResponse, RebuildModel, TransformModel};
use hookline_messages::model::{ModelRequest, ModelResponse};
use hookline_messages::note::Note;
use hookline_messages::record::ArchiveEntry;

use super::Turn;
use crate::provider::ProviderError;
use crate::state::{HostError, HostEvent};

impl Turn<'_> {
    /// Sends `request` through the model hooks and the provider.
    ///
    /// The outer error is the host's (pipeline, store); the inner one is the provider's, which
    /// the caller turns into a stop reason.
    pub(crate) async fn model_call(
        &mut self,
        request: ModelRequest,
    ) -> Result<Result<ModelResponse, ProviderError>, HostError> {
        let purpose = request.purpose;
        let held = self.session.held_images();
        // The request moves through the raw hooks; the pipeline hands the one it was given back
        // only when a hook changed it (nothing is copied for a call no raw hook changes).
        let rebuilt = self.hook_with::<RebuildModel>(held, request).await?;
        // SPEC R5.7 names the raw hooks only when the request really changed: one raw hook may
        // undo another's change.
        let raw_changed = rebuilt
            .before
            .as_ref()
            .is_some_and(|before| *before != rebuilt.value);
        let rebuilt_by = rebuilt.changed_by;
        let transformed = self.hook::<TransformModel>(rebuilt.value).await?;
        let sent = transformed.prepared_for_provider();
        self.engine.events.push(HostEvent::ModelCall {
            purpose,
            items: sent.items.len(),
        });
        let provider = self.engine.provider.clone();
        // The session's model reaches the provider on every call: `/model` switches it from the
        // next call on (issue 21).
        let model = self.session.model.clone();
        let stop = self.engine.stop.clone();
        // Streamed text goes to the live feed only (a server's clients, a terminal); the whole
        // answer is reported once it is complete.
        let live = self.engine.events.live().cloned();
        let on_text = move |delta: &str| {
            if let Some(live) = &live {
                live(&HostEvent::ModelText {
                    delta: delta.to_owned(),
                });
            }
        };
        let answer = tokio::select! {
            // A stop raised before the call (during a tool run or an approval) wins even over a
            // provider that answers at once.
            biased;
            () = stop.raised() => Err(ProviderError::Stopped),
            answer = provider.complete_for(model.as_deref(), &sent, &on_text) => answer,
        };
        match answer {
            Ok(response) => {
                // SPEC P3.7: the hook reads the candidate; the host keeps what it received.
                self.hook::<OnModelResponse>(response.clone()).await?;
                Ok(Ok(response))
            }
            Err(error) => {
                let text = error.to_string();
                self.engine.events.push(HostEvent::ModelFailed {
                    purpose,
                    error: text.clone(),
                });
                self.session.archive(&ArchiveEntry::ModelFailure {
                    purpose,
                    error: text,
                })?;
                // SPEC R5.7: a hint for work and plan calls whose request a raw hook changed;
                // one note per failure. A `/stop` is not a failure.
                if purpose.is_turn_call() && raw_changed && error != ProviderError::Stopped {
                    let plugins = rebuilt_by.iter().map(ToString::to_string).collect();
                    self.note(Note::RawChangeFailure { plugins })?;
                }
                Ok(Err(error))
            }
        }
    }
}
