//! The gateway's settings every conversation reads to produce gateway events (SPEC G5): agent,
//! configuration, chat path ([`CommandOrigin`]), reset policy, [`Clock`], bootstrap policy and
//! lifecycle bounds. What one conversation adds is the session's `Wiring`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use hookline_actors::lifecycle::GatewayConfig;
use hookline_messages::event::{BootstrapPolicy, CommandSource, Config};

use crate::producers::{ResetPolicy, DEFAULT_BOOTSTRAP_FILES};

/// Milliseconds since the Unix epoch, as the host's reset policy reads them.
pub trait Clock: Send + Sync + 'static {
    /// Now.
    fn now_ms(&self) -> u64;
}

/// The system clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        since.map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

/// A clock that moves only when told (scenarios and tests). Cheap to clone; clones share time.
#[derive(Clone, Debug, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    /// A clock standing at `now_ms`.
    pub fn new(now_ms: u64) -> Self {
        Self(Arc::new(AtomicU64::new(now_ms)))
    }

    /// Moves the clock forward by `ms`.
    pub fn advance(&self, ms: u64) {
        self.0.fetch_add(ms, Ordering::Relaxed);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Which path a command came from; it sets `commandSource` and `senderId` (SPEC G5.1, G5.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommandOrigin {
    /// A chat command typed on `channel` (the CLI and scenarios use `cli`) by `sender_id`.
    Chat {
        /// The channel (`commandSource`).
        channel: String,
        /// Who typed it (`senderId`).
        sender_id: Option<String>,
    },
    /// A gateway path (`gateway:sessions.reset`, `gateway:agent`): gateway callers omit
    /// `senderId`.
    Gateway(CommandSource),
}

impl CommandOrigin {
    /// The `commandSource` this origin produces.
    pub fn source(&self) -> CommandSource {
        match self {
            Self::Chat { channel, .. } => CommandSource::chat(channel.clone()),
            Self::Gateway(source) => source.clone(),
        }
    }

    /// The `senderId` this origin produces (none for gateway paths).
    pub fn sender_id(&self) -> Option<String> {
        match self {
            Self::Chat { sender_id, .. } => sender_id.clone(),
            Self::Gateway(_) => None,
        }
    }
}

impl Default for CommandOrigin {
    fn default() -> Self {
        Self::Chat {
            channel: "cli".into(),
            sender_id: Some("operator".into()),
        }
    }
}

/// The host's gateway settings ([`HostBuilder`](crate::HostBuilder) sets them).
#[derive(Clone)]
pub(crate) struct GatewaySettings {
    pub(crate) agent_id: String,
    pub(crate) cfg: Config,
    pub(crate) chat: CommandOrigin,
    pub(crate) reset_policy: ResetPolicy,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) bootstrap_policy: BootstrapPolicy,
    pub(crate) bootstrap_files: Vec<String>,
    pub(crate) lifecycle: GatewayConfig,
    /// The canonical directory every resumed session's workspace must lie in (`hookline
    /// serve`'s `--workspace-root`); none: any existing directory.
    pub(crate) workspace_fence: Option<PathBuf>,
}

impl Default for GatewaySettings {
    fn default() -> Self {
        Self {
            agent_id: "main".into(),
            cfg: Config::Object(serde_json::Map::new()),
            chat: CommandOrigin::default(),
            reset_policy: ResetPolicy::default(),
            clock: Arc::new(SystemClock),
            bootstrap_policy: BootstrapPolicy::default(),
            bootstrap_files: DEFAULT_BOOTSTRAP_FILES.map(String::from).to_vec(),
            lifecycle: GatewayConfig::default(),
            workspace_fence: None,
        }
    }
}

impl GatewaySettings {
    /// The channel of the chat path (`cli` by default).
    pub(crate) fn chat_channel(&self) -> &str {
        match &self.chat {
            CommandOrigin::Chat { channel, .. } => channel,
            CommandOrigin::Gateway(source) => source.as_str(),
        }
    }
}
