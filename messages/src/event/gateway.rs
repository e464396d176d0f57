//! Gateway lifecycle contexts (SPEC G5.7).

use serde::{Deserialize, Serialize};

use super::entry::Config;

/// `gateway:startup`, emitted once the plugins have loaded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayStartupContext {
    /// The gateway configuration.
    pub cfg: Config,
    /// The services the gateway hands to handlers, as the host describes them.
    pub deps: serde_json::Value,
    /// The default workspace directory.
    pub workspace_dir: String,
}

/// `gateway:shutdown` and `gateway:pre-restart`.
///
/// `restartExpectedMs` is always on the wire: `null` when no restart is expected.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GatewayStopContext {
    /// Why the gateway is stopping.
    pub reason: String,
    /// In how many milliseconds the gateway expects to be back; `None` (`null`) when it is not
    /// restarting. `gateway:pre-restart` is emitted only when this is set.
    pub restart_expected_ms: Option<u64>,
}
