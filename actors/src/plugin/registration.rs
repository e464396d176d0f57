//! What a plugin contributes: its name, its hooks (one registered entry per hook; raw hooks kept
//! apart, SPEC R0.1), and its per-hook timeouts.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use hookline_messages::event::{parse_subscriptions, Subscription};
use hookline_messages::hook::{HookKind, HookSet};

use std::future::Future;

use hookline_messages::hook::HookContext;

use super::dispatch::{
    adapt_plugin, adapt_raw, edit_owned, Dispatch, HookFn, HookTable, OrdinaryHook, RawHook,
};
use super::EventHandler;
use super::{HookResult, Plugin, RawHooks, Reply};
use crate::route::Draft;

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

/// One plugin as the pipeline loads it (the seed's `PluginContribution`): a name and one entry
/// per hook, registered one by one. The hooks that run are exactly the hooks registered.
///
/// ```
/// # use std::time::Duration;
/// use hookline_actors::plugin::{PluginRegistration, Reply};
/// use hookline_messages::hook::{HookKind, OnPrompt, OnToolCall};
/// use hookline_messages::tool::ToolCall;
///
/// let house = PluginRegistration::new("house")
///     // The fast path: answers at once, sees the value by reference.
///     .on(OnPrompt, |_, prompt| Ok(Reply::Replace(prompt.clone().append("Use British spelling."))))
///     // Explicitly async: may await; runs under its timeout.
///     .on_async(OnToolCall, |_, call| async move {
///         tokio::task::yield_now().await;
///         Ok(if call.name == "rm" { Reply::Replace(ToolCall { name: "echo".into(), ..call }) } else { Reply::Keep })
///     })
///     .with_timeout(HookKind::OnToolCall, Duration::from_millis(500));
/// assert!(house.implements().contains(HookKind::OnPrompt));
/// assert!(house.implements().contains(HookKind::OnToolCall));
/// assert!(!house.implements().contains(HookKind::OnUserMessage));
/// ```
#[derive(Clone)]
pub struct PluginRegistration {
    pub(crate) name: Arc<str>,
    pub(crate) table: HookTable,
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
            table: HookTable::default(),
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

    /// Registers ordinary hook `H` (named by its marker, e.g. `OnPrompt`) on the fast path: `hook` sees the value by reference and
    /// answers at once with [`Reply::Keep`] or a replacement, which `H`'s rule then checks. It runs
    /// inline in the plugin actor (no future, no task, no timer), so it must not block: a hook
    /// that waits on anything registers with [`PluginRegistration::on_async`]. A panic or an
    /// error skips the hook with a note (SPEC P1.4). Registering `H` again replaces the entry.
    #[must_use]
    pub fn on<H: OrdinaryHook>(
        self,
        _hook: H,
        hook: impl Fn(&HookContext, &H::Value) -> HookResult<Reply<H::Value>> + Send + Sync + 'static,
    ) -> Self {
        self.register(HookFn::<H>::sync(hook))
    }

