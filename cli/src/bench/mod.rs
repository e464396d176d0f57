//! Hook-latency benchmarking: the workload, the direct-call baseline it is compared with, and
//! closed- and open-loop drivers that record every call's latency in an HDR histogram.
//!
//! The workload is docs/performance.md's reference workload: one hook call through N
//! plugins, each appending a few bytes to a ~64-byte text and handing it on. The peers are the
//! same appenders called in a plain loop on one thread (the direct loop), through a naive actix
//! chain, an actix relay chain and a batched actix relay ([`Peer`]), each measured in the same
//! run: every figure is reported with its ratio to each.
//!
//! Used by `hookline bench` and by the criterion benches in `benches/`.

mod compared;
mod driver;
mod hook;
mod memory;
mod peers;
mod pipe_peer;
pub mod plugin_set;
mod report;
mod sharded;
mod source;
mod workload;

pub use compared::Compared;
pub use driver::{
    closed_loop, drive_calls, on_shards, open_sessions, run_closed_loop, run_closed_loop_batched,
    run_open_loop, session_ids, Measured, Progress,
};
pub use hook::BenchHook;
pub use memory::{idle_sessions, resident_bytes, MemoryReport};
pub use peers::{run_peer, Peer, PeerChain, PEER_BATCH};
pub use pipe_peer::{run_pipe_peer, PipePeer};
pub use report::{BenchReport, Latency, PeerFigures};
pub use sharded::{run as run_on_arbiters, run_peers, Plan, Ran};
pub use source::{
    start_plugins, PluginMemory, Plugins, Source, RUST_ECHO_BIN, RUST_EXAMPLE_BIN, WASM_ECHO,
};
pub use workload::{appender_plugins, direct_baseline, Appender, DirectAppender, PAYLOAD};

/// `n` and the noun, plural unless `n` is 1: `1 session`, `8 plugins` (the report's English).
pub(crate) fn counted(n: impl Into<u64>, noun: &str) -> String {
    let n = n.into();
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}
