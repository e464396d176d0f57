//! The embedding API, above the gateway: [`HostBuilder`] assembles what every conversation shares
//! (in-process plugins, plugins loaded from disk, tools, a model provider, an operator, a store;
//! see [`crate::shared`]) and starts either a [`Host`], one conversation that owns its gateway,
//! or a [`Gateway`](crate::gateway::Gateway) of many sessions (`start_gateway`). Disk plugins
//! whose names are taken are skipped with a note (`clash.rs`).

mod builder;
mod clash;
mod host;

pub use builder::HostBuilder;
pub use host::Host;
