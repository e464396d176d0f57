//! What a plugin contributes: its name, its ordinary hooks, its raw hooks (kept apart, SPEC R0.1),
//! and its per-hook timeouts.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use hookline_messages::event::{parse_subscriptions, Subscription};
use hookline_messages::hook::{HookKind, HookSet};

use super::{Plugin, RawHooks};
use crate::events::EventHandler;

/// The timeout a hook gets unless its registration says otherwise.
pub const DEFAULT_HOOK_TIMEOUT: Duration = Duration::from_secs(10);

/// Per-hook timeouts for one plugin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    by_hook: [Duration; HookKind::ALL.len()],
}

impl Timeouts {
    /// Every hook gets `limit`.
    pub fn uniform(limit: Duration) -> Self {
        Self {
            by_hook: [limit; HookKind::ALL.len()],
        }
    }

    /// The limit for `hook`.
    pub fn get(&self, hook: HookKind) -> Duration {
        self.by_hook[hook as usize]
    }

    /// Sets the limit for `hook`.
    pub fn set(&mut self, hook: HookKind, limit: Duration) {
        self.by_hook[hook as usize] = limit;
    }
}

impl Default for Timeouts {
    fn default() -> Self {
        Self::uniform(DEFAULT_HOOK_TIMEOUT)
    }
}

/// One plugin as the pipeline loads it (the seed's `PluginContribution`).
///
/// ```
/// # use std::sync::Arc;
/// # use std::time::Duration;
/// # use async_trait::async_trait;
/// use hookline_actors::plugin::{Plugin, PluginRegistration, Reply, HookResult};
/// use hookline_messages::hook::{HookContext, HookKind, HookSet};
/// use hookline_messages::prompt::Prompt;
///
/// struct House;
///
/// #[async_trait]
/// impl Plugin for House {
///     fn hooks(&self) -> HookSet {
///         HookSet::of(&[HookKind::OnPrompt])
///     }
///     async fn on_prompt(&self, _: &HookContext, prompt: Prompt) -> HookResult<Reply<Prompt>> {
///         Ok(Reply::Replace(prompt.append("Use British spelling.")))
///     }
/// }
///
/// let house = PluginRegistration::new("house")
///     .with_hooks(Arc::new(House))
///     .with_timeout(HookKind::OnPrompt, Duration::from_millis(500));
/// assert!(house.implements().contains(HookKind::OnPrompt));
/// ```
#[derive(Clone)]
pub struct PluginRegistration {
    pub(crate) name: Arc<str>,
    pub(crate) hooks: Option<Arc<dyn Plugin>>,
    pub(crate) raw_hooks: Option<Arc<dyn RawHooks>>,
    pub(crate) timeouts: Timeouts,
    pub(crate) one_at_a_time: bool,
    pub(crate) events: Option<Arc<dyn EventHandler>>,
    pub(crate) subscriptions: Arc<[Subscription]>,
    pub(crate) event_timeout: Duration,
    pub(crate) fail_closed: HookSet,
}

impl PluginRegistration {
    /// A plugin with no hooks yet.
    pub fn new(name: impl Into<Arc<str>>) -> Self {
        Self {
            name: name.into(),
            hooks: None,
            raw_hooks: None,
            timeouts: Timeouts::default(),
            one_at_a_time: false,
            events: None,
            subscriptions: Arc::new([]),
            event_timeout: DEFAULT_HOOK_TIMEOUT,
            fail_closed: HookSet::empty(),
        }
    }

    /// Registers the plugin's gateway event handler and parses its subscriptions (SPEC G1.2).
    /// Unknown subscriptions are kept (SPEC G4.1); the pipeline warns about them at load.
    #[must_use]
    pub fn with_events(mut self, handler: Arc<dyn EventHandler>) -> Self {
        self.subscriptions = parse_subscriptions(&handler.subscriptions()).into();
        self.events = Some(handler);
        self
    }

    /// Sets the timeout of one event handler call (default [`DEFAULT_HOOK_TIMEOUT`]).
    #[must_use]
    pub fn with_event_timeout(mut self, limit: Duration) -> Self {
        self.event_timeout = limit;
        self
    }

    /// The plugin's event subscriptions, as parsed, in the order written.
    pub fn subscriptions(&self) -> &[Subscription] {
        &self.subscriptions
    }

    /// Registers the plugin's ordinary hooks.
    #[must_use]
    pub fn with_hooks(mut self, hooks: Arc<dyn Plugin>) -> Self {
        self.hooks = Some(hooks);
        self
    }

    /// Registers the plugin's raw hooks, apart from its ordinary hooks (SPEC R0.1).
    #[must_use]
    pub fn with_raw_hooks(mut self, raw_hooks: Arc<dyn RawHooks>) -> Self {
        self.raw_hooks = Some(raw_hooks);
        self
    }

    /// Sets one hook's timeout (default [`DEFAULT_HOOK_TIMEOUT`]).
    #[must_use]
    pub fn with_timeout(mut self, hook: HookKind, limit: Duration) -> Self {
        self.timeouts.set(hook, limit);
        self
    }

    /// Sets every hook's timeout.
    #[must_use]
    pub fn with_timeouts(mut self, timeouts: Timeouts) -> Self {
        self.timeouts = timeouts;
        self
    }

    /// Declares that the plugin takes one call at a time: its calls queue instead of running
    /// concurrently for different sessions.
    #[must_use]
    pub fn one_call_at_a_time(mut self) -> Self {
        self.one_at_a_time = true;
        self
    }

    /// Marks one of the plugin's guard hooks fail-closed (operator opt-in): when it fails (an
    /// error, a panic, a timeout, a refused replacement), the host denies the tool call instead of
    /// skipping the hook with a note. The host honours it for `on_tool_call` and `on_approval`;
    /// other hooks keep the spec's skip (SPEC P1.4).
    #[must_use]
    pub fn fail_closed(mut self, hook: HookKind) -> Self {
        self.fail_closed.insert(hook);
        self
    }

    /// The hooks marked fail-closed.
    pub fn fail_closed_hooks(&self) -> HookSet {
        self.fail_closed
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Every hook the plugin implements: its ordinary hooks and its raw hooks.
    pub fn implements(&self) -> HookSet {
        let ordinary = self
            .hooks
            .as_ref()
            .map_or(HookSet::empty(), |h| h.hooks().ordinary_only());
        let raw = self
            .raw_hooks
            .as_ref()
            .map_or(HookSet::empty(), |r| r.raw_hooks().raw_only());
        ordinary.union(raw)
    }

    /// Whether the plugin registered any raw hook (SPEC R0.2).
    pub fn has_raw_hooks(&self) -> bool {
        !self.implements().raw_only().is_empty()
    }

    /// The plugin's timeouts.
    pub fn timeouts(&self) -> &Timeouts {
        &self.timeouts
    }
}

impl fmt::Debug for PluginRegistration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PluginRegistration")
            .field("name", &self.name)
            .field("implements", &self.implements())
            .field("one_at_a_time", &self.one_at_a_time)
            .field("subscriptions", &self.subscriptions)
            .field("fail_closed", &self.fail_closed)
            .finish_non_exhaustive()
    }
}
