//! A plugin's hooks as registered: one entry per hook in a [`HookTable`], each either a
//! synchronous function (the fast path) or an async one. The set of hooks a plugin implements is
//! the set of entries: nothing else can disagree with it.

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use hookline_messages::hook::{self, Hook, HookContext, HookKind, HookSet};

use super::{HookResult, Plugin, RawHooks, Reply};
use crate::route::Draft;

/// Runs an in-place hook on an owned copy of the value (the path of a call that cannot run
/// inline): the written value becomes a replacement, an unwritten one a [`Reply::Keep`].
///
/// # Errors
/// The hook's error.
pub(crate) fn edit_owned<H: Hook>(
    f: &EditHook<H>,
    cx: &HookContext,
    mut value: H::Value,
) -> HookResult<Reply<H::Value>> {
    let mut spare = None;
    let mut draft = Draft::new(&mut value, &mut spare);
    f(cx, &mut draft)?;
    let written = draft.written();
    Ok(if written {
        Reply::Replace(value)
    } else {
        Reply::Keep
    })
}

/// A hook that answers at once: it sees the value by reference and returns [`Reply::Keep`] or a
/// replacement. No future, no box, no copy of the value: the fast path.
pub type SyncHook<H> = dyn Fn(&HookContext, &<H as Hook>::Value) -> HookResult<Reply<<H as Hook>::Value>>
    + Send
    + Sync;

