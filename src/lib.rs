//! hookline: a runtime for plugin hooks in AI agent hosts and chat gateways.
//!
//! This crate is the face of the workspace: it re-exports the three floors and owns the
//! `hookline` binary, the integration tests and the benchmarks.
//!
//! - [`messages`]: pure data and the spec's rules as functions (no I/O, no runtime);
//! - [`actors`]: plugin actors and the pipeline coordinator (actix);
//! - [`host`]: sessions, storage, plugin loading, the CLI's commands.

pub use hookline_actors as actors;
pub use hookline_host as host;
pub use hookline_messages as messages;
