//! The bundled example plugins. Together they use every ordinary hook and every raw hook, so the
//! demo shows each one at its place in the turn.

use std::sync::Arc;

use async_trait::async_trait;
use hookline_actors::plugin::{HookError, HookResult, Plugin, PluginRegistration, RawHooks, Reply};
use hookline_messages::approval::{Classification, Risk};
use hookline_messages::compaction::{Compaction, CompactionPhase, CompactionText};
use hookline_messages::hook::{HookContext, HookKind, HookSet};
use hookline_messages::model::{ImageRef, Item, ItemBody, MediaType, ModelRequest, ModelResponse};
use hookline_messages::prompt::{Prompt, PromptMode, SystemText};
use hookline_messages::session::SessionInfo;
use hookline_messages::tool::{ToolCall, ToolResult};
use hookline_messages::user::{TurnInfo, UserMessage};

/// `house-style`: appends to prompts, redacts passwords before storage, rewrites outbound user
/// text, appends compaction facts, and observes sessions, turns and responses.
struct HouseStyle;

#[async_trait]
impl Plugin for HouseStyle {
    fn hooks(&self) -> HookSet {
        use HookKind::*;
        HookSet::of(&[
            OnSessionStarted,
            OnSessionEnded,
            OnPrompt,
            OnUserMessage,
            OnTurnStarted,
            OnTurnFinished,
            TransformModel,
            OnModelResponse,
            OnCompaction,
        ])
    }
    async fn on_session_started(&self, _: &HookContext, s: SessionInfo) -> HookResult<()> {
        tracing::info!(session = %s.session_id, workspace = %s.workspace_root, "house-style: session started");
        Ok(())
    }
    async fn on_session_ended(&self, _: &HookContext, s: SessionInfo) -> HookResult<()> {
        tracing::info!(session = %s.session_id, workspace = %s.workspace_root, "house-style: session ended");
        Ok(())
    }
    async fn on_prompt(&self, _: &HookContext, prompt: Prompt) -> HookResult<Reply<Prompt>> {
        Ok(Reply::Replace(
            prompt.append("House style: answer in British English."),
        ))
    }
    async fn on_user_message(
        &self,
        _: &HookContext,
        m: UserMessage,
    ) -> HookResult<Reply<UserMessage>> {
        if !m.text.contains("password") {
            return Ok(Reply::Keep);
        }
        let redacted = m
            .text
            .split(' ')
            .take_while(|w| *w != "password")
            .collect::<Vec<_>>()
            .join(" ");
        Ok(Reply::Replace(UserMessage::new(format!(
            "{redacted} [password redacted]"
        ))))
    }
    async fn on_turn_started(&self, _: &HookContext, turn: TurnInfo) -> HookResult<()> {
        tracing::info!(text = %turn.user_text, "house-style: turn started");
        Ok(())
    }
    async fn on_turn_finished(&self, _: &HookContext, turn: TurnInfo) -> HookResult<()> {
        tracing::info!(stop = ?turn.stop_reason, "house-style: turn finished");
        Ok(())
    }
    async fn transform_model(
        &self,
        _: &HookContext,
        mut r: ModelRequest,
    ) -> HookResult<Reply<ModelRequest>> {
        // Only this outbound call sees the change; the stored message stays (SPEC P3.8).
        for item in &mut r.items {
            if let ItemBody::User { text, .. } = &mut item.body {
                text.push_str(" (be brief)");
            }
        }
        Ok(Reply::Replace(r))
    }
    async fn on_model_response(&self, _: &HookContext, r: ModelResponse) -> HookResult<()> {
        tracing::info!(purpose = ?r.purpose, finish = ?r.finish_reason, "house-style: response");
        Ok(())
    }
    async fn on_compaction(&self, _: &HookContext, c: Compaction) -> HookResult<Reply<Compaction>> {
        let fact = match c.phase {
            CompactionPhase::Prompt => "Keep every file name the user mentioned.",
            CompactionPhase::Summary => "Fact: the workspace has notes.txt.",
        };
        Ok(Reply::Replace(c.append(fact)))
    }
}

/// `guard`: fences writes back into the workspace, raises write approvals, annotates results
/// (and, on text-only turns, tries to attach an image, which the host ignores with a note).
struct Guard;

