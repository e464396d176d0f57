//! The bundled example plugins. Together they use every ordinary hook and every raw hook, so the
//! demo shows each one at its place in the turn.
//!
//! Each is written on the fast path: one plain function per hook, registered with
//! [`PluginRegistration::on`] (or [`PluginRegistration::on_raw`]), which sees the value by
//! reference and answers at once. The hooks that run are exactly the ones registered.

use hookline_actors::plugin::{HookError, HookResult, PluginRegistration, Reply};
use hookline_messages::approval::{Classification, Risk};
use hookline_messages::compaction::{Compaction, CompactionPhase, CompactionText};
use hookline_messages::hook::{
    HookContext, OnApproval, OnCompaction, OnModelResponse, OnPrompt, OnSessionEnded,
    OnSessionStarted, OnToolCall, OnToolResult, OnTurnFinished, OnTurnStarted, OnUserMessage,
    RebuildModel, RewriteApproval, RewriteCompaction, RewritePrompt, TransformModel,
};
use hookline_messages::model::{ImageRef, Item, ItemBody, MediaType, ModelRequest, ModelResponse};
use hookline_messages::prompt::{Prompt, PromptMode, SystemText};
use hookline_messages::session::SessionInfo;
use hookline_messages::tool::{ToolCall, ToolResult};
use hookline_messages::user::{TurnInfo, UserMessage};

/// `house-style`: appends to prompts, redacts passwords before storage, rewrites outbound user
/// text, appends compaction facts, and observes sessions, turns and responses.
fn house_style() -> PluginRegistration {
    PluginRegistration::new("house-style")
        .on(OnSessionStarted, |_, s: &SessionInfo| {
            tracing::info!(session = %s.session_id, workspace = %s.workspace_root, "house-style: session started");
            Ok(Reply::Keep)
        })
        .on(OnSessionEnded, |_, s: &SessionInfo| {
            tracing::info!(session = %s.session_id, workspace = %s.workspace_root, "house-style: session ended");
            Ok(Reply::Keep)
        })
        .on(OnPrompt, |_, prompt: &Prompt| {
            Ok(Reply::Replace(
                prompt.clone().append("House style: answer in British English."),
            ))
        })
        .on(OnUserMessage, redact_passwords)
        .on(OnTurnStarted, |_, turn: &TurnInfo| {
            tracing::info!(text = %turn.user_text, "house-style: turn started");
            Ok(Reply::Keep)
        })
        .on(OnTurnFinished, |_, turn: &TurnInfo| {
            tracing::info!(stop = ?turn.stop_reason, "house-style: turn finished");
            Ok(Reply::Keep)
        })
        .on(TransformModel, be_brief)
        .on(OnModelResponse, |_, r: &ModelResponse| {
            tracing::info!(purpose = ?r.purpose, finish = ?r.finish_reason, "house-style: response");
            Ok(Reply::Keep)
        })
        .on(OnCompaction, |_, c: &Compaction| {
            let fact = match c.phase {
                CompactionPhase::Prompt => "Keep every file name the user mentioned.",
                CompactionPhase::Summary => "Fact: the workspace has notes.txt.",
            };
            Ok(Reply::Replace(c.clone().append(fact)))
        })
}

