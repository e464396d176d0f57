//! Read-only hooks (SPEC P2.1, P2.4, P2.6): whatever a plugin does with its copy changes nothing;
//! a failing one is skipped with a note and the next plugin still sees the full, unchanged
//! input. And no plugin is ever sent a hook it does not declare.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::type_complexity)]

#[path = "../messages/tests/common/mod.rs"]
mod model;
mod scripted;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use hookline::actors::plugin::{Dispatch, HookResult, Plugin, PluginRegistration, RawHooks, Reply};
use hookline::actors::Pipeline;
use hookline::messages::approval::Classification;
use hookline::messages::compaction::{Compaction, CompactionPhase, CompactionText};
use hookline::messages::hook::{self, HookContext, HookKind, HookSet, ToolResultContext};
use hookline::messages::model::{FinishReason, ModelRequest, ModelResponse, Purpose, Usage};
use hookline::messages::prompt::{Prompt, PromptMode, SystemText};
use hookline::messages::session::{ApprovalMode, SessionInfo};
use hookline::messages::tool::{ApprovalState, ToolCall, ToolResult};
use hookline::messages::user::{StopReason, TurnInfo, UserMessage};
use scripted::*;

/// Runs read-only hook `H`: the first plugin "replaces" (mutates its copy), the second fails,
/// the third observes.
async fn read_only<H>(input: H::Value, forge: fn(H::Value) -> H::Value)
where
    H: Dispatch<Context = ()>,
    H::Value: Sync,
{
    let stage = H::KIND.stage();
    let failures: [(fn() -> Act<H::Value>, &str); 2] = [
        (|| Act::Fail(" no ".into()), "no"),
        (|| Act::Panic, "it panicked."),
    ];
    for (failing, reason) in failures {
        let (outcome, [mutator, _, observer]) =
            trio::<H>((), input.clone(), [replace(forge), failing(), Act::Keep]).await;
        assert_eq!(outcome.value, input, "{stage}: the value is the host's");
        assert!(outcome.changed_by.is_empty(), "{stage}");
        assert_eq!(
            notes(&outcome),
            [format!(
                "Plugin hook 'middle' {stage} was skipped: {reason}"
            )]
        );
        assert_eq!(mutator.seen(), vec![input.clone()]);
        assert_eq!(
            observer.seen(),
            vec![input.clone()],
            "{stage}: the next plugin sees the full input"
        );
    }
}

fn session_info() -> SessionInfo {
    SessionInfo {
        workspace_root: "/work/repo".into(),
        session_id: "s1".into(),
        approval_mode: ApprovalMode::AllowWorkspace,
    }
}

#[actix_rt::test]
async fn session_start_and_end_are_read_only() {
    let forge = |s: SessionInfo| SessionInfo {
        workspace_root: "/".into(),
        approval_mode: ApprovalMode::AskAll,
        ..s
    };
    read_only::<hook::OnSessionStarted>(session_info(), forge).await;
    read_only::<hook::OnSessionEnded>(session_info(), forge).await;
}

#[actix_rt::test]
async fn turn_start_and_end_are_read_only() {
    let turn = TurnInfo {
        user_text: "fix it".into(),
        mode: PromptMode::Plan,
        stop_reason: None,
    };
    let forge = |t: TurnInfo| TurnInfo {
        user_text: String::new(),
        stop_reason: Some(StopReason::Cancelled),
        ..t
    };
    read_only::<hook::OnTurnStarted>(turn.clone(), forge).await;
    let ended = TurnInfo {
        stop_reason: Some(StopReason::Completed),
        ..turn
    };
    read_only::<hook::OnTurnFinished>(ended, forge).await;
}

#[actix_rt::test]
async fn model_response_is_read_only() {
    let response = ModelResponse {
        purpose: Purpose::Compaction,
        finish_reason: FinishReason::Length,
        items: vec![model::assistant("a", "summary", &[])],
        usage: Usage::reported(100, 20),
    };
    let forge = |r: ModelResponse| ModelResponse {
        items: vec![],
        finish_reason: FinishReason::Stop,
        ..r
    };
    read_only::<hook::OnModelResponse>(response, forge).await;
}

