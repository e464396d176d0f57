//! [`ExternalPlugin`] as an in-process plugin: each trait method encodes its value, calls the
//! process, and decodes the reply. Rules are not checked here: the coordinator checks them, the
//! same as for any plugin.

use async_trait::async_trait;
use hookline_actors::plugin::{HookError, HookResult, Plugin, RawHooks, Reply};
use hookline_messages::approval::Classification;
use hookline_messages::compaction::{Compaction, CompactionText};
use hookline_messages::hook::{HookContext, HookKind, HookSet};
use hookline_messages::model::{ModelRequest, ModelResponse};
use hookline_messages::note::SkipReason;
use hookline_messages::prompt::{Prompt, SystemText};
use hookline_messages::protocol::ReplyBody;
use hookline_messages::session::SessionInfo;
use hookline_messages::tool::{ToolCall, ToolResult};
use hookline_messages::user::{TurnInfo, UserMessage};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::ExternalPlugin;

/// A skip reason carried through [`HookError`] as it is: the note gets the typed reason.
fn skip(reason: SkipReason) -> HookError {
    HookError::skip(reason)
}

/// A reply to a hook that may replace its value, decoded as `T` (an external or WebAssembly
/// plugin's answer alike).
///
/// # Errors
/// The plugin's error, or [`SkipReason::Undecodable`] for a replacement that is not a `T`.
pub(crate) fn replacement<T: DeserializeOwned>(body: ReplyBody) -> HookResult<Reply<T>> {
    match body {
        ReplyBody::Keep => Ok(Reply::Keep),
        ReplyBody::Replace(value) => serde_json::from_value(value)
            .map(Reply::Replace)
            .map_err(|_| skip(SkipReason::Undecodable)),
        ReplyBody::Error(message) => Err(HookError::msg(message)),
    }
}

/// A reply to a read-only hook: whatever the plugin returns changes nothing (SPEC P2.1, P2.4,
/// P2.6); only an error is reported.
///
/// # Errors
/// The plugin's error.
pub(crate) fn observed(body: ReplyBody) -> HookResult<()> {
    match body {
        ReplyBody::Keep | ReplyBody::Replace(_) => Ok(()),
        ReplyBody::Error(message) => Err(HookError::msg(message)),
    }
}

impl ExternalPlugin {
    /// Calls `hook` on `value` and decodes a replacement as `T`. The value is encoded once,
    /// into the request line; the plugin actor's timeout bounds the call.
    async fn typed<T: Serialize + DeserializeOwned>(
        &self,
        hook: HookKind,
        cx: &HookContext,
        value: T,
    ) -> HookResult<Reply<T>> {
        replacement(
            self.hook_round_trip(hook, &cx.session_id, &value, None)
                .await
                .map_err(skip)?,
        )
    }

    /// Calls a read-only hook.
    async fn observe<T: Serialize>(
        &self,
        hook: HookKind,
        cx: &HookContext,
        value: T,
    ) -> HookResult<()> {
        observed(
            self.hook_round_trip(hook, &cx.session_id, &value, None)
                .await
                .map_err(skip)?,
        )
    }
}

#[async_trait]
impl Plugin for ExternalPlugin {
    fn hooks(&self) -> HookSet {
        self.hello().hooks.ordinary_only()
    }
    async fn on_session_started(&self, cx: &HookContext, session: SessionInfo) -> HookResult<()> {
        self.observe(HookKind::OnSessionStarted, cx, session).await
    }
    async fn on_session_ended(&self, cx: &HookContext, session: SessionInfo) -> HookResult<()> {
        self.observe(HookKind::OnSessionEnded, cx, session).await
    }
    async fn on_prompt(&self, cx: &HookContext, prompt: Prompt) -> HookResult<Reply<Prompt>> {
        self.typed(HookKind::OnPrompt, cx, prompt).await
    }
    async fn on_user_message(
        &self,
        cx: &HookContext,
        message: UserMessage,
    ) -> HookResult<Reply<UserMessage>> {
        self.typed(HookKind::OnUserMessage, cx, message).await
    }
    async fn on_turn_started(&self, cx: &HookContext, turn: TurnInfo) -> HookResult<()> {
        self.observe(HookKind::OnTurnStarted, cx, turn).await
    }
    async fn on_turn_finished(&self, cx: &HookContext, turn: TurnInfo) -> HookResult<()> {
        self.observe(HookKind::OnTurnFinished, cx, turn).await
    }
    async fn transform_model(
        &self,
        cx: &HookContext,
        request: ModelRequest,
    ) -> HookResult<Reply<ModelRequest>> {
        self.typed(HookKind::TransformModel, cx, request).await
    }
    async fn on_model_response(&self, cx: &HookContext, response: ModelResponse) -> HookResult<()> {
        self.observe(HookKind::OnModelResponse, cx, response).await
    }
    async fn on_tool_call(&self, cx: &HookContext, call: ToolCall) -> HookResult<Reply<ToolCall>> {
        self.typed(HookKind::OnToolCall, cx, call).await
    }
    async fn on_tool_result(
        &self,
        cx: &HookContext,
        result: ToolResult,
    ) -> HookResult<Reply<ToolResult>> {
        self.typed(HookKind::OnToolResult, cx, result).await
    }
    async fn on_approval(
        &self,
        cx: &HookContext,
        classification: Classification,
    ) -> HookResult<Reply<Classification>> {
        self.typed(HookKind::OnApproval, cx, classification).await
    }
    async fn on_compaction(
        &self,
        cx: &HookContext,
        compaction: Compaction,
    ) -> HookResult<Reply<Compaction>> {
        self.typed(HookKind::OnCompaction, cx, compaction).await
    }
}

#[async_trait]
impl RawHooks for ExternalPlugin {
    fn raw_hooks(&self) -> HookSet {
        self.hello().raw_hooks.raw_only()
    }
    async fn rebuild_model(
        &self,
        cx: &HookContext,
        request: ModelRequest,
    ) -> HookResult<Reply<ModelRequest>> {
        self.typed(HookKind::RebuildModel, cx, request).await
    }
    async fn rewrite_prompt(
        &self,
        cx: &HookContext,
        text: SystemText,
    ) -> HookResult<Reply<SystemText>> {
        self.typed(HookKind::RewritePrompt, cx, text).await
    }
    async fn rewrite_compaction(
        &self,
        cx: &HookContext,
        text: CompactionText,
    ) -> HookResult<Reply<CompactionText>> {
        self.typed(HookKind::RewriteCompaction, cx, text).await
    }
    async fn rewrite_approval(
        &self,
        cx: &HookContext,
        classification: Classification,
    ) -> HookResult<Reply<Classification>> {
        self.typed(HookKind::RewriteApproval, cx, classification)
            .await
    }
}
