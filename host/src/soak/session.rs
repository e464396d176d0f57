//! One soak session: every ordinary hook and every raw hook, in the order a turn runs them
//! (`docs/turn.md`), with a real tool run between `rewrite_approval` and `on_tool_result`, and
//! one queued and one awaited gateway event.

use std::sync::Arc;

use hookline_actors::{Outcome, Pipeline, PipelineError};
use hookline_messages::compaction::{Compaction, CompactionPhase};
use hookline_messages::event::{CommandStopContext, Event, MessageReceivedContext};
use hookline_messages::hook::{
    OnApproval, OnCompaction, OnModelResponse, OnPrompt, OnSessionEnded, OnSessionStarted,
    OnToolCall, OnToolResult, OnTurnFinished, OnTurnStarted, OnUserMessage, RebuildModel,
    RewriteApproval, RewriteCompaction, RewritePrompt, ToolResultContext, TransformModel,
};
use hookline_messages::model::{
    FinishReason, HeldImages, Item, ItemBody, ModelRequest, ModelResponse, Purpose, Usage,
};
use hookline_messages::note::Note;
use hookline_messages::prompt::{Prompt, PromptMode};
use hookline_messages::session::SessionInfo;
use hookline_messages::tool::{ApprovalState, ToolCall, ToolProvider, ToolResult};
use hookline_messages::user::{StopReason, TurnInfo, UserMessage};
use tokio::sync::Semaphore;

use crate::approval::classify;
use crate::tools::{ToolContext, ToolRegistry};

/// The file the soak's tool call counts the words of.
pub(super) const NOTES_FILE: &str = "notes.txt";

/// What a session needs besides its identity: the pipeline, the tools, and a bound on tool runs.
pub(super) struct Rig {
    pub(super) pipeline: Pipeline,
    pub(super) tools: Arc<ToolRegistry>,
    pub(super) tool_context: ToolContext,
    /// Tool runs at once: file tools use tokio's blocking pool, which would otherwise grow to
    /// hundreds of threads under 10,000 sessions and make resident memory measure that pool.
    pub(super) tool_runs: Semaphore,
}

/// What one session produced: its notes in order, and how many hook calls it made.
#[derive(Debug, Default)]
pub(super) struct SessionRun {
    pub(super) notes: Vec<Note>,
    pub(super) hook_calls: u64,
}

/// Collects a session's notes while its hooks run.
struct Collector<'a> {
    rig: &'a Rig,
    info: &'a SessionInfo,
    run: SessionRun,
}

impl Collector<'_> {
    async fn hook<H>(&mut self, value: H::Value) -> Result<H::Value, PipelineError>
    where
        H: hookline_actors::plugin::Dispatch<Context = ()>,
    {
        let outcome = self
            .rig
            .pipeline
            .call::<H>(&self.info.session_id, value)
            .await?;
        Ok(self.keep(outcome))
    }

    async fn hook_with<H>(
        &mut self,
        context: H::Context,
        value: H::Value,
    ) -> Result<H::Value, PipelineError>
    where
        H: hookline_actors::plugin::Dispatch,
    {
        let outcome = self
            .rig
            .pipeline
            .call_with::<H>(&self.info.session_id, context, value)
            .await?;
        Ok(self.keep(outcome))
    }

    fn keep<T>(&mut self, outcome: Outcome<T>) -> T {
        self.run.hook_calls += 1;
        self.run.notes.extend(outcome.notes);
        outcome.value
    }
}

/// Runs one whole session through every hook, then tells the coordinator to forget it.
///
/// # Errors
/// The first [`PipelineError`] (stopped or overloaded); plugin failures are notes, not errors.
pub(super) async fn run_session(
    rig: &Rig,
    info: &SessionInfo,
) -> Result<SessionRun, PipelineError> {
    let mut s = Collector {
        rig,
        info,
        run: SessionRun::default(),
    };
    s.hook::<OnSessionStarted>(info.clone()).await?;
    gateway_events(&mut s).await;
    let typed = format!("please count the words in {NOTES_FILE}");
    let stored = s.hook::<OnUserMessage>(UserMessage::new(typed)).await?.text;
    let turn = TurnInfo {
        user_text: stored.clone(),
        mode: PromptMode::Work,
        stop_reason: None,
    };
    s.hook::<OnTurnStarted>(turn.clone()).await?;
    let system = s
        .hook::<OnPrompt>(Prompt::new(PromptMode::Work, "Work carefully."))
        .await?;
    let system = s.hook::<RewritePrompt>(system.composed()).await?.text;
    model_call(&mut s, system, stored).await?;
    tool_call(&mut s).await?;
    compaction(&mut s).await?;
    s.hook::<OnTurnFinished>(TurnInfo {
        stop_reason: Some(StopReason::Completed),
        ..turn
    })
    .await?;
    s.hook::<OnSessionEnded>(info.clone()).await?;
    rig.pipeline.forget_session(&info.session_id).await?;
    Ok(s.run)
}

