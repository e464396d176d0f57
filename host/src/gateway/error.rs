//! Why a gateway request was refused or failed.

use hookline_messages::session::SessionId;

use crate::state::HostError;

/// A gateway request's failure. Each variant is one answer a server gives its client.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// The gateway is shutting down: no new sessions or turns.
    #[error("the gateway is shutting down")]
    Draining,
    /// As many sessions are open as the gateway allows.
    #[error("the gateway already holds its limit of {0} sessions")]
    Full(usize),
    /// The session's inbox is full: too many requests wait for it.
    #[error("session '{0}' has too many requests waiting")]
    Busy(SessionId),
    /// No open session has this key.
    #[error("no open session is called '{0}'")]
    Unknown(SessionId),
    /// The session has ended (closed, or the gateway shut down).
    #[error("session '{0}' has ended")]
    Ended(SessionId),
    /// The server is handing its sessions over to the one that replaces it (issue 49): this
    /// request must go to the new server (the old one no longer takes new work).
    #[error("this server is handing its sessions over to the server that replaces it")]
    Moving,
    /// The host failed running the request.
    #[error(transparent)]
    Host(#[from] HostError),
}
