//! The in-process plugin API. A plugin is a [`PluginRegistration`]: a name and one entry per hook
//! it implements, registered one by one, so the hooks that run are exactly the hooks registered.
//!
//! - **Fast path**: [`PluginRegistration::on`] (ordinary hooks, SPEC P2) and
//!   [`PluginRegistration::on_raw`] (raw hooks, kept apart, SPEC R0.1) take a synchronous function
//!   that sees the value by reference and returns a [`Reply`]. It runs inline in the plugin actor:
//!   no future, no box, no copy of the value, no allocation by the runtime.
//! - **In place**: [`PluginRegistration::edit`] and [`PluginRegistration::edit_raw`] take a
//!   synchronous function that edits the value through a [`Draft`] (`&mut`): no replacement is
//!   built; an append ([`Draft::append`]) copies nothing (a refused one is cut off again), and
//!   any other write copies the value before it (into a buffer the batch reuses), so the rule can
//!   check the edit and a refused one leaves the value as it was.
//! - **Async, by explicit opt-in**: [`PluginRegistration::on_async`] and
//!   [`PluginRegistration::on_raw_async`] take a function returning a future, for hooks that must
//!   await (I/O, another process). It runs under the hook's timeout.
//! - **Adapters**: the async [`Plugin`] and [`RawHooks`] traits, which list their hooks in
//!   [`Plugin::hooks`] / [`RawHooks::raw_hooks`]. External plugins implement them (their list
//!   comes from their handshake); [`PluginRegistration::with_hooks`] registers one async entry
//!   per listed hook.

pub(crate) mod actor;
mod dispatch;
mod error;
mod event_handler;
pub(crate) mod guard;
mod registration;

pub use crate::route::Draft;
pub use actor::{CallResult, PluginActor};
pub use dispatch::{
    AsyncHook, Dispatch, EditHook, HookFn, HookTable, OrdinaryHook, RawHook, SyncHook,
};
pub use error::HookError;
pub use event_handler::{EventHandler, EventReply};
pub use guard::Answer;
pub use registration::{PluginRegistration, Timeouts, DEFAULT_HOOK_TIMEOUT};

use async_trait::async_trait;
use hookline_messages::approval::Classification;
use hookline_messages::compaction::{Compaction, CompactionText};
use hookline_messages::hook::{HookContext, HookSet};
use hookline_messages::model::{ModelRequest, ModelResponse};
use hookline_messages::prompt::{Prompt, SystemText};
use hookline_messages::session::SessionInfo;
use hookline_messages::tool::{ToolCall, ToolResult};
use hookline_messages::user::{TurnInfo, UserMessage};

pub use hookline_messages::hook::Reply;

/// The result of a hook method. An error skips the hook with a note (SPEC P1.4).
pub type HookResult<T> = Result<T, HookError>;

