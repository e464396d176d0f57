//! The turn, in the order `docs/turn.md` writes down (that order is the contract):
//!
//! user message -> `on_user_message` (not for side questions) -> store (durable) ->
//! `on_turn_started` ->
//! compose the mode's system text (`on_prompt` appends, then `rewrite_prompt`) -> build the
//! request from the stored records -> `rebuild_model` -> `transform_model` -> provider call ->
//! `on_model_response` (read-only; the host keeps the candidate it received) -> commit -> for
//! each tool call: `on_tool_call` -> classify -> `on_approval` -> `rewrite_approval` -> policy
//! (may ask the operator) -> run the tool -> `on_tool_result` -> store -> next model call ... ->
//! `turn-finished` stored (durable) -> `on_turn_finished` with the stop reason.

mod compaction;
mod cut_off;
mod digest;
pub(crate) use digest::RequestDigests;
mod hooks;
mod model_call;
mod prompt;
mod request;
mod tool_call;

use std::sync::Arc;

use tracing::Instrument;

use hookline_actors::Pipeline;
use hookline_messages::hook::{HookKind, OnTurnFinished, OnTurnStarted, OnUserMessage};
use hookline_messages::model::{
    ItemBody, MediaType, ModelRequest, ModelResponse, Purpose, UsageTotals,
};
use hookline_messages::note::SessionEnding;
use hookline_messages::prompt::PromptMode;
use hookline_messages::record::{ArchiveEntry, Record};
use hookline_messages::user::{StopReason, TurnInfo, UserMessage};

use crate::approval::Operator;
use crate::provider::{Provider, ProviderError};
use crate::state::{EventLog, HostError, HostEvent, SessionState};
use crate::tools::ToolRegistry;

pub(crate) use compaction::compact;
pub use model_call::{request_changes, request_digest};
// The guards are set once per gateway (crate::shared); their hooks keep their path here.
use crate::shared::Guards;
pub use crate::shared::GUARD_HOOKS;

/// The default bound on model calls in one turn.
pub const DEFAULT_MAX_MODEL_CALLS: usize = 16;

/// What a turn needs besides its session: the hooks, the tools, the model, the operator, and
/// where to report.
pub(crate) struct Engine {
    pub(crate) pipeline: Pipeline,
    pub(crate) tools: Arc<ToolRegistry>,
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) operator: Arc<dyn Operator>,
    pub(crate) max_model_calls: usize,
    /// Each step of a turn is stored before the next (issue 22).
    pub(crate) durable_steps: bool,
    pub(crate) events: EventLog,
    /// Fail-closed guard hooks (operator opt-in).
    pub(crate) guards: Guards,
    /// Raised by `/stop` from outside the turn: the model call in flight ends as stopped.
    pub(crate) stop: Arc<StopSignal>,
    /// Where `hookline replay` listens for each request a turn built and sent (`None` outside
    /// a replay).
    pub(crate) tap: Option<RequestTap>,
    /// The digest of each request's stable prefix, so a call hashes only what is new.
    pub(crate) digests: digest::RequestDigests,
    /// Usage of the answers kept since the gateway last took it: what one request (a turn, a
    /// `/compact`) reports, whichever session was active (issue 34).
    pub(crate) usage: UsageTotals,
    /// The gateway's clock: when an approval was asked is stored (issue 40 item 3).
    pub(crate) clock: Arc<dyn crate::shared::Clock>,
}

/// What `hookline replay` listens for in a turn (issue 25): each stored-path model request, and
/// each change a hook made, in order.
pub(crate) type RequestTap = Arc<std::sync::Mutex<Tapped>>;

/// What a [`RequestTap`] collected.
#[derive(Debug, Default)]
pub(crate) struct Tapped {
    /// The requests, as the archive's `model-request` entries follow them.
    pub(crate) requests: Vec<TappedRequest>,
    /// The changes hooks made (a replay reports no `hook-changed` events: nobody reads them).
    pub(crate) changes: Vec<TappedChange>,
}

