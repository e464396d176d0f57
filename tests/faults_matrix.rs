//! The in-process fault matrix: every fault kind x every hook and raw hook x the faulty plugin
//! first, middle and last in load order, driven through a whole [`Host`] session (SPEC P1.4,
//! P1.5, R0.3).
//!
//! For each case the host survives every step of the session, records exactly one skip note
//! (whose exact text is checked) however often the hook runs, calls the other plugins in load
//! order on every call, completes the session, and stores exactly the records and archive entries
//! of the same session without the fault.
//!
//! Fault kinds: an error, a panic, a hang past the timeout (on a paused clock) and, for every
//! hook that has a rule, a replacement that rule refuses. The read-only hooks (session start and
//! end, turn start and end, model response) and `rewrite_approval` refuse nothing (SPEC P2.1,
//! P2.4, P2.6, R4), so they have no refusal case.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod host_support;

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use hookline::actors::plugin::{
    HookError, HookResult, Plugin, PluginRegistration, RawHooks, Reply,
};
use hookline::host::turn::UserInput;
use hookline::host::SessionCommand;
use hookline::messages::approval::Classification;
use hookline::messages::compaction::{Compaction, CompactionPhase, CompactionText};
use hookline::messages::hook::{HookContext, HookKind, HookSet};
use hookline::messages::model::{ModelRequest, ModelResponse};
use hookline::messages::note::Note;
use hookline::messages::prompt::{Prompt, PromptMode, SystemText};
use hookline::messages::record::{ArchiveEntry, Record};
use hookline::messages::session::{ApprovalMode, SessionInfo};
use hookline::messages::tool::{ToolCall, ToolResult};
use hookline::messages::user::{StopReason, TurnInfo, UserMessage};
use host_support::{call, rig, seen, text, Seen};
use serde_json::json;

/// The hook timeout of the matrix's plugins; a hang is cut after it on the paused clock.
const TIMEOUT: Duration = Duration::from_millis(250);

const NAMES: [&str; 3] = ["first", "middle", "last"];

/// How the faulty plugin misbehaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    Error,
    Panic,
    Hang,
    Refuse,
}

/// A plugin implementing exactly hook `kind`: it logs its name on every call, then keeps the
/// value or commits its fault.
struct Probe {
    name: &'static str,
    kind: HookKind,
    fault: Option<Fault>,
    log: Seen,
}

impl Probe {
    async fn act<T: Send + 'static>(&self, value: T) -> HookResult<Reply<T>> {
        self.log.lock().unwrap().push(self.name.to_owned());
        match self.fault {
            None => Ok(Reply::Keep),
            Some(Fault::Error) => Err(HookError::msg("the plugin failed on purpose.")),
            Some(Fault::Panic) => panic!("the plugin panics on purpose"),
            Some(Fault::Hang) => std::future::pending().await,
            Some(Fault::Refuse) => Ok(Reply::Replace(refused(self.kind, value))),
        }
    }

    async fn read_only<T: Send + 'static>(&self, value: T) -> HookResult<()> {
        self.act(value).await.map(drop)
    }
}

/// A replacement that the rule of `kind` refuses, the same refusal on every call of the hook.
fn refused<T: 'static>(kind: HookKind, value: T) -> T {
    let mut boxed: Box<dyn Any> = Box::new(value);
    let any = boxed.as_mut();
    if let Some(p) = any.downcast_mut::<Prompt>() {
        p.mode = other_mode(p.mode);
    } else if let Some(t) = any.downcast_mut::<SystemText>() {
        t.mode = other_mode(t.mode);
    } else if let Some(m) = any.downcast_mut::<UserMessage>() {
        m.text = "  ".into();
    } else if let Some(r) = any.downcast_mut::<ModelRequest>() {
        // transform_model may not add an item; rebuild_model may not repeat an id.
        let copy = r.items[0].clone();
        r.items.push(copy);
    } else if let Some(c) = any.downcast_mut::<ToolCall>() {
        c.call_id.push_str("-changed");
    } else if let Some(r) = any.downcast_mut::<ToolResult>() {
        r.call_id.push_str("-changed");
    } else if let Some(c) = any.downcast_mut::<Classification>() {
        c.summary.push_str(" (changed)");
    } else if let Some(c) = any.downcast_mut::<Compaction>() {
        c.text = "replaced".into();
    } else if let Some(t) = any.downcast_mut::<CompactionText>() {
        t.phase = match t.phase {
            CompactionPhase::Prompt => CompactionPhase::Summary,
            CompactionPhase::Summary => CompactionPhase::Prompt,
        };
    } else {
        panic!("no refused replacement for {kind}");
    }
    *boxed.downcast::<T>().expect("the same type")
}

fn other_mode(mode: PromptMode) -> PromptMode {
    if mode == PromptMode::Plan {
        PromptMode::Work
    } else {
        PromptMode::Plan
    }
}