/// `rebuild_model` then `transform_model` on the outbound request, then `on_model_response`.
async fn model_call(
    s: &mut Collector<'_>,
    system: String,
    user: String,
) -> Result<(), PipelineError> {
    let request = ModelRequest {
        purpose: Purpose::Work,
        accepts_images: false,
        items: vec![
            Item::new(
                "system",
                ItemBody::System {
                    text: system,
                    images: Vec::new(),
                },
            ),
            Item::new(
                "u1",
                ItemBody::User {
                    text: user,
                    images: Vec::new(),
                },
            ),
        ],
    };
    let request = s
        .hook_with::<RebuildModel>(HeldImages::default(), request)
        .await?;
    s.hook::<TransformModel>(request).await?;
    let response = ModelResponse {
        purpose: Purpose::Work,
        finish_reason: FinishReason::ToolCalls,
        items: vec![Item::new(
            "c1",
            ItemBody::ToolCall {
                call_id: "c1".into(),
                name: "word_count".into(),
                arguments: serde_json::json!({ "path": NOTES_FILE }),
            },
        )],
        usage: Usage {
            input_tokens: 64,
            output_tokens: 16,
        },
    };
    s.hook::<OnModelResponse>(response).await?;
    Ok(())
}

/// `on_tool_call`, classification, `on_approval`, `rewrite_approval`, the tool's run (through
/// the registry, as the host runs it), `on_tool_result` on a text-only turn.
async fn tool_call(s: &mut Collector<'_>) -> Result<(), PipelineError> {
    let call = ToolCall {
        call_id: "c1".into(),
        name: "word_count".into(),
        arguments: serde_json::json!({ "path": NOTES_FILE }),
        provider: ToolProvider::Plugin,
    };
    let call = s.hook::<OnToolCall>(call).await?;
    let tool = s.rig.tools.get(&call.name);
    let classification = classify(tool.as_ref().map(|t| t.spec()), &call);
    let classification = s.hook::<OnApproval>(classification).await?;
    s.hook::<RewriteApproval>(classification).await?;
    let output = match tool {
        Some(tool) => {
            // A closed semaphore only happens at teardown; the tool then runs unbounded once.
            let _permit = s.rig.tool_runs.acquire().await.ok();
            let cx = ToolContext {
                session_id: s.info.session_id.clone(),
                approval_mode: s.info.approval_mode,
                ..s.rig.tool_context.clone()
            };
            tool.run(&cx, call.arguments.clone()).await
        }
        None => crate::tools::ToolOutput::failure("no such tool"),
    };
    let result = ToolResult {
        call_id: call.call_id,
        name: call.name,
        text: output.text,
        images: output.images,
        success: output.success,
        approval: ApprovalState::Granted,
    };
    s.hook_with::<OnToolResult>(ToolResultContext::default(), result)
        .await?;
    Ok(())
}

/// Both compaction phases: `on_compaction` appends, `rewrite_compaction` replaces.
async fn compaction(s: &mut Collector<'_>) -> Result<(), PipelineError> {
    for (phase, text) in [
        (
            CompactionPhase::Prompt,
            "Summarise the conversation so far.",
        ),
        (CompactionPhase::Summary, "The user asked for a word count."),
    ] {
        let compaction = s.hook::<OnCompaction>(Compaction::new(phase, text)).await?;
        s.hook::<RewriteCompaction>(compaction.composed()).await?;
    }
    Ok(())
}

/// One queued event (`message:received`, SPEC G3.1) and one awaited event (`command:stop`,
/// delivered to the demo's `gateway-audit` through its `command` family subscription).
async fn gateway_events(s: &mut Collector<'_>) {
    let bus = s.rig.pipeline.events();
    // A full queue drops the event and counts it; the drop note is collected at the end.
    bus.enqueue(Event::MessageReceived(MessageReceivedContext {
        from: "soak".into(),
        content: "hello".into(),
        channel_id: "soak".into(),
        ..MessageReceivedContext::default()
    }));
    let stop = Event::CommandStop(CommandStopContext {
        session_id: Some(s.info.session_id.to_string()),
        ..CommandStopContext::default()
    });
    if let Ok(delivery) = bus.dispatch(stop).await {
        s.run.notes.extend(delivery.notes);
    }
}