/// One value a hook changed, as a replay blames a difference on it.
#[derive(Debug)]
pub(crate) struct TappedChange {
    /// The hook.
    pub(crate) hook: hookline_messages::hook::HookKind,
    /// The plugins that changed the value, in load order.
    pub(crate) by: Vec<String>,
    /// The value handed on, as JSON; `None` for a model request (a request's difference is
    /// blamed on its hooks, never looked up by value, and writing it out would cost the
    /// conversation's length at every call).
    pub(crate) after: Option<serde_json::Value>,
}

/// One request a turn sent, as [`RequestTap`] keeps it.
#[derive(Debug)]
pub(crate) struct TappedRequest {
    /// As built from the stored records; `None` when that is the request sent.
    pub(crate) built: Option<ModelRequest>,
    /// As sent (after the hooks, prepared for the provider).
    pub(crate) sent: ModelRequest,
    /// The SHA-256 of `sent`, as archived.
    pub(crate) sha256: String,
}

/// A stop request for the turn in flight (`/stop` typed while a turn runs, or a drain whose
/// budget ran out). The model call in flight returns [`ProviderError::Stopped`] and the turn ends
/// [`StopReason::Cancelled`]; whoever starts the next turn clears it first
/// ([`crate::session::Conversation::user_turn`], or the gateway before it says a turn runs).
///
/// It also says when the session is about to end under the turn ([`StopSignal::end_session`]):
/// the turn runs on, but an approval it waits for (or comes to) will never be answered, so that
/// wait ends at once, denied, and stops the turn (issue 34 item 2).
#[derive(Debug, Default)]
pub struct StopSignal {
    raised: std::sync::atomic::AtomicBool,
    /// What ends the session, once that is known.
    ending: std::sync::Mutex<Option<SessionEnding>>,
    notify: tokio::sync::Notify,
}

impl StopSignal {
    /// Asks the turn in flight to stop.
    pub fn raise(&self) {
        self.raised
            .store(true, std::sync::atomic::Ordering::Release);
        self.notify.notify_waiters();
    }

    /// Says the session ends once the turn in flight does (closed, replaced, drained): nobody
    /// will answer its approvals.
    pub fn end_session(&self, by: SessionEnding) {
        *self.ending_slot() = Some(by);
        self.notify.notify_waiters();
    }

    /// Whether a stop was asked for since the last [`StopSignal::clear`].
    pub fn is_raised(&self) -> bool {
        self.raised.load(std::sync::atomic::Ordering::Acquire)
    }

    /// What ends the session, when [`StopSignal::end_session`] said so since the last clear.
    pub fn ending(&self) -> Option<SessionEnding> {
        *self.ending_slot()
    }

    pub(crate) fn clear(&self) {
        *self.ending_slot() = None;
        self.raised
            .store(false, std::sync::atomic::Ordering::Release);
    }

    /// Resolves once a stop is asked for (at once when one already was).
    pub(crate) async fn raised(&self) {
        self.until(Self::is_raised).await;
    }

    /// Resolves once a stop is asked for or the session is said to end: what an operator's
    /// wait ends on.
    pub(crate) async fn raised_or_ending(&self) {
        self.until(|signal| signal.is_raised() || signal.ending().is_some())
            .await;
    }

    async fn until(&self, done: impl Fn(&Self) -> bool) {
        loop {
            let notified = self.notify.notified();
            if done(self) {
                return;
            }
            notified.await;
        }
    }

    fn ending_slot(&self) -> std::sync::MutexGuard<'_, Option<SessionEnding>> {
        self.ending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Engine {
    /// A conversation's engine over the gateway's shared services.
    pub(crate) fn new(shared: &crate::shared::Shared) -> Self {
        Self {
            pipeline: shared.pipeline.clone(),
            tools: shared.tools.clone(),
            provider: shared.provider.clone(),
            operator: shared.operator.clone(),
            max_model_calls: shared.max_model_calls,
            durable_steps: shared.durable_steps,
            events: EventLog::default(),
            guards: shared.guards.clone(),
            stop: Arc::new(StopSignal::default()),
            tap: None,
            digests: digest::RequestDigests::default(),
            usage: UsageTotals::default(),
            clock: shared.settings.clock.clone(),
        }
    }
}

/// One piece of work on one session.
pub(crate) struct Turn<'a> {
    pub(crate) engine: &'a mut Engine,
    pub(crate) session: &'a mut SessionState,
}