#[async_trait]
impl Plugin for Probe {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[self.kind])
    }
    async fn on_session_started(&self, _: &HookContext, v: SessionInfo) -> HookResult<()> {
        self.read_only(v).await
    }
    async fn on_session_ended(&self, _: &HookContext, v: SessionInfo) -> HookResult<()> {
        self.read_only(v).await
    }
    async fn on_prompt(&self, _: &HookContext, v: Prompt) -> HookResult<Reply<Prompt>> {
        self.act(v).await
    }
    async fn on_user_message(
        &self,
        _: &HookContext,
        v: UserMessage,
    ) -> HookResult<Reply<UserMessage>> {
        self.act(v).await
    }
    async fn on_turn_started(&self, _: &HookContext, v: TurnInfo) -> HookResult<()> {
        self.read_only(v).await
    }
    async fn on_turn_finished(&self, _: &HookContext, v: TurnInfo) -> HookResult<()> {
        self.read_only(v).await
    }
    async fn transform_model(
        &self,
        _: &HookContext,
        v: ModelRequest,
    ) -> HookResult<Reply<ModelRequest>> {
        self.act(v).await
    }
    async fn on_model_response(&self, _: &HookContext, v: ModelResponse) -> HookResult<()> {
        self.read_only(v).await
    }
    async fn on_tool_call(&self, _: &HookContext, v: ToolCall) -> HookResult<Reply<ToolCall>> {
        self.act(v).await
    }
    async fn on_tool_result(
        &self,
        _: &HookContext,
        v: ToolResult,
    ) -> HookResult<Reply<ToolResult>> {
        self.act(v).await
    }
    async fn on_approval(
        &self,
        _: &HookContext,
        v: Classification,
    ) -> HookResult<Reply<Classification>> {
        self.act(v).await
    }
    async fn on_compaction(&self, _: &HookContext, v: Compaction) -> HookResult<Reply<Compaction>> {
        self.act(v).await
    }
}

#[async_trait]
impl RawHooks for Probe {
    fn raw_hooks(&self) -> HookSet {
        HookSet::of(&[self.kind])
    }
    async fn rebuild_model(
        &self,
        _: &HookContext,
        v: ModelRequest,
    ) -> HookResult<Reply<ModelRequest>> {
        self.act(v).await
    }
    async fn rewrite_prompt(
        &self,
        _: &HookContext,
        v: SystemText,
    ) -> HookResult<Reply<SystemText>> {
        self.act(v).await
    }
    async fn rewrite_compaction(
        &self,
        _: &HookContext,
        v: CompactionText,
    ) -> HookResult<Reply<CompactionText>> {
        self.act(v).await
    }
    async fn rewrite_approval(
        &self,
        _: &HookContext,
        v: Classification,
    ) -> HookResult<Reply<Classification>> {
        self.act(v).await
    }
}

/// What one session left behind.
#[derive(Debug, PartialEq)]
struct Run {
    records: Vec<Record>,
    /// The archive without its notes, as JSON with the temporary workspace path blanked.
    archive: Vec<String>,
    /// The notes other than skip notes (e.g. raw hook registrations).
    other_notes: Vec<String>,
    /// The skip notes.
    skips: Vec<String>,
    /// Which plugin was called, in call order.
    calls: Vec<String>,
}

fn registrations(
    kind: HookKind,
    faulty: Option<(usize, Fault)>,
    log: &Seen,
) -> Vec<PluginRegistration> {
    NAMES
        .iter()
        .enumerate()
        .map(|(index, name)| {
            let probe = Arc::new(Probe {
                name,
                kind,
                fault: faulty
                    .filter(|(at, _)| *at == index)
                    .map(|(_, fault)| fault),
                log: log.clone(),
            });
            let registration = PluginRegistration::new(*name).with_timeout(kind, TIMEOUT);
            if kind.is_raw() {
                registration.with_raw_hooks(probe)
            } else {
                registration.with_hooks(probe)
            }
        })
        .collect()
}

/// Runs a whole session (open, two turns with a tool call each, compaction, close) in which
/// hook `kind` is implemented by three plugins, one of them faulty.
fn session(kind: HookKind, faulty: Option<(usize, Fault)>) -> Run {
    run_paused(async move {
        let log = Seen::default();
        let mut rig = rig(
            registrations(kind, faulty, &log),
            false,
            ApprovalMode::AskAboveRead,
        );
        rig.host.open().await.unwrap();
        rig.replies(vec![
            call("c1", "read_file", json!({"path": "notes.txt"})),
            text("first answer"),
            call("c2", "read_file", json!({"path": "notes.txt"})),
            text("second answer"),
            text("the summary"),
        ]);
        for question in ["one", "two"] {
            let stop = rig.host.user_turn(UserInput::work(question)).await.unwrap();
            assert_eq!(stop, StopReason::Completed);
        }
        rig.host.command(SessionCommand::Compact).await.unwrap();
        rig.host.close().await.unwrap();
        let (mut skips, mut other_notes) = (Vec::new(), Vec::new());
        for note in rig.notes("s1") {
            match note {
                Note::Skipped(_) => skips.push(note.to_string()),
                other => other_notes.push(other.to_string()),
            }
        }
        let workspace = rig.workspace().display().to_string();
        Run {
            records: rig.records("s1"),
            archive: rig
                .archive("s1")
                .into_iter()
                .filter(|e| !matches!(e, ArchiveEntry::Note { .. }))
                .map(|e| {
                    serde_json::to_string(&e)
                        .unwrap()
                        .replace(&workspace, "<ws>")
                })
                .collect(),
            other_notes,
            skips,
            calls: seen(&log),
        }
    })
}

