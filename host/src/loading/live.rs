//! A loaded plugin's state now, as `GET /v1/plugins`, the console and `hookline_plugin_state`
//! report it (issue 46 item 2): loading leaves a plugin `loaded`, but its process may since have
//! exited and be restarting, have been shut down, or the runtime may have stopped calling it
//! after repeated failures (`suspended`; `disabled` is a manifest's `"enabled": false`).

use std::fmt;
use std::time::{Duration, SystemTime};

use hookline_messages::note::DurationText;

/// A crash window as the skip notes say it: `5 minutes` for whole minutes, else `90 s`.
struct Window(Duration);

impl fmt::Display for Window {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.as_secs() {
            60 if self.0.subsec_nanos() == 0 => f.write_str("1 minute"),
            secs if secs > 0 && secs % 60 == 0 && self.0.subsec_nanos() == 0 => {
                write!(f, "{} minutes", secs / 60)
            }
            _ => write!(f, "{}", DurationText::of(self.0)),
        }
    }
}

/// Where a loaded plugin is now.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LiveState {
    /// Its process runs (a WebAssembly plugin: its module is loaded) and the runtime calls it.
    Loaded,
    /// Its process exited and is being restarted; calls wait for the restart (under their
    /// deadline).
    Restarting,
    /// Its process ended and is not restarted (the host shut it down).
    Exited,
    /// The runtime stopped calling it after repeated failures (crashes or traps): its calls are
    /// skipped at once and its fail-closed guard hooks deny.
    Suspended,
}

impl LiveState {
    /// Every state, in this order.
    pub const ALL: [Self; 4] = [
        Self::Loaded,
        Self::Restarting,
        Self::Exited,
        Self::Suspended,
    ];

    /// Its name, as `GET /v1/plugins` and the metrics give it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Loaded => "loaded",
            Self::Restarting => "restarting",
            Self::Exited => "exited",
            Self::Suspended => "suspended",
        }
    }
}

/// A loaded plugin's state now, why, and since when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveStatus {
    /// Its state.
    pub state: LiveState,
    /// Why it is not `loaded`; `None` when it is.
    pub reason: Option<StateReason>,
    /// When it entered this state (for `loaded`: when it loaded or last restarted).
    pub since: SystemTime,
}

impl LiveStatus {
    /// Loaded since `since`.
    pub fn loaded(since: SystemTime) -> Self {
        Self {
            state: LiveState::Loaded,
            reason: None,
            since,
        }
    }

    /// Whether the runtime calls it now (or will once a restart completes: `restarting` is not).
    pub fn is_loaded(&self) -> bool {
        self.state == LiveState::Loaded
    }
}

/// Why a loaded plugin is not `loaded` now. Data, rendered to an English phrase in one place
/// (the `Display` impl), without a final full stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateReason {
    /// Its process exited and is restarted after a back-off (or its restart is under way).
    Restarting {
        /// Exits within the window so far.
        exits: u32,
        /// Exits within the window that suspend it.
        limit: u32,
        /// The window.
        window: Duration,
    },
    /// Its process exited and the runtime has not restarted it yet.
    Ended,
    /// The host shut it down.
    ShutDown,
    /// Its process exited `failures` times within `window`: the runtime stopped calling it.
    ExitedTooOften {
        /// How many exits suspended it.
        failures: u32,
        /// The window.
        window: Duration,
    },
    /// A WebAssembly plugin trapped `failures` times within `window`: the runtime stopped
    /// calling it.
    TrappedTooOften {
        /// How many traps suspended it.
        failures: u32,
        /// The window.
        window: Duration,
    },
}

impl fmt::Display for StateReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Restarting {
                exits,
                limit,
                window,
            } => write!(
                f,
                "its process exited ({exits} of {limit} exits in {} that suspend it); it is being \
                 restarted",
                Window(window)
            ),
            Self::Ended => f.write_str("its process exited and has not been restarted yet"),
            Self::ShutDown => f.write_str("the host shut it down"),
            Self::ExitedTooOften { failures, window } => write!(
                f,
                "its process exited {failures} times in {}, so the runtime stopped calling it \
                 (it stays suspended until the host restarts)",
                Window(window)
            ),
            Self::TrappedTooOften { failures, window } => write!(
                f,
                "it trapped {failures} times in {}, so the runtime stopped calling it (it stays \
                 suspended until the host restarts)",
                Window(window)
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_is_one_english_phrase() {
        let window = Duration::from_secs(300);
        let cases = [
            (
                StateReason::Restarting {
                    exits: 1,
                    limit: 3,
                    window,
                },
                "its process exited (1 of 3 exits in 5 minutes that suspend it); it is being restarted",
            ),
            (
                StateReason::Ended,
                "its process exited and has not been restarted yet",
            ),
            (StateReason::ShutDown, "the host shut it down"),
            (
                StateReason::ExitedTooOften {
                    failures: 3,
                    window,
                },
                "its process exited 3 times in 5 minutes, so the runtime stopped calling it (it stays \
                 suspended until the host restarts)",
            ),
            (
                StateReason::TrappedTooOften {
                    failures: 3,
                    window,
                },
                "it trapped 3 times in 5 minutes, so the runtime stopped calling it (it stays \
                 suspended until the host restarts)",
            ),
        ];
        for (reason, text) in cases {
            assert_eq!(reason.to_string(), text);
        }
    }
}

#[cfg(test)]
mod window_tests {
    use super::*;

    #[test]
    fn windows_read_in_minutes_when_whole() {
        let text = |secs: u64| Window(Duration::from_secs(secs)).to_string();
        assert_eq!(text(60), "1 minute");
        assert_eq!(text(300), "5 minutes");
        assert_eq!(text(90), "90 s");
        assert_eq!(Window(Duration::from_millis(1500)).to_string(), "1500 ms");
    }
}