/// A user turn's input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserInput {
    /// The text the operator typed.
    pub text: String,
    /// Images attached to it, by media type.
    pub images: Vec<MediaType>,
    /// Work or plan.
    pub mode: PromptMode,
}

impl UserInput {
    /// A work-mode message without images.
    pub fn work(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            images: Vec::new(),
            mode: PromptMode::Work,
        }
    }
}

impl Turn<'_> {
    /// Runs one user turn and returns why it stopped, under a `turn` span (a child of the
    /// caller's; docs/observability.md).
    pub(crate) async fn user_turn(&mut self, input: UserInput) -> Result<StopReason, HostError> {
        let span = tracing::info_span!(
            "turn",
            session = %self.session.info.session_id,
            mode = wire_name(&input.mode),
            stop_reason = tracing::field::Empty,
        );
        let result = self.turn_steps(input).instrument(span.clone()).await;
        if let (false, Ok(stop_reason)) = (span.is_disabled(), &result) {
            span.record("stop_reason", wire_name(stop_reason));
        }
        result
    }

    /// The turn's steps, in the order of `docs/turn.md`.
    async fn turn_steps(&mut self, input: UserInput) -> Result<StopReason, HostError> {
        let typed = UserMessage::new(input.text.clone());
        let stored = self.hook::<OnUserMessage>(typed).await?.text;
        let images = self.session.attach(&input.images);
        self.session.store(&[Record::User {
            text: stored.clone(),
            images: images.clone(),
        }])?;
        let original = (stored != input.text).then_some(input.text);
        self.archive(ArchiveEntry::UserMessage {
            text: stored.clone(),
            original: original.clone(),
            images,
        })?;
        self.engine.events.push(HostEvent::User {
            session: self.session.info.session_id.clone(),
            text: stored.clone(),
            original,
            turn: self.session.user_turns(),
        });
        let info = TurnInfo {
            user_text: stored,
            mode: input.mode,
            stop_reason: None,
        };
        // The hook reads the stored user text (SPEC P2.4): it is durable first, so a plugin
        // never acts on a turn a crash then loses (issue 34 item 1).
        self.durable_step_before(HookKind::OnTurnStarted).await?;
        self.hook::<OnTurnStarted>(info.clone()).await?;
        self.compose_turn_prompt(input.mode).await?;
        let stop_reason = self.model_loop(input.mode, 0).await?;
        self.finish(info, stop_reason).await?;
        Ok(stop_reason)
    }

    /// Ends the turn: `turn-finished` is stored with the answer before `on_turn_finished` reads
    /// them (SPEC P2.4; issue 34 item 1), then the hook runs and the turn is reported finished.
    /// The hook's notes follow `turn-finished` in the archive.
    pub(crate) async fn finish(
        &mut self,
        info: TurnInfo,
        stop_reason: StopReason,
    ) -> Result<(), HostError> {
        self.archive(ArchiveEntry::TurnFinished { stop_reason })?;
        self.durable_step_before(HookKind::OnTurnFinished).await?;
        self.hook::<OnTurnFinished>(TurnInfo {
            stop_reason: Some(stop_reason),
            ..info
        })
        .await?;
        self.engine
            .events
            .push(HostEvent::TurnFinished { stop_reason });
        Ok(())
    }

    /// Model calls and their tool calls until the model stops asking for tools, or the turn's
    /// budget of model calls is spent; `made` of it were spent already (a continued turn).
    async fn model_loop(&mut self, mode: PromptMode, made: usize) -> Result<StopReason, HostError> {
        let purpose = purpose_of(mode);
        for _ in made..self.engine.max_model_calls {
            // Durable step: the user message, the composed system text and every tool result
            // so far are stored before the model is called (issue 22). When no hook runs
            // between this step and the call (no plugin implements `rebuild_model` or
            // `transform_model`), the append is written beside the call (issue 47): the answer
            // is used (a hook reads it, a record stores it) only once the append is durable.
            let step = if self.engine.durable_steps && !self.request_hooks() {
                Some(self.session.take_step())
            } else {
                self.durable_step().await?;
                None
            };
            let request = self.request(purpose, None);
            let accepts_images = request.accepts_images;
            let response = match self.model_call_after(request, step).await? {
                Ok(response) => response,
                Err(ProviderError::Stopped) => return Ok(StopReason::Cancelled),
                Err(_) => return Ok(StopReason::Failed),
            };
            let calls = self.commit(&response)?;
            if calls.is_empty() {
                return Ok(StopReason::Completed);
            }
            for call in calls {
                self.tool_call(call, accepts_images).await?;
            }
        }
        Ok(StopReason::LimitReached)
    }

    /// Stores and archives the candidate the provider returned (SPEC P3.7) and returns its tool
    /// calls.
    fn commit(&mut self, response: &ModelResponse) -> Result<Vec<Record>, HostError> {
        let mut records = Vec::new();
        for item in &response.items {
            let record = match &item.body {
                ItemBody::Assistant { text, .. } => {
                    self.engine
                        .events
                        .push(HostEvent::Assistant { text: text.clone() });
                    Record::Assistant { text: text.clone() }
                }
                ItemBody::Reasoning { text, .. } => Record::Reasoning { text: text.clone() },
                ItemBody::ToolCall {
                    call_id,
                    name,
                    arguments,
                } => Record::ToolCall {
                    call_id: call_id.clone(),
                    name: name.clone(),
                    arguments: arguments.clone(),
                },
                // A provider does not answer with system, user or tool-result items; ignore them.
                _ => continue,
            };
            records.push(record);
        }
        self.session.store(&records)?;
        self.archive_response(response)?;
        Ok(records
            .into_iter()
            .filter(|r| matches!(r, Record::ToolCall { .. }))
            .collect())
    }

    /// A side question: answered with a side call over the stored records, stored nowhere
    /// (SPEC P2.3: `on_user_message` does not run for it). The answer is archived, so its
    /// usage counts in the session's (issue 34).
    pub(crate) async fn side_question(
        &mut self,
        question: String,
    ) -> Result<Option<String>, HostError> {
        // Issue 34: archived (never stored as a record) so `hookline replay` asks it again.
        self.archive(ArchiveEntry::SideQuestion {
            question: question.clone(),
        })?;
        let request = self.request(Purpose::Side, Some(question.clone()));
        let answer = match self.model_call(request).await? {
            Ok(response) => {
                self.archive_response(&response)?;
                assistant_text(&response)
            }
            Err(_) => return Ok(None),
        };
        self.engine.events.push(HostEvent::Side {
            question,
            answer: answer.clone(),
        });
        Ok(Some(answer))
    }

    /// A durable step before `hook` tells plugins what is stored (issue 34 item 1); none when
    /// no plugin implements it, since nobody is told anything (the next step stores it all).
    async fn durable_step_before(&mut self, hook: HookKind) -> Result<(), HostError> {
        if self.engine.pipeline.implements(hook) {
            self.durable_step().await?;
        }
        Ok(())
    }

    /// Whether a plugin implements a hook that reads a model request before it is sent.
    fn request_hooks(&self) -> bool {
        let pipeline = &self.engine.pipeline;
        pipeline.implements(HookKind::RebuildModel) || pipeline.implements(HookKind::TransformModel)
    }

    /// Stores what the turn has done so far in one atomic append, before the step that could
    /// have an effect (issue 22; `docs/turn.md`, "Storage: durable steps").
    async fn durable_step(&mut self) -> Result<(), HostError> {
        if self.engine.durable_steps {
            self.session.flush().await?;
        }
        Ok(())
    }

    fn archive(&mut self, entry: ArchiveEntry) -> Result<(), HostError> {
        self.session.archive(&entry)
    }
}

/// The purpose of a turn's model calls in `mode`.
fn purpose_of(mode: PromptMode) -> Purpose {
    if mode == PromptMode::Plan {
        Purpose::Plan
    } else {
        Purpose::Work
    }
}

/// A unit enum's name on the wire (`completed`, `plan`, `allow`), for span attributes.
pub(crate) fn wire_name<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => String::new(),
    }
}

/// The assistant text of a response, its items joined by blank lines.
pub(crate) fn assistant_text(response: &ModelResponse) -> String {
    let texts: Vec<&str> = response
        .items
        .iter()
        .filter_map(|item| match &item.body {
            ItemBody::Assistant { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n\n")
}
