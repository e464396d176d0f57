//! What one conversation's producers of gateway events read besides the gateway's settings
//! ([`GatewaySettings`](crate::shared::GatewaySettings)): when it was last active, its model and
//! its turn mode.

use hookline_messages::prompt::PromptMode;

/// What one conversation's producers read besides the shared settings.
#[derive(Clone, Debug)]
pub(crate) struct Wiring {
    pub(crate) last_active_ms: Option<u64>,
    pub(crate) model: Option<String>,
    pub(crate) mode: PromptMode,
}

impl Default for Wiring {
    fn default() -> Self {
        Self {
            last_active_ms: None,
            model: None,
            mode: PromptMode::Work,
        }
    }
}
