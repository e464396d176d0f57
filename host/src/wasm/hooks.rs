//! [`WasmPlugin`] as a pipeline plugin: one entry per hook its hello names, and its gateway
//! event handler. A core module's hooks are on the fast path ([`PluginRegistration::on`],
//! [`PluginRegistration::on_raw`]: the guest runs inline); a component's are async
//! ([`PluginRegistration::on_async`]: the call is encoded inline and runs on its thread).
//! Rules are not checked here: the coordinator checks them, the same as for any plugin.

use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;
use hookline_actors::events::{EventHandler, EventReply};
use hookline_actors::plugin::{Dispatch, HookError, HookResult, PluginRegistration, Reply};
use hookline_messages::event::Event;
use hookline_messages::hook::{self, Hook, HookContext};
use hookline_messages::note::SkipReason;
use hookline_messages::protocol::{EventRequest, HostMessage};
use serde::de::IgnoredAny;

use super::WasmPlugin;
use crate::external::{event_reply, observed, replacement, TypedReply};

/// The fast-path entry of hook `H`: encode, run the guest under `H`'s timeout, decode.
fn entry<H: Dispatch>(
    plugin: &Arc<WasmPlugin>,
) -> impl Fn(&HookContext, &H::Value) -> HookResult<Reply<H::Value>> + Send + Sync + 'static {
    let plugin = plugin.clone();
    move |cx, value| {
        let limit = plugin.timeouts.get(H::KIND);
        let session = &cx.session_id;
        if <H as Hook>::READ_ONLY {
            // Whatever it returns changes nothing (SPEC P2.1, P2.4, P2.6): its value is skipped
            // over unread; only an error is reported.
            return match plugin
                .call_hook_typed::<_, IgnoredAny>(H::KIND, session, value, limit)
                .map_err(HookError::skip)?
            {
                TypedReply::Error(message) => Err(HookError::msg(message)),
                _ => Ok(Reply::Keep),
            };
        }
        // The replacement decoded straight into the hook's value (no JSON tree in between).
        match plugin
            .call_hook_typed(H::KIND, session, value, limit)
            .map_err(HookError::skip)?
        {
            TypedReply::Keep => Ok(Reply::Keep),
            TypedReply::Replace(value) => Ok(Reply::Replace(value)),
            TypedReply::Undecodable => Err(HookError::skip(SkipReason::Undecodable)),
            TypedReply::Error(message) => Err(HookError::msg(message)),
        }
    }
}

/// The async entry of hook `H` for a component: encoded inline, run on its thread.
fn queued<H: Dispatch>(
    plugin: &Arc<WasmPlugin>,
) -> impl Fn(HookContext, H::Value) -> BoxFuture<'static, HookResult<Reply<H::Value>>>
       + Send
       + Sync
       + 'static {
    let plugin = plugin.clone();
    move |cx, value| {
        let limit = plugin.timeouts.get(H::KIND);
        let call = plugin.call_hook_queued(H::KIND, &cx.session_id, &value, limit);
        Box::pin(async move {
            let body = call.await.map_err(HookError::skip)?;
            if <H as Hook>::READ_ONLY {
                observed(body).map(|()| Reply::Keep)
            } else {
                replacement(body)
            }
        })
    }
}

macro_rules! register {
    ($registration:ident, $plugin:ident, $listed:expr, $on:ident, $on_async:ident:
     $($hook:ident),* $(,)?) => {
        $(if $listed.contains(<hook::$hook as Hook>::KIND) {
            $registration = if $plugin.is_component() {
                $registration.$on_async(hook::$hook, queued::<hook::$hook>($plugin))
            } else {
                $registration.$on(hook::$hook, entry::<hook::$hook>($plugin))
            };
        })*
    };
}

impl WasmPlugin {
    /// A registration for the pipeline: its ordinary hooks and raw hooks (kept apart, SPEC
    /// R0.1) on the fast path, its gateway event handler when its hello subscribes to anything
    /// (SPEC G1.2; unknown subscriptions included, G4.1), and its timeouts.
    pub fn registration(self: &Arc<Self>) -> PluginRegistration {
        let mut registration = PluginRegistration::new(self.name.clone())
            .with_timeouts(self.timeouts)
            .with_event_timeout(self.event_timeout);
        if !self.hello.events.is_empty() {
            registration = registration.with_events(self.clone());
        }
        for hook in self.fail_closed.iter() {
            registration = registration.fail_closed(hook);
        }
        let plugin = self;
        let ordinary = self.hello.hooks.ordinary_only();
        register!(registration, plugin, ordinary, on, on_async:
            OnSessionStarted, OnSessionEnded, OnPrompt, OnUserMessage, OnTurnStarted,
            OnTurnFinished, TransformModel, OnModelResponse, OnToolCall, OnToolResult,
            OnApproval, OnCompaction,
        );
        let raw = self.hello.raw_hooks.raw_only();
        register!(registration, plugin, raw, on_raw, on_raw_async:
            RebuildModel, RewritePrompt, RewriteCompaction, RewriteApproval,
        );
        registration
    }
}

#[async_trait]
impl EventHandler for WasmPlugin {
    fn subscriptions(&self) -> Vec<String> {
        self.hello.events.clone()
    }

    /// Runs the guest (inline, or on a component's thread), stopped at the event timeout (a
    /// guest is never left running, so even a shutdown handler ends there, SPEC G2.2).
    async fn on_event(&self, event: &Event) -> HookResult<EventReply> {
        let key = event.key();
        let reply = self
            .request(self.event_timeout, |id| {
                HostMessage::Event(EventRequest {
                    id,
                    key: key.as_str().to_owned(),
                    context: event.context_json(),
                    traceparent: None,
                })
            })
            .await
            .map_err(HookError::skip)?;
        event_reply(key, reply)
    }
}
