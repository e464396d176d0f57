//! One tool call, the same for built-in, plugin and external tools (SPEC P1.3): `on_tool_call`,
//! classify, `on_approval`, `rewrite_approval`, the policy (which may ask the operator), the tool,
//! `on_tool_result`, store.
//!
//! A failing `on_tool_call` or `on_approval` hook of a plugin the operator marked fail-closed
//! denies the call instead (a note and a `Guard` approval record say so); otherwise a failing
//! hook is skipped with a note (SPEC P1.4).

use hookline_messages::approval::Classification;
use std::sync::Arc;

use hookline_messages::hook::{
    HookKind, OnApproval, OnToolCall, OnToolResult, RewriteApproval, ToolResultContext,
};
use hookline_messages::note::Note;
use hookline_messages::policy::{verdict, Verdict};
use hookline_messages::record::{ApprovalRecord, ArchiveEntry, Decider, Decision, Record};
use hookline_messages::tool::{ApprovalState, ToolCall, ToolProvider, ToolResult};

use super::Turn;
use crate::approval::classify;
use crate::state::{HostError, HostEvent};
use crate::tools::{ToolContext, ToolOutput};
use tracing::Instrument;

/// The text a refused call's result carries.
pub(crate) const REFUSED_TEXT: &str = "The call was refused; it did not run.";

/// The text an allowed call's result carries when `/stop` came before it ran (an earlier call of
/// the same model answer was running): it never runs, and still gets its result, so the
/// transcript keeps every call followed by its result.
pub(crate) const STOPPED_TEXT: &str = "The turn was stopped before this call ran; it did not run.";

