//! The hookline runtime: what a program embedding hookline links. `Host` (one conversation) and
//! `Gateway` (many sessions on one set of shared services), sessions and turns, tools, approval
//! policy, plugin loading and plugin processes, the event producers, the file store, and the
//! offline model providers. It builds on `hookline-actors` (order and state) and
//! `hookline-messages` (data and rules).
//!
//! What a server or the command line adds lives in crates of its own, so an embedder never
//! compiles it: `hookline-providers` (HTTP model providers), `hookline-postgres` (the PostgreSQL
//! store), `hookline-server` (`hookline serve`) and `hookline-cli` (the command line).

pub mod approval;
pub mod demo;
pub mod embed;
pub mod external;
pub mod gateway;
#[cfg(unix)]
pub mod handover;
pub mod loading;
pub mod producers;
pub mod provider;
pub mod replay;
pub mod scenario;
pub mod session;
pub mod shared;
pub mod state;
pub mod store;
pub mod tools;
pub mod trace;
pub mod turn;
#[cfg(feature = "wasm")]
pub mod wasm;

pub use embed::{Host, HostBuilder};
pub use session::{HostError, HostEvent, SessionCommand};