/// Implements every method, counting calls, but declares only `on_prompt` (plus a raw hook on
/// the ordinary interface, which must be ignored).
#[derive(Default)]
struct Undeclared {
    calls: AtomicUsize,
    prompt_calls: AtomicUsize,
}

impl Undeclared {
    fn hit<T>(&self) -> HookResult<Reply<T>> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Ok(Reply::Keep)
    }
}

#[async_trait]
impl Plugin for Undeclared {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[HookKind::OnPrompt, HookKind::RebuildModel])
    }
    async fn on_session_started(&self, _: &HookContext, _: SessionInfo) -> HookResult<()> {
        self.hit::<()>().map(drop)
    }
    async fn on_session_ended(&self, _: &HookContext, _: SessionInfo) -> HookResult<()> {
        self.hit::<()>().map(drop)
    }
    async fn on_prompt(&self, _: &HookContext, p: Prompt) -> HookResult<Reply<Prompt>> {
        self.prompt_calls.fetch_add(1, Ordering::SeqCst);
        Ok(Reply::Replace(p.append("declared")))
    }
    async fn on_user_message(
        &self,
        _: &HookContext,
        _: UserMessage,
    ) -> HookResult<Reply<UserMessage>> {
        self.hit()
    }
    async fn on_turn_started(&self, _: &HookContext, _: TurnInfo) -> HookResult<()> {
        self.hit::<()>().map(drop)
    }
    async fn on_turn_finished(&self, _: &HookContext, _: TurnInfo) -> HookResult<()> {
        self.hit::<()>().map(drop)
    }
    async fn transform_model(
        &self,
        _: &HookContext,
        _: ModelRequest,
    ) -> HookResult<Reply<ModelRequest>> {
        self.hit()
    }
    async fn on_model_response(&self, _: &HookContext, _: ModelResponse) -> HookResult<()> {
        self.hit::<()>().map(drop)
    }
    async fn on_tool_call(&self, _: &HookContext, _: ToolCall) -> HookResult<Reply<ToolCall>> {
        self.hit()
    }
    async fn on_tool_result(
        &self,
        _: &HookContext,
        _: ToolResult,
    ) -> HookResult<Reply<ToolResult>> {
        self.hit()
    }
    async fn on_approval(
        &self,
        _: &HookContext,
        _: Classification,
    ) -> HookResult<Reply<Classification>> {
        self.hit()
    }
    async fn on_compaction(&self, _: &HookContext, _: Compaction) -> HookResult<Reply<Compaction>> {
        self.hit()
    }
}

#[async_trait]
impl RawHooks for Undeclared {
    /// Declares only `rewrite_prompt` (and an ordinary hook, which must be ignored here).
    fn raw_hooks(&self) -> HookSet {
        HookSet::of(&[HookKind::RewritePrompt, HookKind::OnToolCall])
    }
    async fn rebuild_model(
        &self,
        _: &HookContext,
        _: ModelRequest,
    ) -> HookResult<Reply<ModelRequest>> {
        self.hit()
    }
    async fn rewrite_prompt(
        &self,
        _: &HookContext,
        t: SystemText,
    ) -> HookResult<Reply<SystemText>> {
        self.prompt_calls.fetch_add(1, Ordering::SeqCst);
        Ok(Reply::Replace(SystemText {
            text: "rewritten".into(),
            ..t
        }))
    }
    async fn rewrite_compaction(
        &self,
        _: &HookContext,
        _: CompactionText,
    ) -> HookResult<Reply<CompactionText>> {
        self.hit()
    }
    async fn rewrite_approval(
        &self,
        _: &HookContext,
        _: Classification,
    ) -> HookResult<Reply<Classification>> {
        self.hit()
    }
}

