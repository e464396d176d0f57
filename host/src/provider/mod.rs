//! Model providers: the [`Provider`] trait, and the providers that need no network. The HTTP
//! providers (OpenAI-compatible servers) live in the crate `hookline-providers`
//! (`docs/providers.md`).
//!
//! - [`ScriptedProvider`]: the embedded default; replies come from a scenario, and every request
//!   is recorded exactly as sent.
//! - [`EchoProvider`]: the offline model of servers, load tests and `hookline chat` without a
//!   provider: it echoes, calls a tool when a message says `call <tool> <json>`, and (for chat)
//!   makes one demo tool call per message, so a session always runs.
//!
//! A provider receives requests already prepared ([`ModelRequest::prepared_for_provider`]): the
//! hooks have run, images sit only where the model may take them (SPEC R5.5, R5.6).

mod echo;
mod error;
mod scripted;

pub use echo::{EchoProvider, ECHO_FILE};

use async_trait::async_trait;
use hookline_messages::model::{ModelRequest, ModelResponse};

pub use error::ProviderError;
pub use scripted::ScriptedProvider;

/// Where a provider offers model text as it arrives (one call per text delta, in order).
pub type OnText<'a> = &'a (dyn Fn(&str) + Send + Sync);

/// A model provider.
#[async_trait]
pub trait Provider: Send + Sync + 'static {
    /// Whether the current model takes images (SPEC R5.6).
    fn takes_images(&self) -> bool;

    /// Whether the model called `model` (the session's choice; `None`: the provider's default)
    /// takes images (SPEC R5.6). The turn engine asks this for every request, so a provider
    /// with several models answers per model. A provider with one model answers
    /// [`Provider::takes_images`] for every name (the default); a wrapper forwards it.
    fn takes_images_for(&self, model: Option<&str>) -> bool {
        let _ = model;
        self.takes_images()
    }

    /// Whether this provider can answer for the model called `name` (what `/model` and a
    /// session's stored model ask for). A resume refuses a session whose stored model is not
    /// served here rather than running it on another (issue 26). The default serves any name:
    /// a provider with one model treats the name as a label.
    fn serves_model(&self, name: &str) -> bool {
        let _ = name;
        true
    }

    /// The model calls go to when a session chose none, if this provider names its models.
    fn default_model(&self) -> Option<String> {
        None
    }

    /// The model that answers a call for `requested` (the session's model; `None`: it chose
    /// none), whose name its usage is counted under (issue 34 item 5). The default: the model
    /// asked for, else [`Provider::default_model`].
    fn answering_model(&self, requested: Option<&str>) -> Option<String> {
        requested
            .map(str::to_owned)
            .or_else(|| self.default_model())
    }

    /// The names of the models this provider serves, when it serves a fixed set (a server lists
    /// them when a session asks for another). Empty: any name, as a label (the default).
    fn model_names(&self) -> Vec<String> {
        Vec::new()
    }

    /// Sends one request, already prepared for the provider
    /// ([`ModelRequest::prepared_for_provider`]).
    ///
    /// # Errors
    /// [`ProviderError`] when the call fails.
    ///
    /// # Cancel safety
    /// Dropping the future abandons the call: a provider that talks to a server closes the
    /// request, so `/stop` costs the server nothing more.
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError>;

    /// Sends one request like [`Provider::complete`], and offers each piece of model text to
    /// `on_text` as it arrives. The response is the same one `complete` would return: the
    /// pieces, joined, are its assistant text. Providers that cannot stream call `complete` and
    /// offer nothing (the default).
    ///
    /// # Errors
    /// [`ProviderError`] when the call fails; text already offered stays offered.
    async fn complete_streaming(
        &self,
        request: &ModelRequest,
        on_text: OnText<'_>,
    ) -> Result<ModelResponse, ProviderError> {
        let _ = on_text;
        self.complete(request).await
    }

    /// Sends one request for the model called `model` (the session's choice, `/model`; `None`:
    /// the provider's default), text offered as in [`Provider::complete_streaming`]. The turn
    /// engine calls this, so a session's model reaches the provider on every call (issue 21). A
    /// provider with one model ignores the name (the default).
    ///
    /// # Errors
    /// [`ProviderError`] when the call fails.
    async fn complete_for(
        &self,
        model: Option<&str>,
        request: &ModelRequest,
        on_text: OnText<'_>,
    ) -> Result<ModelResponse, ProviderError> {
        let _ = model;
        self.complete_streaming(request, on_text).await
    }
}
