//! Why a host operation failed. Plugins failing is never one of these: they become notes.

use hookline_actors::events::EventError;
use hookline_actors::lifecycle::GatewayError;
use hookline_actors::{PipelineError, StartError};

use crate::store::StoreError;

/// A host operation's failure.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// The hook pipeline could not be reached.
    #[error(transparent)]
    Pipeline(#[from] PipelineError),
    /// The pipeline could not start.
    #[error(transparent)]
    Start(#[from] StartError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A tool could not be registered.
    #[error("{0}")]
    Tools(String),
    /// The session lifecycle actor is gone.
    #[error("the session lifecycle has stopped")]
    LifecycleStopped,
    /// The gateway lifecycle refused (shutting down) or is gone.
    #[error(transparent)]
    Gateway(#[from] GatewayError),
    /// The event bus is gone.
    #[error(transparent)]
    Event(#[from] EventError),
    /// No session is open.
    #[error("no session is open")]
    NoSession,
    /// The server was replaced while this turn waited for an approval (issue 49): the turn was
    /// left stored as it waits, and goes on in the server that replaced this one, which asks
    /// the approval again under the same call id and deadline.
    #[error("the server was replaced while this turn waited for an approval; the turn goes on in the new server, which asks the approval again")]
    TurnMoved,
    /// The session moved to the server that replaced this one (issue 49) before this request
    /// ran: it runs there.
    #[error("the session moved to the server that replaced this one; send the request again")]
    SessionMoved,
    /// `/resume` named a session the store does not have.
    #[error("there is no stored session '{0}'")]
    UnknownSession(String),
    /// A workspace directory could not be used.
    #[error("cannot use workspace {path}: {source}")]
    Workspace {
        /// The directory.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A session asked for a model the provider does not serve (`"model"` at open, `/model`;
    /// issue 21).
    #[error("the model '{name}' is not configured here (configured: {})", configured.join(", "))]
    UnknownModel {
        /// The name asked for.
        name: String,
        /// The names the provider serves.
        configured: Vec<String>,
    },
    /// A stored session cannot be resumed as it was (issue 26): the resume is refused rather
    /// than completed with a looser default.
    #[error("session '{session}' cannot be resumed: {reason}")]
    Unrestorable {
        /// The session.
        session: String,
        /// Which stored value cannot be restored.
        reason: Unrestorable,
    },
}

/// A stored value a resume cannot restore.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unrestorable {
    /// The stored workspace is no longer an existing directory.
    #[error("its workspace '{0}' is no longer a directory")]
    WorkspaceMissing(String),
    /// The stored workspace lies outside the workspace root this host serves.
    #[error("its workspace '{0}' is outside this server's workspace root")]
    WorkspaceOutsideFence(String),
    /// The stored model is not one the provider serves.
    #[error("its model '{0}' is not configured here")]
    UnknownModel(String),
}