fn run_paused<F: std::future::Future>(test: F) -> F::Output {
    actix::System::with_tokio_rt(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap()
    })
    .block_on(test)
}

/// Checks one fault of hook `kind` in every load position against the fault-free session.
/// `head` is the note's start (`Plugin hook '{}' tool-call`), `why` its reason.
fn check(kind: HookKind, fault: Fault, head: &str, why: &str) {
    let clean = session(kind, None);
    assert!(clean.skips.is_empty(), "{:?}", clean.skips);
    let rounds = clean.calls.len() / NAMES.len();
    assert!(rounds >= 1, "{kind} never ran in the session");
    for (position, name) in NAMES.iter().enumerate() {
        let run = session(kind, Some((position, fault)));
        let note = format!("{} was skipped: {why}", head.replace("{}", name));
        assert_eq!(run.skips, [note], "{kind} {fault:?} at {name}");
        // Every call still visited every plugin, in load order.
        assert_eq!(run.calls, clean.calls, "{kind} {fault:?} at {name}");
        assert_eq!(run.records, clean.records, "{kind} {fault:?} at {name}");
        assert_eq!(run.archive, clean.archive, "{kind} {fault:?} at {name}");
        assert_eq!(run.other_notes, clean.other_notes);
    }
    let expected: Vec<String> = (0..rounds)
        .flat_map(|_| NAMES.iter().map(ToString::to_string))
        .collect();
    assert_eq!(clean.calls, expected);
}

const FAILED: &str = "the plugin failed on purpose.";
const PANICKED: &str = "it panicked.";
const TIMED_OUT: &str = "it timed out after 250 ms.";

macro_rules! matrix {
    ($( $module:ident: $kind:ident, $head:literal $(, refused: $why:literal)?; )*) => {
        $(
            mod $module {
                use super::*;

                #[test]
                fn an_error_is_skipped_with_one_note_in_every_position() {
                    check(HookKind::$kind, Fault::Error, $head, FAILED);
                }

                #[test]
                fn a_panic_is_skipped_with_one_note_in_every_position() {
                    check(HookKind::$kind, Fault::Panic, $head, PANICKED);
                }

                #[test]
                fn a_hang_is_cut_at_the_timeout_with_one_note_in_every_position() {
                    check(HookKind::$kind, Fault::Hang, $head, TIMED_OUT);
                }

                $(
                    #[test]
                    fn a_refused_replacement_is_skipped_with_one_note_in_every_position() {
                        check(HookKind::$kind, Fault::Refuse, $head, $why);
                    }
                )?
            }
        )*
    };
}

matrix! {
    on_session_started: OnSessionStarted, "Plugin hook '{}' session-start";
    on_session_ended: OnSessionEnded, "Plugin hook '{}' session-end";
    on_prompt: OnPrompt, "Plugin hook '{}' prompt", refused: "it changed the prompt mode.";
    on_user_message: OnUserMessage, "Plugin hook '{}' user-message",
        refused: "it returned an empty message.";
    on_turn_started: OnTurnStarted, "Plugin hook '{}' turn-start";
    on_turn_finished: OnTurnFinished, "Plugin hook '{}' turn-end";
    transform_model: TransformModel, "Plugin hook '{}' model-request",
        refused: "it added an item.";
    on_model_response: OnModelResponse, "Plugin hook '{}' model-response";
    on_tool_call: OnToolCall, "Plugin hook '{}' tool-call",
        refused: "it returned a different call id.";
    on_tool_result: OnToolResult, "Plugin hook '{}' tool-result",
        refused: "it changed a tool result's call id.";
    on_approval: OnApproval, "Plugin hook '{}' approval", refused: "it changed the summary.";
    on_compaction: OnCompaction, "Plugin hook '{}' compaction",
        refused: "it replaced the compaction text.";
    rebuild_model: RebuildModel, "Raw hook '{}' model-items", refused: "it repeated an item.";
    rewrite_prompt: RewritePrompt, "Raw hook '{}' prompt", refused: "it changed the prompt mode.";
    rewrite_compaction: RewriteCompaction, "Raw hook '{}' compaction",
        refused: "it changed the compaction phase.";
    rewrite_approval: RewriteApproval, "Raw hook '{}' approval";
}
