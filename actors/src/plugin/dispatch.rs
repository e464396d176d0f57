//! Maps each [`Hook`] marker to the plugin method that implements it.

use std::sync::Arc;

use futures::future::BoxFuture;
use hookline_messages::hook::{self, Hook, HookContext};

use super::{HookError, HookResult, Plugin, RawHooks, Reply};

/// A hook the pipeline can run: [`Hook`] plus the call into the plugin trait.
pub trait Dispatch: Hook {
    /// Calls the plugin's method for this hook. The future owns everything it needs.
    fn dispatch(
        target: &Target,
        cx: HookContext,
        value: Self::Value,
    ) -> BoxFuture<'static, HookResult<Reply<Self::Value>>>;
}

/// The plugin code one actor runs: its ordinary hooks and its raw hooks.
#[derive(Clone)]
pub struct Target {
    pub(crate) hooks: Option<Arc<dyn Plugin>>,
    pub(crate) raw_hooks: Option<Arc<dyn RawHooks>>,
}

fn missing<T>() -> HookResult<T> {
    Err(HookError::msg("it does not implement this hook."))
}

macro_rules! dispatch_replacing {
    ($($marker:ident => $field:ident . $method:ident;)*) => {$(
        impl Dispatch for hook::$marker {
            fn dispatch(
                target: &Target,
                cx: HookContext,
                value: Self::Value,
            ) -> BoxFuture<'static, HookResult<Reply<Self::Value>>> {
                let plugin = target.$field.clone();
                Box::pin(async move {
                    match plugin {
                        Some(plugin) => plugin.$method(&cx, value).await,
                        None => missing(),
                    }
                })
            }
        }
    )*};
}

macro_rules! dispatch_read_only {
    ($($marker:ident => $method:ident;)*) => {$(
        impl Dispatch for hook::$marker {
            fn dispatch(
                target: &Target,
                cx: HookContext,
                value: Self::Value,
            ) -> BoxFuture<'static, HookResult<Reply<Self::Value>>> {
                let plugin = target.hooks.clone();
                Box::pin(async move {
                    match plugin {
                        Some(plugin) => plugin.$method(&cx, value).await.map(|()| Reply::Keep),
                        None => missing(),
                    }
                })
            }
        }
    )*};
}

dispatch_read_only! {
    OnSessionStarted => on_session_started;
    OnSessionEnded => on_session_ended;
    OnTurnStarted => on_turn_started;
    OnTurnFinished => on_turn_finished;
    OnModelResponse => on_model_response;
}

dispatch_replacing! {
    OnPrompt => hooks.on_prompt;
    OnUserMessage => hooks.on_user_message;
    TransformModel => hooks.transform_model;
    OnToolCall => hooks.on_tool_call;
    OnToolResult => hooks.on_tool_result;
    OnApproval => hooks.on_approval;
    OnCompaction => hooks.on_compaction;
    RebuildModel => raw_hooks.rebuild_model;
    RewritePrompt => raw_hooks.rewrite_prompt;
    RewriteCompaction => raw_hooks.rewrite_compaction;
    RewriteApproval => raw_hooks.rewrite_approval;
}