/// A hook that edits the value in place through a [`Draft`]: no replacement is built, and the
/// value before it is kept only once it writes. The fastest path for hooks that change a value.
pub type EditHook<H> =
    dyn Fn(&HookContext, &mut Draft<'_, <H as Hook>::Value>) -> HookResult<()> + Send + Sync;

/// A hook that may await: it owns a copy of the value and returns a boxed future.
pub type AsyncHook<H> = dyn Fn(HookContext, <H as Hook>::Value) -> BoxFuture<'static, HookResult<Reply<<H as Hook>::Value>>>
    + Send
    + Sync;

/// One registered hook.
pub enum HookFn<H: Hook> {
    /// Answers at once, inline in the plugin actor.
    Sync(Arc<SyncHook<H>>),
    /// Edits the value in place, inline in the plugin actor.
    Edit(Arc<EditHook<H>>),
    /// May await: polled once inline, then finished under the hook's timeout.
    Async(Arc<AsyncHook<H>>),
}

impl<H: Hook> Clone for HookFn<H> {
    fn clone(&self) -> Self {
        match self {
            Self::Sync(f) => Self::Sync(f.clone()),
            Self::Edit(f) => Self::Edit(f.clone()),
            Self::Async(f) => Self::Async(f.clone()),
        }
    }
}

impl<H: Hook> HookFn<H> {
    /// A synchronous hook.
    pub fn sync(
        f: impl Fn(&HookContext, &H::Value) -> HookResult<Reply<H::Value>> + Send + Sync + 'static,
    ) -> Self {
        Self::Sync(Arc::new(f))
    }

    /// An in-place hook.
    pub fn edit(
        f: impl Fn(&HookContext, &mut Draft<'_, H::Value>) -> HookResult<()> + Send + Sync + 'static,
    ) -> Self {
        Self::Edit(Arc::new(f))
    }

    /// An async hook.
    pub fn asynchronous<F, Fut>(f: F) -> Self
    where
        F: Fn(HookContext, H::Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = HookResult<Reply<H::Value>>> + Send + 'static,
    {
        Self::Async(Arc::new(move |cx, value| Box::pin(f(cx, value))))
    }
}

/// A hook the pipeline can run: [`Hook`] plus where its entry lives in a [`HookTable`].
/// Implemented for every hook marker of `hookline_messages::hook`.
pub trait Dispatch: Hook {
    /// The hook's entry in `table`.
    #[doc(hidden)]
    fn slot(table: &HookTable) -> &Option<HookFn<Self>>
    where
        Self: Sized;
    /// The hook's entry in `table`, to register it.
    #[doc(hidden)]
    fn slot_mut(table: &mut HookTable) -> &mut Option<HookFn<Self>>
    where
        Self: Sized;
}

/// An ordinary hook (SPEC P2): registered with
/// [`PluginRegistration::on`](super::PluginRegistration::on).
pub trait OrdinaryHook: Dispatch {}

/// A raw hook (SPEC R1 to R4): registered apart, with
/// [`PluginRegistration::on_raw`](super::PluginRegistration::on_raw) (SPEC R0.1).
pub trait RawHook: Dispatch {}

macro_rules! hook_table {
    (
        ordinary { $($o:ident => $of:ident,)* }
        raw { $($r:ident => $rf:ident,)* }
    ) => {
        /// The hooks one plugin registered, one entry per hook.
        #[derive(Clone, Default)]
        pub struct HookTable {
            $($of: Option<HookFn<hook::$o>>,)*
            $($rf: Option<HookFn<hook::$r>>,)*
        }

        impl HookTable {
            /// The hooks with an entry: exactly what the plugin implements.
            pub fn implements(&self) -> HookSet {
                let mut set = HookSet::empty();
                $(if self.$of.is_some() { set.insert(HookKind::$o); })*
                $(if self.$rf.is_some() { set.insert(HookKind::$r); })*
                set
            }
        }

        $(
            impl Dispatch for hook::$o {
                fn slot(table: &HookTable) -> &Option<HookFn<Self>> { &table.$of }
                fn slot_mut(table: &mut HookTable) -> &mut Option<HookFn<Self>> { &mut table.$of }
            }
            impl OrdinaryHook for hook::$o {}
        )*
        $(
            impl Dispatch for hook::$r {
                fn slot(table: &HookTable) -> &Option<HookFn<Self>> { &table.$rf }
                fn slot_mut(table: &mut HookTable) -> &mut Option<HookFn<Self>> { &mut table.$rf }
            }
            impl RawHook for hook::$r {}
        )*
    };
}

hook_table! {
    ordinary {
        OnSessionStarted => on_session_started,
        OnSessionEnded => on_session_ended,
        OnPrompt => on_prompt,
        OnUserMessage => on_user_message,
        OnTurnStarted => on_turn_started,
        OnTurnFinished => on_turn_finished,
        TransformModel => transform_model,
        OnModelResponse => on_model_response,
        OnToolCall => on_tool_call,
        OnToolResult => on_tool_result,
        OnApproval => on_approval,
        OnCompaction => on_compaction,
    }
    raw {
        RebuildModel => rebuild_model,
        RewritePrompt => rewrite_prompt,
        RewriteCompaction => rewrite_compaction,
        RewriteApproval => rewrite_approval,
    }
}

/// A call of an async trait's method for hook `H`.
type Adapter<P, H> = fn(
    Arc<P>,
    HookContext,
    <H as Hook>::Value,
) -> BoxFuture<'static, HookResult<Reply<<H as Hook>::Value>>>;

/// Registers `H` in `table` when `listed` names it, calling `plugin`'s method.
fn adapt<H: Dispatch, P: ?Sized + Send + Sync + 'static>(
    table: &mut HookTable,
    listed: HookSet,
    plugin: &Arc<P>,
    call: Adapter<P, H>,
) {
    if listed.contains(H::KIND) {
        let plugin = plugin.clone();
        *H::slot_mut(table) = Some(HookFn::Async(Arc::new(move |cx, value| {
            call(plugin.clone(), cx, value)
        })));
    }
}

macro_rules! adapt_hooks {
    ($table:ident, $set:ident, $plugin:ident;
     read_only { $($ro:ident => $rom:ident,)* }
     replacing { $($rp:ident => $rpm:ident,)* }) => {
        $(adapt::<hook::$ro, _>($table, $set, $plugin, |p, cx, v| {
            Box::pin(async move { p.$rom(&cx, v).await.map(|()| Reply::Keep) })
        });)*
        $(adapt::<hook::$rp, _>($table, $set, $plugin, |p, cx, v| {
            Box::pin(async move { p.$rpm(&cx, v).await })
        });)*
    };
}

/// Fills `table` from an async [`Plugin`]: one entry per hook its [`Plugin::hooks`] names.
/// External plugins take this path; their set comes from their handshake.
pub(crate) fn adapt_plugin(table: &mut HookTable, plugin: &Arc<dyn Plugin>) {
    let listed = plugin.hooks().ordinary_only();
    adapt_hooks!(table, listed, plugin;
        read_only {
            OnSessionStarted => on_session_started,
            OnSessionEnded => on_session_ended,
            OnTurnStarted => on_turn_started,
            OnTurnFinished => on_turn_finished,
            OnModelResponse => on_model_response,
        }
        replacing {
            OnPrompt => on_prompt,
            OnUserMessage => on_user_message,
            TransformModel => transform_model,
            OnToolCall => on_tool_call,
            OnToolResult => on_tool_result,
            OnApproval => on_approval,
            OnCompaction => on_compaction,
        }
    );
}

/// Fills `table` from an async [`RawHooks`]: one entry per hook its [`RawHooks::raw_hooks`] names.
pub(crate) fn adapt_raw(table: &mut HookTable, plugin: &Arc<dyn RawHooks>) {
    let listed = plugin.raw_hooks().raw_only();
    adapt_hooks!(table, listed, plugin;
        read_only {}
        replacing {
            RebuildModel => rebuild_model,
            RewritePrompt => rewrite_prompt,
            RewriteCompaction => rewrite_compaction,
            RewriteApproval => rewrite_approval,
        }
    );
}
