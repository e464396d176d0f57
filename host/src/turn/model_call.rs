//! One outbound model call: `rebuild_model` (raw) first, then `transform_model`, the provider
//! call with the request as prepared for the provider, then `on_model_response` (SPEC P3.4,
//! P3.7, R5.1, R5.7).

use hookline_messages::hook::{OnModelResponse, RebuildModel, TransformModel};
use hookline_messages::model::{ModelRequest, ModelResponse, Purpose};
use hookline_messages::note::Note;
use hookline_messages::record::ArchiveEntry;
use sha2::{Digest, Sha256};
use tracing::Instrument;

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
        let span = tracing::info_span!(
            "model call",
            purpose = super::wire_name(&request.purpose),
            model = tracing::field::Empty,
            outcome = tracing::field::Empty,
        );
        let result = self
            .hooks_and_provider(request)
            .instrument(span.clone())
            .await;
        if !span.is_disabled() {
            if let Some(model) = &self.session.model {
                span.record("model", model.as_str());
            }
            match &result {
                Ok(Ok(_)) => span.record("outcome", "answered"),
                Ok(Err(error)) => span.record("outcome", tracing::field::display(error)),
                Err(error) => span.record("outcome", tracing::field::display(error)),
            };
        }
        result
    }

    /// The model hooks, the provider call and `on_model_response`.
    async fn hooks_and_provider(
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
        let raw_before = rebuilt.before;
        let transformed = self.hook_with::<TransformModel>((), rebuilt.value).await?;
        // The request as built, before any hook: handed back by the first hook that changed it
        // (a raw hook's, else `transform_model`'s), else the request sent is that one.
        let built = raw_before.or(transformed.before);
        let transformed = transformed.value;
        // Unchanged by every hook: the request built is the one about to be prepared (one copy
        // for the archive's diff and replay's tap; the hooks themselves copied nothing).
        let built = &built.unwrap_or_else(|| transformed.clone());
        let sent = transformed.prepared_for_provider();
        // Issue 25: what replay compares a replayed request with. A side call is stored nowhere
        // (SPEC P2.3).
        if purpose != Purpose::Side {
            if let Some(tap) = &self.engine.tap {
                tap.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push((built.clone(), sent.clone()));
            }
            self.session.archive(&ArchiveEntry::ModelRequest {
                purpose,
                accepts_images: sent.accepts_images,
                sha256: request_digest(&sent),
                changes: request_changes(built, &sent),
            })?;
        }
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

/// The SHA-256 of a request as sent (serde_json's bytes), in lowercase hex: what the archive
/// keeps of each outbound request (issue 25).
pub fn request_digest(request: &ModelRequest) -> String {
    let bytes = serde_json::to_vec(request).unwrap_or_default();
    Sha256::digest(&bytes)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// How the hooks (and the preparation for the provider) changed a request, as a JSON Patch from
/// the request built from the stored records to the one sent; `None` when nothing changed.
pub fn request_changes(built: &ModelRequest, sent: &ModelRequest) -> Option<json_patch::Patch> {
    if built == sent {
        return None;
    }
    let built = serde_json::to_value(built).unwrap_or_default();
    let sent = serde_json::to_value(sent).unwrap_or_default();
    Some(json_patch::diff(&built, &sent))
}