/// Ordinary hooks as an async trait (the seed's `IPluginHook`): the adapter external plugins
/// implement. Every method has a default that changes nothing; only the hooks named in
/// [`Plugin::hooks`] are registered. In-process plugins use [`PluginRegistration::on`] instead,
/// where what is registered is what runs.
///
/// Methods that may replace their value return [`Reply`]; read-only hooks return `()`.
/// Calls for different sessions may run concurrently on one plugin unless its registration says
/// [`PluginRegistration::one_call_at_a_time`].
#[async_trait]
#[allow(unused_variables)]
pub trait Plugin: Send + Sync + 'static {
    /// The ordinary hooks this plugin implements. Raw hooks here are ignored.
    fn hooks(&self) -> HookSet;

    /// Session start (SPEC P2.1, P3.10). Read-only.
    async fn on_session_started(&self, cx: &HookContext, session: SessionInfo) -> HookResult<()> {
        Ok(())
    }
    /// Session end, with the workspace and session being left (SPEC P2.1, P3.11). Read-only.
    async fn on_session_ended(&self, cx: &HookContext, session: SessionInfo) -> HookResult<()> {
        Ok(())
    }
    /// Append to the system text (SPEC P2.2): return `prompt.append(...)`.
    async fn on_prompt(&self, cx: &HookContext, prompt: Prompt) -> HookResult<Reply<Prompt>> {
        Ok(Reply::Keep)
    }
    /// Replace the user message before it is stored (SPEC P2.3).
    async fn on_user_message(
        &self,
        cx: &HookContext,
        message: UserMessage,
    ) -> HookResult<Reply<UserMessage>> {
        Ok(Reply::Keep)
    }
    /// Turn start (SPEC P2.4). Read-only.
    async fn on_turn_started(&self, cx: &HookContext, turn: TurnInfo) -> HookResult<()> {
        Ok(())
    }
    /// Turn end, with the stop reason (SPEC P2.4). Read-only.
    async fn on_turn_finished(&self, cx: &HookContext, turn: TurnInfo) -> HookResult<()> {
        Ok(())
    }
    /// Change texts of one outbound call (SPEC P2.5, P3.9).
    async fn transform_model(
        &self,
        cx: &HookContext,
        request: ModelRequest,
    ) -> HookResult<Reply<ModelRequest>> {
        Ok(Reply::Keep)
    }
    /// A finished model call (SPEC P2.6, P3.7). Read-only.
    async fn on_model_response(&self, cx: &HookContext, response: ModelResponse) -> HookResult<()> {
        Ok(())
    }
    /// Replace a tool call's name or arguments (SPEC P2.7).
    async fn on_tool_call(&self, cx: &HookContext, call: ToolCall) -> HookResult<Reply<ToolCall>> {
        Ok(Reply::Keep)
    }
    /// Replace a tool result's text (and images on image turns) (SPEC P2.8).
    async fn on_tool_result(
        &self,
        cx: &HookContext,
        result: ToolResult,
    ) -> HookResult<Reply<ToolResult>> {
        Ok(Reply::Keep)
    }
    /// Raise risk or require another prompt (SPEC P2.9).
    async fn on_approval(
        &self,
        cx: &HookContext,
        classification: Classification,
    ) -> HookResult<Reply<Classification>> {
        Ok(Reply::Keep)
    }
    /// Append facts to the compaction prompt or summary (SPEC P2.10).
    async fn on_compaction(
        &self,
        cx: &HookContext,
        compaction: Compaction,
    ) -> HookResult<Reply<Compaction>> {
        Ok(Reply::Keep)
    }
}

/// Raw hooks (the seed's `IPluginRawHook`): privileged, on their own interface (SPEC R0.1).
/// The host holds them only to what it can represent (SPEC R0.4).
#[async_trait]
#[allow(unused_variables)]
pub trait RawHooks: Send + Sync + 'static {
    /// The raw hooks this plugin implements. Ordinary hooks here are ignored.
    fn raw_hooks(&self) -> HookSet;

    /// Rebuild one outbound request (SPEC R1, R5.1 to R5.6).
    async fn rebuild_model(
        &self,
        cx: &HookContext,
        request: ModelRequest,
    ) -> HookResult<Reply<ModelRequest>> {
        Ok(Reply::Keep)
    }
    /// Replace the composed system text, empty included (SPEC R2, R5.8).
    async fn rewrite_prompt(
        &self,
        cx: &HookContext,
        text: SystemText,
    ) -> HookResult<Reply<SystemText>> {
        Ok(Reply::Keep)
    }
    /// Replace the compaction prompt or summary body, empty included (SPEC R3, R5.9).
    async fn rewrite_compaction(
        &self,
        cx: &HookContext,
        text: CompactionText,
    ) -> HookResult<Reply<CompactionText>> {
        Ok(Reply::Keep)
    }
    /// Replace the approval classification; the policy still decides (SPEC R4, R5.10).
    async fn rewrite_approval(
        &self,
        cx: &HookContext,
        classification: Classification,
    ) -> HookResult<Reply<Classification>> {
        Ok(Reply::Keep)
    }
}
