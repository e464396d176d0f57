//! The `hookline` command line: the subcommands (`run`, `chat`, `hooks`, `new`, `serve`, `store`,
//! `bench`, `soak`, `load`), and the drivers behind the measuring ones. It assembles every other
//! crate of the workspace: the runtime (`hookline-host`), the HTTP providers
//! (`hookline-providers`), the PostgreSQL store (`hookline-postgres`) and the server
//! (`hookline-server`). The `hookline` binary (`src/main.rs` of the facade crate) only calls
//! [`main`].
//!
//! - [`mod@bench`]: the hook-latency workload, its direct-call baseline and drivers (`hookline
//!   bench`, `benches/`);
//! - [`soak`]: many sessions through every hook, then a shutdown under load (`hookline soak`);
//! - [`load`]: the load driver of a running `hookline serve` (`hookline load`, `benches/serve.rs`).
//!
//! In the facade crate this is `hookline::cli`, behind the `cli` feature.

pub mod bench;
mod commands;
pub mod load;
pub mod soak;
mod telemetry;

pub use commands::{main, Cli};
