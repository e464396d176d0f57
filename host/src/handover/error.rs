//! Why a handover could not go on.

/// A failed step of the rendezvous.
#[derive(Debug, thiserror::Error)]
pub enum HandoverError {
    /// The socket could not be bound, connected, read or written.
    #[error("the handover socket {path}: {source}")]
    Io {
        /// The rendezvous path.
        path: String,
        /// The system's error.
        source: std::io::Error,
    },
    /// Another server answers on the rendezvous: a second one is not started beside it.
    #[error("a hookline server already answers on {path}; replace it with `hookline serve ... --replace`")]
    InUse {
        /// The rendezvous path.
        path: String,
    },
    /// The peer runs as another user: nothing is handed to it, nothing taken from it.
    #[error("the process on the handover socket runs as uid {peer}, not {own}")]
    OtherUser {
        /// The peer's uid.
        peer: u32,
        /// This process's uid.
        own: u32,
    },
    /// The peer does not speak this protocol or this version.
    #[error("the peer on the handover socket is not a hookline server of this version ({0})")]
    Protocol(String),
    /// The peer closed the socket before saying what was expected.
    #[error("the peer closed the handover socket")]
    Closed,
    /// The peer said nothing within the wait.
    #[error("the peer said nothing within {} ms", .0.as_millis())]
    Timeout(std::time::Duration),
}

impl HandoverError {
    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.display().to_string(),
            source,
        }
    }
}