#[async_trait]
impl Plugin for Guard {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[
            HookKind::OnToolCall,
            HookKind::OnApproval,
            HookKind::OnToolResult,
        ])
    }
    async fn on_tool_call(
        &self,
        _: &HookContext,
        mut call: ToolCall,
    ) -> HookResult<Reply<ToolCall>> {
        let Some(path) = call.arguments.get("path").and_then(|p| p.as_str()) else {
            return Ok(Reply::Keep);
        };
        let Some(inside) = path.strip_prefix("../") else {
            return Ok(Reply::Keep);
        };
        call.arguments["path"] = inside.into();
        Ok(Reply::Replace(call))
    }
    async fn on_approval(
        &self,
        _: &HookContext,
        c: Classification,
    ) -> HookResult<Reply<Classification>> {
        if c.risk >= Risk::Write {
            return Ok(Reply::Replace(Classification {
                requires_prompt: true,
                ..c
            }));
        }
        // A listing reveals every file name: guard rates it like running a program.
        if c.summary.starts_with("list_dir") {
            return Ok(Reply::Replace(Classification {
                risk: Risk::Execute,
                requires_prompt: true,
                ..c
            }));
        }
        Ok(Reply::Keep)
    }
    async fn on_tool_result(
        &self,
        _: &HookContext,
        mut r: ToolResult,
    ) -> HookResult<Reply<ToolResult>> {
        r.text.push_str("\n(checked by guard)");
        r.images.push(ImageRef {
            number: 1,
            media_type: MediaType::Png,
        });
        Ok(Reply::Replace(r))
    }
}

/// `flaky`: its hook always fails, so the demo shows a skip note.
struct Flaky;

#[async_trait]
impl Plugin for Flaky {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[HookKind::OnUserMessage])
    }
    async fn on_user_message(
        &self,
        _: &HookContext,
        _: UserMessage,
    ) -> HookResult<Reply<UserMessage>> {
        Err(HookError::msg("flaky is offline."))
    }
}

/// `operator-tools`: every raw hook. Adds a reminder item to work calls, rewrites the work text,
/// rewrites the compaction summary, and lowers the risk of directory listings.
struct OperatorTools;

#[async_trait]
impl RawHooks for OperatorTools {
    fn raw_hooks(&self) -> HookSet {
        use HookKind::*;
        HookSet::of(&[
            RebuildModel,
            RewritePrompt,
            RewriteCompaction,
            RewriteApproval,
        ])
    }
    async fn rebuild_model(
        &self,
        _: &HookContext,
        mut r: ModelRequest,
    ) -> HookResult<Reply<ModelRequest>> {
        if !r.purpose.is_turn_call() {
            return Ok(Reply::Keep);
        }
        let reminder = ItemBody::User {
            text: "Reminder: cite file names.".into(),
            images: Vec::new(),
        };
        r.items.push(Item::new("operator-reminder", reminder));
        Ok(Reply::Replace(r))
    }
    async fn rewrite_prompt(
        &self,
        _: &HookContext,
        t: SystemText,
    ) -> HookResult<Reply<SystemText>> {
        if t.mode != PromptMode::Work {
            return Ok(Reply::Keep);
        }
        Ok(Reply::Replace(SystemText {
            text: format!("[operator] {}", t.text),
            ..t
        }))
    }
    async fn rewrite_compaction(
        &self,
        _: &HookContext,
        t: CompactionText,
    ) -> HookResult<Reply<CompactionText>> {
        if t.phase != CompactionPhase::Summary {
            return Ok(Reply::Keep);
        }
        Ok(Reply::Replace(CompactionText {
            text: format!("Summary (operator): {}", t.text),
            ..t
        }))
    }
    async fn rewrite_approval(
        &self,
        _: &HookContext,
        c: Classification,
    ) -> HookResult<Reply<Classification>> {
        if !c.summary.starts_with("list_dir") {
            return Ok(Reply::Keep);
        }
        Ok(Reply::Replace(Classification {
            risk: Risk::Read,
            requires_prompt: false,
            ..c
        }))
    }
}

/// The bundled plugins, in load order.
pub fn example_plugins() -> Vec<PluginRegistration> {
    vec![
        PluginRegistration::new("house-style").with_hooks(Arc::new(HouseStyle)),
        PluginRegistration::new("guard").with_hooks(Arc::new(Guard)),
        PluginRegistration::new("flaky").with_hooks(Arc::new(Flaky)),
        PluginRegistration::new("operator-tools").with_raw_hooks(Arc::new(OperatorTools)),
        PluginRegistration::new("gateway-audit").with_events(Arc::new(super::events::GatewayAudit)),
    ]
}
