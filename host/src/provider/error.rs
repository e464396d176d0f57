//! [`ProviderError`]: why a model call failed, in words the operator can act on.
//!
//! No variant carries the API key: texts that come from a server are passed through
//! `redact` (in `hookline-providers`) before they land here (issue 12 item 1).

/// Why a model call failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The provider answered with an error.
    #[error("the provider failed: {0}")]
    Failed(String),
    /// A scripted provider had no reply left for this call.
    #[error("the scenario has no model reply left for this call")]
    NoReplyLeft,
    /// The operator typed `/stop` (or pressed Ctrl-C) while the call ran.
    #[error("the call was stopped")]
    Stopped,
    /// The provider is configured in a way that cannot work (a missing key variable, a bad URL).
    #[error("the provider is misconfigured: {0}")]
    Config(String),
    /// The provider could not be reached, or did not answer in time.
    #[error("the provider could not be reached: {0}")]
    Unreachable(String),
    /// The provider answered with an HTTP error status, after every attempt allowed.
    #[error("the provider answered {status} after {attempts} attempt(s): {message}")]
    Status {
        /// The HTTP status of the last attempt.
        status: u16,
        /// How many attempts were made.
        attempts: u32,
        /// The server's own explanation, shortened, with the key removed.
        message: String,
    },
    /// The reply is not what the API promises (bad JSON, no choices, a cut stream).
    #[error("the provider's reply is malformed: {0}")]
    Malformed(String),
    /// The reply is well-formed but holds something the host cannot represent.
    #[error("the provider's reply cannot be represented: {0}")]
    Unrepresentable(String),
    /// A failure replayed from a session's archive (`hookline replay`), in the words it was
    /// archived with.
    #[error("{0}")]
    Replayed(String),
    /// The request holds something this provider cannot send (an image without bytes).
    #[error("the request cannot be sent to this provider: {0}")]
    Unsendable(String),
}
