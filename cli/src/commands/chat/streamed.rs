//! The chat's model: any provider, called with [`Provider::complete_streaming`] so its text
//! shows on the terminal as it arrives. The turn calls [`Provider::complete`]; this wrapper is
//! how the chat streams without the turn knowing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use hookline_messages::model::{ModelRequest, ModelResponse};

use super::console::Console;
use hookline_host::provider::{OnText, Provider, ProviderError};

/// A provider whose text goes to the console as it streams.
pub(super) struct Streamed {
    inner: Arc<dyn Provider>,
    console: Arc<Console>,
}

impl Streamed {
    /// Streams `inner`'s text to `console`.
    pub(super) fn new(inner: Arc<dyn Provider>, console: Arc<Console>) -> Self {
        Self { inner, console }
    }
}

#[async_trait]
impl Provider for Streamed {
    fn takes_images(&self) -> bool {
        self.inner.takes_images()
    }

    fn takes_images_for(&self, model: Option<&str>) -> bool {
        self.inner.takes_images_for(model)
    }

    fn serves_model(&self, name: &str) -> bool {
        self.inner.serves_model(name)
    }

    fn default_model(&self) -> Option<String> {
        self.inner.default_model()
    }

    fn model_names(&self) -> Vec<String> {
        self.inner.model_names()
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        self.complete_streaming(request, &|_| {}).await
    }

    async fn complete_streaming(
        &self,
        request: &ModelRequest,
        on_text: OnText<'_>,
    ) -> Result<ModelResponse, ProviderError> {
        self.complete_for(None, request, on_text).await
    }

    async fn complete_for(
        &self,
        model: Option<&str>,
        request: &ModelRequest,
        on_text: OnText<'_>,
    ) -> Result<ModelResponse, ProviderError> {
        let started = AtomicBool::new(false);
        let show = |piece: &str| {
            let first = !started.swap(true, Ordering::Relaxed);
            self.console.text(piece, first);
            on_text(piece);
        };
        let result = self.inner.complete_for(model, request, &show).await;
        if started.load(Ordering::Relaxed) {
            self.console.end_text();
        }
        result
    }
}
