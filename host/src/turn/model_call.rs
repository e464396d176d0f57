//! One outbound model call: `rebuild_model` (raw) first, then `transform_model`, the provider
//! call with the request as prepared for the provider, then `on_model_response` (SPEC P3.4,
//! P3.7, R5.1, R5.7).

use std::sync::Arc;

use hookline_messages::hook::{OnModelResponse, RebuildModel, TransformModel};
use hookline_messages::model::{ModelRequest, ModelResponse};
use hookline_messages::note::Note;
use hookline_messages::record::ArchiveEntry;
use sha2::{Digest, Sha256};
use tracing::Instrument;

use super::digest::hex;
use super::{TappedRequest, Turn};
use crate::provider::ProviderError;
use crate::state::{HostError, HostEvent, Step};

impl Turn<'_> {
    /// Sends `request` through the model hooks and the provider.
    ///
    /// The outer error is the host's (pipeline, store); the inner one is the provider's, which
    /// the caller turns into a stop reason.
    pub(crate) async fn model_call(
        &mut self,
        request: ModelRequest,
    ) -> Result<Result<ModelResponse, ProviderError>, HostError> {
        self.model_call_after(request, None).await
    }

    /// As [`Turn::model_call`], with the durable step before it (`step`, when no hook runs
    /// between the two) written while the provider answers: the call returns once both are
    /// done, so nothing reads the answer before the step is durable (issue 47).
    pub(crate) async fn model_call_after(
        &mut self,
        request: ModelRequest,
        step: Option<Step>,
    ) -> Result<Result<ModelResponse, ProviderError>, HostError> {
        let span = tracing::info_span!(
            "model call",
            purpose = super::wire_name(&request.purpose),
            model = tracing::field::Empty,
            outcome = tracing::field::Empty,
        );
        let result = self
            .hooks_and_provider(request, step)
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

    /// Archives an answer the host kept (a turn's, a compaction's, a side question's): the
    /// session's usage is summed from these entries, live and on resume, and the request's
    /// from the same call (issue 34).
    pub(crate) fn archive_response(&mut self, response: &ModelResponse) -> Result<(), HostError> {
        self.engine.usage.add(&response.usage);
        // Issue 34 item 5: the answer names its model, so usage adds up per model.
        let model = (self.engine.provider).answering_model(self.session.model.as_deref());
        self.session
            .archive(&ArchiveEntry::model_response(response, model))
    }

    /// The model hooks, the provider call and `on_model_response`.
    async fn hooks_and_provider(
        &mut self,
        request: ModelRequest,
        step: Option<Step>,
    ) -> Result<Result<ModelResponse, ProviderError>, HostError> {
        let purpose = request.purpose;
        let held = self.session.held_images();
        // The request moves through the raw hooks; the pipeline hands the one it was given back
        // only when a hook changed it (nothing is copied for a call no raw hook changes).
        let mut rebuilt = self.hook_with::<RebuildModel>(held, request).await?;
        // SPEC R5.7 names the raw hooks only when the request really changed: one raw hook may
        // undo another's change.
        let raw_before = rebuilt.take_before();
        let raw_changed = raw_before
            .as_ref()
            .is_some_and(|before| *before != rebuilt.value);
        let rebuilt_by = rebuilt.changed_by;
        let mut transformed = self.hook_with::<TransformModel>((), rebuilt.value).await?;
        // The request as built, before any hook: handed back by the first hook that changed it
        // (a raw hook's, else `transform_model`'s); `None` when it is the request sent.
        let built = raw_before.or_else(|| transformed.take_before());
        let transformed = transformed.value;
        // Nothing is copied for a request no hook changed, unless preparing it for the
        // provider changes it (images as text): then the request as built is kept apart.
        let built = match built {
            None if transformed.needs_preparing() => Some(transformed.clone()),
            built => built,
        };
        let sent = transformed.prepared_for_provider();
        // Issue 25: what replay compares a replayed request with (a side call's too, issue 34;
        // it is never a stored record, SPEC P2.3).
        let sha256 = {
            // The items the hooks left as built are the conversation's: the next call sends
            // them again, so the digest keeps its state after them.
            let stable = built.as_ref().map_or(sent.items.len(), |built| {
                built
                    .items
                    .iter()
                    .zip(&sent.items)
                    .take_while(|(b, s)| Arc::ptr_eq(b, s))
                    .count()
            });
            let digest = self.engine.digests.digest(&sent, stable);
            self.session.archive(&ArchiveEntry::ModelRequest {
                purpose,
                accepts_images: sent.accepts_images,
                sha256: digest.clone(),
                changes: built
                    .as_ref()
                    .and_then(|built| request_changes(built, &sent)),
            })?;
            digest
        };
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
        let call = async {
            tokio::select! {
                // A stop raised before the call (during a tool run or an approval) wins even
                // over a provider that answers at once.
                biased;
                () = stop.raised() => Err(ProviderError::Stopped),
                answer = provider.complete_for(model.as_deref(), &sent, &on_text) => answer,
            }
        };
        let answer = match step {
            // The step's append and the call at once; the answer waits for the append.
            Some(step) => {
                let (written, answer) = futures::join!(self.session.write_step(step), call);
                written?;
                answer
            }
            None => call.await,
        };
        if let Some(tap) = &self.engine.tap {
            tap.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .requests
                .push(TappedRequest {
                    built,
                    sent,
                    sha256,
                });
        }
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
    hex(&Sha256::digest(&bytes))
}

/// How the hooks (and the preparation for the provider) changed a request, as a JSON Patch from
/// the request built from the stored records to the one sent; `None` when nothing changed.
///
/// Items shared from the start are skipped (compared by pointer first), so the cost follows the
/// change, not the conversation.
pub fn request_changes(built: &ModelRequest, sent: &ModelRequest) -> Option<json_patch::Patch> {
    if built == sent {
        return None;
    }
    Some(crate::state::request_patch(built, sent))
}
