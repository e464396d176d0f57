//! hookline: a runtime for plugin hooks in AI agent hosts and chat gateways.
//!
//! This crate is the face of the workspace: it re-exports the runtime always, and the parts a
//! server or the command line adds behind features. It also owns the `hookline` binary, the
//! integration tests and the benchmarks.
//!
//! Always (the runtime an embedder links; `default-features = false`):
//! - [`messages`]: pure data and the spec's rules as functions (no I/O, no runtime);
//! - [`actors`]: plugin actors and the pipeline coordinator (actix);
//! - [`host`]: `Host` and `Gateway`, sessions and turns, tools, approvals, plugin loading and
//!   processes, the file store, the offline providers.
//!
//! Features (all on by default through `full`):
//!
//! | feature | adds | brings in |
//! |---|---|---|
//! | `wasm` | `host::wasm`: WebAssembly plugins (without it a `.wasm` plugin is skipped with a note) | wasmtime, Cranelift |
//! | `providers` | `providers`: the OpenAI-compatible HTTP provider | reqwest, rustls |
//! | `postgres` | `postgres`: `PgStore`, the store several nodes share | tokio-postgres, deadpool |
//! | `server` | `server`: `hookline serve` as a library, console, metrics | axum, hyper, metrics exporter |
//! | `cli` | `cli` and the `hookline` binary; turns on the four above | clap, indicatif, tungstenite |
//! | `full` | all of the above (the default) | |
//!
//! An embedder that only wants a `Gateway`:
//!
//! ```toml
//! [dependencies]
//! hookline = { version = "0.1", default-features = false }
//! ```

pub use hookline_actors as actors;
pub use hookline_host as host;
pub use hookline_messages as messages;

#[cfg(feature = "cli")]
pub use hookline_cli as cli;
#[cfg(feature = "postgres")]
pub use hookline_postgres as postgres;
#[cfg(feature = "providers")]
pub use hookline_providers as providers;
#[cfg(feature = "server")]
pub use hookline_server as server;