    /// Registers ordinary hook `H` as an in-place edit, the fastest path for a hook that changes
    /// its value: `hook` edits the value through a [`Draft`] (`&mut` access) and returns `Ok(())`.
    /// Nothing is built or copied for a hook that only reads or only appends
    /// ([`Draft::append`]: `H`'s rule for appends decides); any other write costs its own edit
    /// and a copy of the value before it into a buffer the batch reuses, which `H`'s rule checks
    /// the edit against. A refused edit, an error or a panic leaves the value before it (SPEC
    /// P1.4, P1.5). It runs inline like [`PluginRegistration::on`] and must not block either.
    #[must_use]
    pub fn edit<H: OrdinaryHook>(
        self,
        _hook: H,
        hook: impl Fn(&HookContext, &mut Draft<'_, H::Value>) -> HookResult<()> + Send + Sync + 'static,
    ) -> Self {
        self.register(HookFn::<H>::edit(hook))
    }

    /// Registers raw hook `H` as an in-place edit, apart from the ordinary hooks (SPEC R0.1); as
    /// [`PluginRegistration::edit`] otherwise.
    #[must_use]
    pub fn edit_raw<H: RawHook>(
        self,
        _hook: H,
        hook: impl Fn(&HookContext, &mut Draft<'_, H::Value>) -> HookResult<()> + Send + Sync + 'static,
    ) -> Self {
        self.register(HookFn::<H>::edit(hook))
    }

    /// Registers ordinary hook `H` as async: `hook` owns a copy of the value and returns a future,
    /// polled once inline and then finished under the hook's timeout.
    #[must_use]
    pub fn on_async<H, F, Fut>(self, _hook: H, hook: F) -> Self
    where
        H: OrdinaryHook,
        F: Fn(HookContext, H::Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HookResult<Reply<H::Value>>> + Send + 'static,
    {
        self.register(HookFn::<H>::asynchronous(hook))
    }

    /// Registers raw hook `H` on the fast path, apart from the ordinary hooks (SPEC R0.1); as
    /// [`PluginRegistration::on`] otherwise.
    #[must_use]
    pub fn on_raw<H: RawHook>(
        self,
        _hook: H,
        hook: impl Fn(&HookContext, &H::Value) -> HookResult<Reply<H::Value>> + Send + Sync + 'static,
    ) -> Self {
        self.register(HookFn::<H>::sync(hook))
    }

    /// Registers raw hook `H` as async (SPEC R0.1); as [`PluginRegistration::on_async`]
    /// otherwise.
    #[must_use]
    pub fn on_raw_async<H, F, Fut>(self, _hook: H, hook: F) -> Self
    where
        H: RawHook,
        F: Fn(HookContext, H::Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HookResult<Reply<H::Value>>> + Send + 'static,
    {
        self.register(HookFn::<H>::asynchronous(hook))
    }

    fn register<H: super::Dispatch>(mut self, hook: HookFn<H>) -> Self {
        *H::slot_mut(&mut self.table) = Some(hook);
        self
    }

    /// Registers an async [`Plugin`]'s ordinary hooks: one entry per hook its
    /// [`Plugin::hooks`] names (the adapter external plugins use).
    #[must_use]
    pub fn with_hooks(mut self, hooks: Arc<dyn Plugin>) -> Self {
        adapt_plugin(&mut self.table, &hooks);
        self
    }

    /// Registers an async [`RawHooks`]' raw hooks, apart from the ordinary hooks (SPEC R0.1): one
    /// entry per hook its [`RawHooks::raw_hooks`] names.
    #[must_use]
    pub fn with_raw_hooks(mut self, raw_hooks: Arc<dyn RawHooks>) -> Self {
        adapt_raw(&mut self.table, &raw_hooks);
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

    /// Every hook the plugin implements (ordinary and raw): exactly the hooks registered.
    pub fn implements(&self) -> HookSet {
        self.table.implements()
    }

    /// Whether the plugin registered any raw hook (SPEC R0.2).
    pub fn has_raw_hooks(&self) -> bool {
        !self.implements().raw_only().is_empty()
    }

    /// The plugin's timeouts.
    pub fn timeouts(&self) -> &Timeouts {
        &self.timeouts
    }

    /// Calls the plugin's hook `H` directly, outside the pipeline: no actor, no rule, no
    /// timeout, no panic guard. `None` when the plugin does not implement `H`. This is the
    /// direct loop `hookline bench --plugins DIR` measures a plugin set's own cost with; a
    /// program runs hooks through [`Pipeline::call`](crate::Pipeline::call).
    pub async fn call_direct<H: Dispatch>(
        &self,
        cx: &HookContext,
        value: H::Value,
    ) -> Option<HookResult<Reply<H::Value>>> {
        Some(match H::slot(&self.table).as_ref()? {
            HookFn::Sync(hook) => hook(cx, &value),
            HookFn::Edit(hook) => edit_owned::<H>(hook.as_ref(), cx, value),
            HookFn::Async(hook) => hook(cx.clone(), value).await,
        })
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
