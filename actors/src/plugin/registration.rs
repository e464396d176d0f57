//! What a plugin contributes: its name, its ordinary hooks, its raw hooks (kept apart, SPEC R0.1),
//! and its per-hook timeouts.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use hookline_messages::hook::{HookKind, HookSet};

use super::{Plugin, RawHooks};

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
        }
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
            .finish_non_exhaustive()
    }
}
