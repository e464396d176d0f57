//! Stopping a model call in flight: [`Stoppable`] races the call against a [`StopHandle`]; when
//! the handle fires, the call's future is dropped (so an HTTP request is closed) and the call
//! ends as [`ProviderError::Stopped`], which the turn reports as a cancelled turn.

use std::sync::Arc;

use async_trait::async_trait;
use hookline_messages::model::{ModelRequest, ModelResponse};
use tokio::sync::watch;

use super::{OnText, Provider, ProviderError};

/// Stops the calls of a [`Stoppable`] provider. Cloning shares the handle.
///
/// A stop applies to the calls running when it is given and to calls that start before
/// [`StopHandle::reset`]; the owner resets it when the next turn begins.
#[derive(Clone, Debug)]
pub struct StopHandle {
    stopped: Arc<watch::Sender<bool>>,
}

impl StopHandle {
    /// A handle that has not stopped anything.
    pub fn new() -> Self {
        Self {
            stopped: Arc::new(watch::Sender::new(false)),
        }
    }

    /// Stops the calls in flight (and any started before the next [`StopHandle::reset`]).
    pub fn stop(&self) {
        self.stopped.send_replace(true);
    }

    /// Lets calls run again.
    pub fn reset(&self) {
        self.stopped.send_replace(false);
    }

    /// Whether a stop is in force.
    pub fn is_stopped(&self) -> bool {
        *self.stopped.borrow()
    }

    /// Resolves once a stop is in force.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping it only stops waiting.
    pub async fn stopped(&self) {
        let mut seen = self.stopped.subscribe();
        // The sender lives in `self`, so `wait_for` cannot fail while we wait.
        let _ = seen.wait_for(|stopped| *stopped).await;
    }

    /// Runs `call` unless a stop comes first: then `call` is dropped (an HTTP request is
    /// closed) and the result is [`ProviderError::Stopped`]. A stop already in force stops it
    /// at once. This is the per-call form of [`Stoppable`], for a caller that holds one handle
    /// per session (a gateway whose sessions share one provider).
    ///
    /// # Errors
    /// [`ProviderError::Stopped`], or `call`'s own error.
    pub async fn or_stopped<T>(
        &self,
        call: impl std::future::Future<Output = Result<T, ProviderError>>,
    ) -> Result<T, ProviderError> {
        tokio::select! {
            biased;
            () = self.stopped() => Err(ProviderError::Stopped),
            result = call => result,
        }
    }
}

impl Default for StopHandle {
    fn default() -> Self {
        Self::new()
    }
}

/// A provider whose calls a [`StopHandle`] can end.
pub struct Stoppable<P> {
    inner: P,
    handle: StopHandle,
}

impl<P: Provider> Stoppable<P> {
    /// Wraps `inner`; the returned handle stops its calls.
    pub fn new(inner: P) -> (Self, StopHandle) {
        let handle = StopHandle::new();
        (
            Self {
                inner,
                handle: handle.clone(),
            },
            handle,
        )
    }
}

#[async_trait]
impl<P: Provider> Provider for Stoppable<P> {
    fn takes_images(&self) -> bool {
        self.inner.takes_images()
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        self.handle.or_stopped(self.inner.complete(request)).await
    }

    async fn complete_streaming(
        &self,
        request: &ModelRequest,
        on_text: OnText<'_>,
    ) -> Result<ModelResponse, ProviderError> {
        self.handle
            .or_stopped(self.inner.complete_streaming(request, on_text))
            .await
    }
}
