//! Why an external plugin could not start.

use std::time::Duration;

/// A plugin process that did not get as far as a valid `hello`. Display is a lowercase phrase
/// that completes "the plugin ... " style notes (`it never said hello within 5 s`).
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The process could not be started.
    #[error("it could not be started: {0}")]
    Spawn(#[source] std::io::Error),
    /// No hello arrived within the deadline.
    #[error("it did not say hello within {}", hookline_messages::note::DurationText::of(*.0))]
    NoHello(Duration),
    /// The process ended before its hello. The phrase points at `-v`, which shows what the
    /// process wrote to its stderr (its own error, as a traceback or a panic).
    #[error("it exited before saying hello (-v shows what it wrote to its stderr)")]
    ExitedBeforeHello,
    /// The first line was not a valid hello.
    #[error("its hello could not be read: {0}")]
    BadHello(String),
    /// The hello named a protocol version this host does not speak.
    #[error("it speaks protocol version {found}, but this host speaks version {expected}")]
    IncompatibleVersion {
        /// The plugin's version.
        found: u32,
        /// The host's version.
        expected: u32,
    },
}