impl Turn<'_> {
    /// Runs one stored tool call record through the hooks, the policy and the tool.
    pub(crate) async fn tool_call(
        &mut self,
        record: Record,
        images_allowed: bool,
    ) -> Result<(), HostError> {
        let span = match &record {
            Record::ToolCall { call_id, name, .. } => tracing::info_span!(
                "tool call",
                tool = name.as_str(),
                call_id = call_id.as_str(),
                decision = tracing::field::Empty,
            ),
            _ => return Ok(()),
        };
        self.tool_call_steps(record, images_allowed)
            .instrument(span)
            .await
    }

    /// The tool call's steps, in the order of the module's docs.
    async fn tool_call_steps(
        &mut self,
        record: Record,
        images_allowed: bool,
    ) -> Result<(), HostError> {
        let Record::ToolCall {
            call_id,
            name,
            arguments,
        } = record
        else {
            return Ok(());
        };
        let asked = ToolCall {
            provider: self.provider_of(&name),
            call_id,
            name,
            arguments,
        };
        let outcome = self.hook_with::<OnToolCall>((), asked.clone()).await?;
        let guard = self
            .engine
            .guards
            .tripped(HookKind::OnToolCall, &outcome.failed);
        let mut call = outcome.value;
        // SPEC P3.1: the call that runs is classified and approved as rewritten; its provider is
        // resolved again from its (possibly new) name.
        call.provider = self.provider_of(&call.name);
        let rewritten_from = (call != asked).then_some(asked);
        self.session.archive(&ArchiveEntry::ToolCall {
            call: call.clone(),
            rewritten_from: rewritten_from.clone(),
        })?;
        self.engine.events.push(HostEvent::ToolCall {
            call: call.clone(),
            rewritten_from,
        });
        let decision = match guard {
            Some(plugin) => {
                let tool = self.engine.tools.get(&call.name);
                let classification = classify(tool.as_ref().map(|t| t.spec()), &call);
                self.deny_closed(&call, classification, plugin, HookKind::OnToolCall)?
            }
            None => self.approve(&call).await?,
        };
        self.finish_call(&call, decision, images_allowed).await
    }

    /// A call's steps once it is decided: the tool (when allowed), `on_tool_result`, store.
    pub(crate) async fn finish_call(
        &mut self,
        call: &ToolCall,
        decision: Decision,
        images_allowed: bool,
    ) -> Result<(), HostError> {
        // Durable step: the call, as approved, is stored before the tool runs (issue 22).
        self.durable_step().await?;
        let result = self.run_tool(call, decision).await;
        let mut held = self.session.held_images();
        result
            .images
            .iter()
            .for_each(|i| held.insert(i.number, i.media_type));
        let context = ToolResultContext {
            images_allowed,
            held,
        };
        let answered = result.clone();
        let result = self.hook_with::<OnToolResult>(context, result).await?.value;
        if answered.approval == ApprovalState::Granted && answered != result {
            // Issue 25: replay answers the call with what the tool said, not what was stored.
            self.session.archive(&ArchiveEntry::ToolOutput {
                call_id: answered.call_id,
                text: answered.text,
                images: answered.images,
                success: answered.success,
            })?;
        }
        self.session.store(&[Record::ToolResult {
            call_id: result.call_id.clone(),
            name: result.name.clone(),
            text: result.text.clone(),
            images: result.images.clone(),
            success: result.success,
        }])?;
        self.session
            .archive(&ArchiveEntry::ToolResult(result.clone()))?;
        self.engine.events.push(HostEvent::ToolResult(result));
        Ok(())
    }

    fn provider_of(&self, name: &str) -> ToolProvider {
        self.engine
            .tools
            .get(name)
            .map_or(ToolProvider::BuiltIn, |tool| tool.spec().provider)
    }

    /// Classifies, runs the approval hooks, and lets the policy decide (SPEC P2.9, R4, R5.10).
    async fn approve(&mut self, call: &ToolCall) -> Result<Decision, HostError> {
        let tool = self.engine.tools.get(&call.name);
        let classification = classify(tool.as_ref().map(|t| t.spec()), call);
        let outcome = self.hook_with::<OnApproval>((), classification).await?;
        if let Some(plugin) = self
            .engine
            .guards
            .tripped(HookKind::OnApproval, &outcome.failed)
        {
            return self.deny_closed(call, outcome.value, plugin, HookKind::OnApproval);
        }
        let classification = self.hook::<RewriteApproval>(outcome.value).await?;
        let (decision, decided_by, answered_by) = self.decide(call, &classification).await?;
        self.record_approval(call, classification, (decision, decided_by), answered_by)
    }

    /// Denies `call` because `plugin`'s fail-closed `hook` failed: a note says so, and the
    /// approval record names the guard as the decider.
    fn deny_closed(
        &mut self,
        call: &ToolCall,
        classification: Classification,
        plugin: Arc<str>,
        hook: HookKind,
    ) -> Result<Decision, HostError> {
        self.note(Note::DeniedFailClosed {
            call_id: call.call_id.clone(),
            plugin: plugin.to_string(),
            hook,
        })?;
        self.record_approval(call, classification, (Decision::Deny, Decider::Guard), None)
    }

    /// Archives and reports one approval decision.
    pub(crate) fn record_approval(
        &mut self,
        call: &ToolCall,
        classification: Classification,
        (decision, decided_by): (Decision, Decider),
        answered_by: Option<String>,
    ) -> Result<Decision, HostError> {
        let record = ApprovalRecord {
            call_id: call.call_id.clone(),
            tool: call.name.clone(),
            classification,
            decision,
            decided_by,
            answered_by,
        };
        self.session
            .archive(&ArchiveEntry::Approval(record.clone()))?;
        self.engine.events.push(HostEvent::Approval(record));
        Ok(decision)
    }

    async fn decide(
        &mut self,
        call: &ToolCall,
        classification: &Classification,
    ) -> Result<(Decision, Decider, Option<String>), HostError> {
        match verdict(self.session.info.approval_mode, classification) {
            Verdict::Allow => Ok((Decision::Allow, Decider::Policy, None)),
            Verdict::Ask => {
                // Durable step: the call, and that the operator is asked, are stored before
                // the question, however long the answer takes (issue 22); a node that takes
                // the session over asks again (issue 40 item 3).
                let asked_ms = self.engine.clock.now_ms();
                self.session.archive(&ArchiveEntry::ApprovalAsked {
                    call: call.clone(),
                    classification: classification.clone(),
                    asked_ms,
                })?;
                self.durable_step().await?;
                let answer = (self.engine.operator)
                    .answer_asked(call, classification, asked_ms)
                    .await;
                if let Some(note) = answer.note {
                    self.note(note)?;
                }
                Ok((answer.decision, Decider::Operator, answer.answered_by))
            }
        }
    }

    /// Runs the tool if the call was allowed and the turn was not stopped; a refused call, or one
    /// after a `/stop`, never runs.
    async fn run_tool(&mut self, call: &ToolCall, decision: Decision) -> ToolResult {
        let refused = ToolResult {
            call_id: call.call_id.clone(),
            name: call.name.clone(),
            text: REFUSED_TEXT.into(),
            images: Vec::new(),
            success: false,
            approval: ApprovalState::Denied,
        };
        let current = tracing::Span::current();
        if !current.is_disabled() {
            current.record("decision", super::wire_name(&decision));
        }
        if decision == Decision::Deny {
            return refused;
        }
        if self.engine.stop.is_raised() {
            return ToolResult {
                text: STOPPED_TEXT.into(),
                ..refused
            };
        }
        let output = match self.engine.tools.get(&call.name) {
            Some(tool) => {
                let cx = ToolContext::of(&self.session.info);
                let span = tracing::info_span!(
                    "tool run",
                    tool = call.name.as_str(),
                    success = tracing::field::Empty,
                );
                let output = tool
                    .run(&cx, call.arguments.clone())
                    .instrument(span.clone())
                    .await;
                span.record("success", output.success);
                output
            }
            None => ToolOutput {
                text: format!("There is no tool named '{}'.", call.name),
                images: Vec::new(),
                success: false,
            },
        };
        self.engine.events.push(HostEvent::ToolRun {
            call_id: call.call_id.clone(),
            tool: call.name.clone(),
            arguments: call.arguments.clone(),
            success: output.success,
            text: output.text.clone(),
        });
        ToolResult {
            text: output.text,
            images: output.images,
            success: output.success,
            approval: ApprovalState::Granted,
            ..refused
        }
    }
}