fn redact_passwords(_: &HookContext, m: &UserMessage) -> HookResult<Reply<UserMessage>> {
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

fn be_brief(_: &HookContext, r: &ModelRequest) -> HookResult<Reply<ModelRequest>> {
    // Only this outbound call sees the change; the stored message stays (SPEC P3.8). Only the
    // message not answered yet (the first user item after the last answer) is asked for
    // brevity: the earlier ones were answered already, and changing each of them would make
    // every call's change grow with the conversation.
    let since = r
        .items
        .iter()
        .rposition(|item| matches!(item.body, ItemBody::Assistant { .. }))
        .map_or(0, |answer| answer + 1);
    let Some(latest) = r.items[since..]
        .iter()
        .position(|item| matches!(item.body, ItemBody::User { .. }))
        .map(|at| since + at)
    else {
        return Ok(Reply::Keep);
    };
    // The request shares its items: the clone copies a pointer, the edit the list's pointers and
    // the edited item (copy on write).
    let mut r = r.clone();
    if let Some(ItemBody::User { text, .. }) = r.item_mut(latest).map(|item| &mut item.body) {
        text.push_str(" (be brief)");
    }
    Ok(Reply::Replace(r))
}

/// `guard`: fences writes back into the workspace, raises write approvals, annotates results
/// (and, on text-only turns, tries to attach an image, which the host ignores with a note).
fn guard() -> PluginRegistration {
    PluginRegistration::new("guard")
        .on(OnToolCall, fence_path)
        .on(OnApproval, raise_approval)
        .on(OnToolResult, |_, r: &ToolResult| {
            let mut r = r.clone();
            r.text.push_str("\n(checked by guard)");
            r.images.push(ImageRef {
                number: 1,
                media_type: MediaType::Png,
            });
            Ok(Reply::Replace(r))
        })
}

fn fence_path(_: &HookContext, call: &ToolCall) -> HookResult<Reply<ToolCall>> {
    let Some(path) = call.arguments.get("path").and_then(|p| p.as_str()) else {
        return Ok(Reply::Keep);
    };
    let Some(inside) = path.strip_prefix("../") else {
        return Ok(Reply::Keep);
    };
    let mut call = call.clone();
    call.arguments["path"] = inside.into();
    Ok(Reply::Replace(call))
}

fn raise_approval(_: &HookContext, c: &Classification) -> HookResult<Reply<Classification>> {
    if c.risk >= Risk::Write {
        return Ok(Reply::Replace(Classification {
            requires_prompt: true,
            ..c.clone()
        }));
    }
    // A listing reveals every file name: guard rates it like running a program.
    if c.summary.starts_with("list_dir") {
        return Ok(Reply::Replace(Classification {
            risk: Risk::Execute,
            requires_prompt: true,
            ..c.clone()
        }));
    }
    Ok(Reply::Keep)
}

/// `flaky`: its hook always fails, so the demo shows a skip note.
fn flaky() -> PluginRegistration {
    PluginRegistration::new("flaky").on(OnUserMessage, |_, _: &UserMessage| {
        Err(HookError::msg("flaky is offline."))
    })
}

/// `operator-tools`: every raw hook (registered apart, SPEC R0.1). Adds a reminder item to work
/// calls, rewrites the work text, rewrites the compaction summary, and lowers the risk of
/// directory listings.
fn operator_tools() -> PluginRegistration {
    PluginRegistration::new("operator-tools")
        .on_raw(RebuildModel, |_, r: &ModelRequest| {
            if !r.purpose.is_turn_call() {
                return Ok(Reply::Keep);
            }
            let reminder = ItemBody::User {
                text: "Reminder: cite file names.".into(),
                images: Vec::new(),
            };
            let mut r = r.clone();
            r.items
                .push(Item::new("operator-reminder", reminder).into());
            Ok(Reply::Replace(r))
        })
        .on_raw(RewritePrompt, |_, t: &SystemText| {
            if t.mode != PromptMode::Work {
                return Ok(Reply::Keep);
            }
            Ok(Reply::Replace(SystemText {
                text: format!("[operator] {}", t.text),
                ..t.clone()
            }))
        })
        .on_raw(RewriteCompaction, |_, t: &CompactionText| {
            if t.phase != CompactionPhase::Summary {
                return Ok(Reply::Keep);
            }
            Ok(Reply::Replace(CompactionText {
                text: format!("Summary (operator): {}", t.text),
                ..t.clone()
            }))
        })
        .on_raw(RewriteApproval, |_, c: &Classification| {
            if !c.summary.starts_with("list_dir") {
                return Ok(Reply::Keep);
            }
            Ok(Reply::Replace(Classification {
                risk: Risk::Read,
                requires_prompt: false,
                ..c.clone()
            }))
        })
}

/// The bundled plugins, in load order.
pub fn example_plugins() -> Vec<PluginRegistration> {
    vec![
        house_style(),
        guard(),
        flaky(),
        operator_tools(),
        PluginRegistration::new("gateway-audit")
            .with_events(std::sync::Arc::new(super::events::GatewayAudit)),
    ]
}
