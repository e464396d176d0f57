//! Errors of the gateway lifecycle.

use crate::events::EventError;

/// Why a lifecycle request was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GatewayError {
    /// Shutdown has already begun.
    #[error("the gateway is shutting down")]
    ShuttingDown,
    /// The lifecycle actor or the event bus has stopped.
    #[error("the gateway has stopped")]
    Stopped,
}

impl From<EventError> for GatewayError {
    fn from(_: EventError) -> Self {
        Self::Stopped
    }
}
