//! Why a soak could not start.

use hookline_host::state::HostError;
use hookline_host::tools::ToolError;

/// Why a soak could not start. A failed check is not one of these: it is in the report.
#[derive(Debug, thiserror::Error)]
pub enum SoakError {
    /// The temporary workspace could not be made.
    #[error("cannot prepare the soak's workspace: {0}")]
    Workspace(#[source] std::io::Error),
    /// The demo's tools could not be registered.
    #[error("cannot register the demo tools: {0}")]
    Tools(#[from] ToolError),
    /// The gateway could not start.
    #[error("the gateway did not start: {0}")]
    Gateway(#[from] HostError),
}
