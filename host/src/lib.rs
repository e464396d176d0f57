//! hookline's I/O floor: sessions and turns, storage, tools, approval policy, plugin loading, and
//! the CLI's commands. It builds on `hookline-actors` (order and state) and `hookline-messages`
//! (data and rules).

pub mod approval;
pub mod bench;
pub mod cli;
pub mod demo;
pub mod external;
pub mod gateway;
pub mod load;
pub mod loading;
pub mod producers;
pub mod provider;
pub mod scenario;
pub mod serve;
pub mod session;
pub mod soak;
pub mod state;
pub mod store;
pub mod tools;
pub mod turn;

pub use session::{Host, HostBuilder, HostError, HostEvent, SessionCommand};
