//! The gateway lifecycle actor: `gateway:startup` once the plugins have loaded, and a shutdown
//! that bounds the caller's wait without cancelling handlers (SPEC G2, G5.7).
//!
//! Shutdown, in order:
//! 1. `gateway:shutdown`: the caller waits at most `shutdown_wait` (default 5 s);
//! 2. `gateway:pre-restart`, only when `restartExpectedMs` is set: its own `pre_restart_wait`
//!    (default 10 s), independent of the first;
//! 3. `on_session_ended` for every still-active session, in parallel, under one total
//!    `session_end_budget` (default 2 s); a call refused by a full admission bound asks again
//!    within the budget, so none is skipped silently;
//! 4. the caller is released with the notes. In the background, once every handler of steps 1
//!    and 2 has really finished (a timeout never cancels one, G2.2), the host's [`SharedState`]
//!    is closed (G2.3). A handler that never ends keeps it open: that is the spec's behaviour.

mod actor;
mod error;
mod shutdown;

pub use actor::{GatewayLifecycle, Lifecycle, Shutdown, Startup};
pub use error::GatewayError;
pub use shutdown::{SharedStateClosed, ShutdownReport, ShutdownRequest};

use std::time::Duration;

use async_trait::async_trait;

/// What the host closes once every shutdown handler has finished: the store, plugin processes,
/// and whatever else handlers may still use (SPEC G2.3).
#[async_trait]
pub trait SharedState: Send + Sync + 'static {
    /// Closes it. Called at most once, after every `gateway:shutdown` and
    /// `gateway:pre-restart` handler has finished.
    async fn close(&self);
}

/// The default bound on the caller's wait for `gateway:shutdown` handlers (SPEC G2.1).
pub const DEFAULT_SHUTDOWN_WAIT: Duration = Duration::from_secs(5);
/// The default, independent bound for `gateway:pre-restart` handlers (SPEC G2.1).
pub const DEFAULT_PRE_RESTART_WAIT: Duration = Duration::from_secs(10);
/// The default total budget for session-end hooks at shutdown.
pub const DEFAULT_SESSION_END_BUDGET: Duration = Duration::from_secs(2);

/// The lifecycle's bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GatewayConfig {
    /// The caller's wait for `gateway:shutdown` handlers.
    pub shutdown_wait: Duration,
    /// The caller's wait for `gateway:pre-restart` handlers.
    pub pre_restart_wait: Duration,
    /// The total time session-end hooks get at shutdown.
    pub session_end_budget: Duration,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            shutdown_wait: DEFAULT_SHUTDOWN_WAIT,
            pre_restart_wait: DEFAULT_PRE_RESTART_WAIT,
            session_end_budget: DEFAULT_SESSION_END_BUDGET,
        }
    }
}