#[actix_rt::test]
async fn a_plugin_is_never_sent_a_hook_it_does_not_declare() {
    let plugin = Arc::new(Undeclared::default());
    let pipeline = Pipeline::builder()
        .plugin(
            PluginRegistration::new("p")
                .with_hooks(plugin.clone())
                .with_raw_hooks(plugin.clone()),
        )
        .start()
        .unwrap();
    assert_eq!(
        pipeline.plugins()[0].implements,
        HookSet::of(&[HookKind::OnPrompt, HookKind::RewritePrompt])
    );
    let s = session("s");
    let turn = TurnInfo {
        user_text: "x".into(),
        mode: PromptMode::Work,
        stop_reason: None,
    };
    let response = ModelResponse {
        purpose: Purpose::Work,
        finish_reason: FinishReason::Stop,
        items: vec![],
        usage: Usage::default(),
    };
    let result = ToolResult {
        call_id: "c1".into(),
        name: "t".into(),
        text: "x".into(),
        images: vec![],
        success: true,
        approval: ApprovalState::Granted,
    };
    let p = &pipeline;
    assert!(p
        .call::<hook::OnSessionStarted>(&s, session_info())
        .await
        .unwrap()
        .notes
        .is_empty());
    assert!(p
        .call::<hook::OnSessionEnded>(&s, session_info())
        .await
        .unwrap()
        .notes
        .is_empty());
    assert!(p
        .call::<hook::OnUserMessage>(&s, UserMessage::new("x"))
        .await
        .unwrap()
        .notes
        .is_empty());
    assert!(p
        .call::<hook::OnTurnStarted>(&s, turn.clone())
        .await
        .unwrap()
        .notes
        .is_empty());
    assert!(p
        .call::<hook::OnTurnFinished>(&s, turn)
        .await
        .unwrap()
        .notes
        .is_empty());
    assert!(p
        .call::<hook::TransformModel>(&s, model::work_request())
        .await
        .unwrap()
        .notes
        .is_empty());
    assert!(p
        .call_with::<hook::RebuildModel>(&s, model::held(), model::work_request())
        .await
        .unwrap()
        .notes
        .is_empty());
    assert!(p
        .call::<hook::OnModelResponse>(&s, response)
        .await
        .unwrap()
        .notes
        .is_empty());
    assert!(p
        .call::<hook::OnToolCall>(&s, tool_call())
        .await
        .unwrap()
        .notes
        .is_empty());
    assert!(p
        .call_with::<hook::OnToolResult>(&s, ToolResultContext::default(), result)
        .await
        .unwrap()
        .notes
        .is_empty());
    assert!(p
        .call::<hook::OnApproval>(&s, classification())
        .await
        .unwrap()
        .notes
        .is_empty());
    assert!(p
        .call::<hook::RewriteApproval>(&s, classification())
        .await
        .unwrap()
        .notes
        .is_empty());
    let compaction = Compaction::new(CompactionPhase::Summary, "x");
    assert!(p
        .call::<hook::OnCompaction>(&s, compaction.clone())
        .await
        .unwrap()
        .notes
        .is_empty());
    assert!(p
        .call::<hook::RewriteCompaction>(&s, compaction.composed())
        .await
        .unwrap()
        .notes
        .is_empty());
    assert_eq!(
        plugin.calls.load(Ordering::SeqCst),
        0,
        "no undeclared hook was called"
    );
    let prompt = p
        .call::<hook::OnPrompt>(&s, Prompt::new(PromptMode::Work, "base"))
        .await
        .unwrap();
    assert_eq!(prompt.value.appended, ["declared"]);
    let text = p
        .call::<hook::RewritePrompt>(&s, prompt.value.composed())
        .await
        .unwrap();
    assert_eq!(text.value.text, "rewritten");
    assert_eq!(plugin.prompt_calls.load(Ordering::SeqCst), 2);
}
