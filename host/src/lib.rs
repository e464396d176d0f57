//! hookline's I/O floor: sessions and turns, storage, tools, approval policy, plugin loading, and
//! the CLI's commands. It builds on `hookline-actors` (order and state) and `hookline-messages`
//! (data and rules).

pub mod cli;
pub mod store;
