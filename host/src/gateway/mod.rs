//! The gateway: one set of shared services (pipeline, plugin processes, tools, provider, store,
//! lifecycle) that many conversations run on at once.

mod shared;

pub(crate) use shared::{shutdown_processes, Services, Shared};
