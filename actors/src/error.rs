//! Errors of the actor layer.

/// Why a hook call produced no outcome. A failing plugin is never one of these: it is skipped
/// with a note and the call still completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PipelineError {
    /// The coordinator has stopped.
    #[error("the hook pipeline has stopped")]
    Stopped,
    /// Too many calls are admitted already; retry later.
    #[error("the hook pipeline is overloaded")]
    Overloaded,
}

/// Why a pipeline could not start.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StartError {
    /// Two plugins share a name.
    #[error("two plugins are named '{0}'")]
    DuplicateName(String),
}
