//! Issue 22 items 2 and 4 in-process: each step of a turn is durable before the next one can
//! have an effect, and a turn cut off by a crash is closed when its session is opened again.
//!
//! A "process" is an actix system with a host on the file store in a shared workspace. The
//! first one runs a turn until it hangs at one step (the operator never answers, the tool never
//! returns, the model never answers), then the whole system goes away without closing anything,
//! as a crash would leave it. The second one resumes the session and checks: the durable steps
//! are stored, the turn is closed with a made-up result for each open call, the marker and its
//! note, `on_turn_finished` ran with `interrupted`, and the next turn's request has every tool
//! call followed by its result and the new user message last, and the echo model answers it.
//! The crash itself (SIGKILL of `hookline serve`) is `tests/serve_crash.rs`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::pending;
use std::path::Path;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use hookline::actors::plugin::{HookResult, Plugin, PluginRegistration};
use hookline::host::approval::Operator;
use hookline::host::gateway::{Activity, GatewayLimits};
use hookline::host::provider::{EchoProvider, Provider, ProviderError};
use hookline::host::tools::{Tool, ToolContext, ToolOutput, ToolRegistry, ToolSpec};
use hookline::host::turn::UserInput;
use hookline::host::Host;
use hookline::host::HostEvent;
use hookline::messages::approval::{Authority, Classification, Risk};
use hookline::messages::cut_off::CutOff;
use hookline::messages::hook::{HookContext, HookKind, HookSet};
use hookline::messages::model::{FinishReason, Item, ItemBody, ModelRequest, ModelResponse, Usage};
use hookline::messages::note::Note;
use hookline::messages::record::{ArchiveEntry, Decision, Record};
use hookline::messages::session::{ApprovalMode, SessionId};
use hookline::messages::tool::{ToolCall, ToolProvider};
use hookline::messages::user::{StopReason, TurnInfo};
use tokio::sync::Notify;

/// Where the first process hangs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hang {
    Approval,
    Tool,
    Model,
    Nowhere,
}

/// What the hanging parts share: where to hang, a signal once reached, the requests sent.
#[derive(Clone)]
struct Rig {
    hang: Hang,
    reached: Arc<Notify>,
    sent: Arc<Mutex<Vec<ModelRequest>>>,
    finished: Arc<Mutex<Vec<StopReason>>>,
}

impl Rig {
    fn new(hang: Hang) -> Self {
        Self {
            hang,
            reached: Arc::new(Notify::new()),
            sent: Arc::default(),
            finished: Arc::default(),
        }
    }

    async fn stall(&self, here: Hang) {
        if self.hang == here {
            self.reached.notify_one();
            pending::<()>().await;
        }
    }
}

/// The echo model, recording what it is sent; it never answers when told to hang.
struct Model(Rig);

#[async_trait]
impl Provider for Model {
    fn takes_images(&self) -> bool {
        false
    }
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        self.0.sent.lock().unwrap().push(request.clone());
        self.0.stall(Hang::Model).await;
        EchoProvider::new().complete(request).await
    }
}

/// An operator who allows everything, or never answers.
struct Desk(Rig);

#[async_trait]
impl Operator for Desk {
    async fn decide(&self, _: &ToolCall, _: &Classification) -> Decision {
        self.0.stall(Hang::Approval).await;
        Decision::Allow
    }
}

/// A read-only tool the policy allows without asking; it never returns when told to hang.
struct Slow(Rig, ToolSpec);

#[async_trait]
impl Tool for Slow {
    fn spec(&self) -> &ToolSpec {
        &self.1
    }
    async fn run(&self, _: &ToolContext, _: serde_json::Value) -> ToolOutput {
        self.0.stall(Hang::Tool).await;
        ToolOutput::success("slow done")
    }
}

/// Records each turn's stop reason.
struct Watch(Rig);

#[async_trait]
impl Plugin for Watch {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[HookKind::OnTurnFinished])
    }
    async fn on_turn_finished(&self, _: &HookContext, turn: TurnInfo) -> HookResult<()> {
        if let Some(reason) = turn.stop_reason {
            self.0.finished.lock().unwrap().push(reason);
        }
        Ok(())
    }
}

fn host(ws: &Path, rig: &Rig) -> Host {
    let mut tools = ToolRegistry::with_builtins();
    let spec = ToolSpec {
        name: "slow".into(),
        description: "Takes its time.".into(),
        provider: ToolProvider::BuiltIn,
        risk: Risk::Read,
        authority: Authority::Workspace,
    };
    tools.register(Arc::new(Slow(rig.clone(), spec))).unwrap();
    Host::builder()
        .plugins(vec![
            PluginRegistration::new("watch").with_hooks(Arc::new(Watch(rig.clone())))
        ])
        .tools(tools)
        .provider(Arc::new(Model(rig.clone())))
        .operator(Arc::new(Desk(rig.clone())))
        .approval_mode(ApprovalMode::AskAboveRead)
        .workspace(ws)
        .start()
        .unwrap()
}

/// The first process: opens a session, runs `message` until it hangs at `hang`, and goes away.
fn crash_during(ws: &Path, hang: Hang, message: &str) -> SessionId {
    let rig = Rig::new(hang);
    actix::System::new().block_on(async {
        let mut host = host(ws, &rig);
        let id = host.open().await.unwrap();
        tokio::select! {
            answer = host.user_turn(UserInput::work(message)) => panic!("the turn ended: {answer:?}"),
            () = rig.reached.notified() => {}
        }
        id
        // The host, its writer and every actor are dropped here: nothing else is written.
    })
}

/// What the second process finds, and the next turn's request and answer.
struct After {
    records: Vec<Record>,
    archive: Vec<ArchiveEntry>,
    finished: Vec<StopReason>,
    next_request: ModelRequest,
    next_answer: String,
    /// Whether the resume reported a turn finished `interrupted`.
    interrupted: bool,
}

fn resume_and_turn(ws: &Path, id: &SessionId) -> After {
    let rig = Rig::new(Hang::Nowhere);
    actix::System::new().block_on(async {
        let mut host = host(ws, &rig);
        host.resume(id).await.unwrap();
        let events = host.take_events();
        let stored = host.store().session_dir(id).unwrap();
        let read = |name: &str| stored.join(name);
        let records = hookline::host::store::Log::<Record>::open(&read("records.log"))
            .unwrap()
            .1
            .records;
        let archive = hookline::host::store::Log::<ArchiveEntry>::open(&read("archive.log"))
            .unwrap()
            .1
            .records;
        let interrupted = events.iter().any(|e| {
            matches!(
                e,
                HostEvent::TurnFinished {
                    stop_reason: StopReason::Interrupted
                }
            )
        });
        assert_eq!(
            host.user_turn(UserInput::work("next")).await.unwrap(),
            StopReason::Completed
        );
        let answer = host
            .take_events()
            .into_iter()
            .find_map(|e| match e {
                HostEvent::Assistant { text } => Some(text),
                _ => None,
            })
            .unwrap();
        host.close().await.unwrap();
        let next_request = rig.sent.lock().unwrap().last().cloned().unwrap();
        let finished = rig.finished.lock().unwrap().clone();
        After {
            records,
            archive,
            finished,
            next_request,
            next_answer: answer,
            interrupted,
        }
    })
}

fn workspace() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    let ws = std::fs::canonicalize(ws).unwrap();
    (dir, ws)
}

/// The stored records without the system text.
fn conversation(records: &[Record]) -> Vec<Record> {
    records
        .iter()
        .filter(|r| !matches!(r, Record::System { .. }))
        .cloned()
        .collect()
}

fn user(text: &str) -> Record {
    Record::User {
        text: text.into(),
        images: Vec::new(),
    }
}

fn made_up(call_id: &str, name: &str, text: &str) -> Record {
    Record::ToolResult {
        call_id: call_id.into(),
        name: name.into(),
        text: text.into(),
        images: Vec::new(),
        success: false,
    }
}

fn notes(archive: &[ArchiveEntry]) -> Vec<Note> {
    archive
        .iter()
        .filter_map(|e| match e {
            ArchiveEntry::Note { note, .. } => Some(note.clone()),
            _ => None,
        })
        .collect()
}

/// Every tool call is followed by its result, and the new user message is last.
fn assert_well_formed(request: &ModelRequest, last: &str) {
    let mut open: Vec<&str> = Vec::new();
    for item in &request.items {
        match &item.body {
            ItemBody::ToolCall { call_id, .. } => open.push(call_id),
            ItemBody::ToolResult { call_id, .. } => {
                assert_eq!(open.pop(), Some(call_id.as_str()), "{request:#?}")
            }
            _ => assert!(open.is_empty(), "a call without its result: {request:#?}"),
        }
    }
    assert!(open.is_empty());
    assert!(
        matches!(&request.items.last().unwrap().body, ItemBody::User { text, .. } if text == last),
        "{request:#?}"
    );
}

fn assert_closed(after: &After, at: CutOff, expected: Vec<Record>) {
    let mut expected = expected;
    expected.push(Record::CutOff { at: at.clone() });
    let stored = conversation(&after.records);
    assert_eq!(stored, expected);
    assert!(notes(&after.archive).contains(&Note::TurnCutOff { at }));
    assert!(after.archive.contains(&ArchiveEntry::TurnFinished {
        stop_reason: StopReason::Interrupted
    }));
    assert!(after.interrupted, "the resume reports the turn finished");
    assert_eq!(
        after.finished,
        [StopReason::Interrupted, StopReason::Completed]
    );
    assert_well_formed(&after.next_request, "next");
    assert_eq!(after.next_answer, "echo: next");
}

const WRITE: &str = r#"call write_file {"path":"a.txt","content":"x"}"#;

#[test]
fn a_turn_cut_off_while_it_waited_for_approval_keeps_its_call_and_did_not_run_it() {
    let (_dir, ws) = workspace();
    let id = crash_during(&ws, Hang::Approval, WRITE);
    let after = resume_and_turn(&ws, &id);
    let call = Record::ToolCall {
        call_id: "call-2".into(),
        name: "write_file".into(),
        arguments: serde_json::json!({"path": "a.txt", "content": "x"}),
    };
    assert_closed(
        &after,
        CutOff::BeforeTool {
            call_id: "call-2".into(),
            name: "write_file".into(),
        },
        vec![
            user(WRITE),
            call,
            made_up(
                "call-2",
                "write_file",
                "The turn was cut off before this call ran; it did not run.",
            ),
        ],
    );
    assert!(!ws.join("a.txt").exists(), "the call never ran");
    assert_eq!(
        Note::TurnCutOff {
            at: CutOff::BeforeTool {
                call_id: "call-2".into(),
                name: "write_file".into()
            }
        }
        .text(),
        "The turn was cut off before tool call 'call-2' (write_file) ran; it did not run."
    );
}

#[test]
fn a_turn_cut_off_while_a_tool_ran_keeps_its_approval_and_says_the_result_was_not_stored() {
    let (_dir, ws) = workspace();
    let id = crash_during(&ws, Hang::Tool, "call slow {}");
    let after = resume_and_turn(&ws, &id);
    let at = CutOff::ToolStarted {
        call_id: "call-2".into(),
        name: "slow".into(),
    };
    assert_closed(
        &after,
        at.clone(),
        vec![
            user("call slow {}"),
            Record::ToolCall {
                call_id: "call-2".into(),
                name: "slow".into(),
                arguments: serde_json::json!({}),
            },
            made_up(
                "call-2",
                "slow",
                "The turn was cut off while this call ran; its result was not stored.",
            ),
        ],
    );
    // The approval was durable before the tool ran.
    assert!(after.archive.iter().any(|e| matches!(
        e,
        ArchiveEntry::Approval(a) if a.call_id == "call-2" && a.decision == Decision::Allow
    )));
    assert_eq!(
        Note::TurnCutOff { at }.text(),
        "The turn was cut off after tool call 'call-2' (slow) had started; its result was not \
         stored."
    );
}

#[test]
fn a_turn_cut_off_while_the_model_answered_keeps_the_user_message() {
    let (_dir, ws) = workspace();
    let id = crash_during(&ws, Hang::Model, "think hard");
    let after = resume_and_turn(&ws, &id);
    assert_closed(&after, CutOff::ModelCall, vec![user("think hard")]);
    // The marker reaches the model as a user message before the new one.
    let texts: Vec<&str> = after
        .next_request
        .items
        .iter()
        .filter_map(|i| match &i.body {
            ItemBody::User { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        texts,
        [
            "think hard",
            "The turn was cut off while the model was answering; its answer was not stored.",
            "next"
        ]
    );
}

#[test]
fn a_session_that_finished_its_turns_resumes_without_a_marker() {
    let (_dir, ws) = workspace();
    let rig = Rig::new(Hang::Nowhere);
    let id = actix::System::new().block_on(async {
        let mut host = host(&ws, &rig);
        let id = host.open().await.unwrap();
        host.user_turn(UserInput::work("hello")).await.unwrap();
        id
    });
    let after = resume_and_turn(&ws, &id);
    assert!(!after
        .records
        .iter()
        .any(|r| matches!(r, Record::CutOff { .. })));
    assert!(!after.interrupted);
    assert_eq!(
        after.finished,
        [StopReason::Completed],
        "no interrupted turn"
    );
}

/// A model that asks for a tool call on every call: `slow` on its first, a write (which the
/// operator is asked about) on every later one when `writes`, else `slow` again. Counts its
/// calls.
struct Looper {
    calls: Arc<Mutex<usize>>,
    writes: bool,
}

#[async_trait]
impl Provider for Looper {
    fn takes_images(&self) -> bool {
        false
    }
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        let n = {
            let mut calls = self.calls.lock().unwrap();
            *calls += 1;
            *calls - 1
        };
        let (name, arguments) = if n > 0 && self.writes {
            (
                "write_file",
                serde_json::json!({"path": format!("loop-{n}.txt"), "content": "x"}),
            )
        } else {
            ("slow", serde_json::json!({}))
        };
        Ok(ModelResponse {
            purpose: request.purpose,
            finish_reason: FinishReason::ToolCalls,
            items: vec![Item::new(
                format!("item-{n}"),
                ItemBody::ToolCall {
                    call_id: format!("loop-{n}"),
                    name: name.into(),
                    arguments,
                },
            )],
            usage: Usage::default(),
        })
    }
}

/// A host builder with a budget of two model calls a turn.
fn budgeted(ws: &Path, rig: &Rig, model: Looper) -> hookline::host::HostBuilder {
    let mut tools = ToolRegistry::with_builtins();
    let spec = ToolSpec {
        name: "slow".into(),
        description: "Takes its time.".into(),
        provider: ToolProvider::BuiltIn,
        risk: Risk::Read,
        authority: Authority::Workspace,
    };
    tools.register(Arc::new(Slow(rig.clone(), spec))).unwrap();
    Host::builder()
        .tools(tools)
        .provider(Arc::new(model))
        .operator(Arc::new(Desk(rig.clone())))
        .approval_mode(ApprovalMode::AskAboveRead)
        .workspace(ws)
        .max_model_calls(2)
}

/// Issue 46 item 8: a waiting turn continued after a takeover carries on with the model calls
/// it had spent, not a fresh budget. The budget is two calls a turn; the first process's turn
/// spends both (`slow`, then a write the operator is asked about) and is cut off while the
/// operator is asked. The gateway that resumes it asks again; allowed, the write runs, and the
/// turn ends `limit-reached` without another model call (with a fresh budget it made two more).
#[test]
fn a_waiting_turn_continued_on_a_gateway_keeps_its_model_call_budget() {
    let (_dir, ws) = workspace();
    let rig = Rig::new(Hang::Approval);
    let first = Arc::new(Mutex::new(0));
    let id = actix::System::new().block_on(async {
        let model = Looper {
            calls: first.clone(),
            writes: true,
        };
        let mut host = budgeted(&ws, &rig, model).start().unwrap();
        let id = host.open().await.unwrap();
        tokio::select! {
            answer = host.user_turn(UserInput::work("loop")) => panic!("the turn ended: {answer:?}"),
            () = rig.reached.notified() => {}
        }
        id
    });
    assert_eq!(
        *first.lock().unwrap(),
        2,
        "the first process spent the budget"
    );

    let rig = Rig::new(Hang::Nowhere);
    let second = Arc::new(Mutex::new(0));
    let archive = actix::System::new().block_on(async {
        let model = Looper {
            calls: second.clone(),
            writes: false,
        };
        let gateway = budgeted(&ws, &rig, model)
            .start_gateway(GatewayLimits::default())
            .unwrap();
        let handle = gateway.resume(&id).await.unwrap();
        assert_eq!(handle.status().activity, Activity::Approval);
        handle.answer_approval("loop-1", Decision::Allow).unwrap();
        let mut status = handle.watch_status();
        tokio::time::timeout(
            std::time::Duration::from_secs(20),
            status.wait_for(|s| s.activity == Activity::Idle),
        )
        .await
        .expect("the continued turn ends")
        .unwrap();
        gateway.close(&id).await.unwrap();
        let stored = gateway.store().session_dir(&id).unwrap();
        hookline::host::store::Log::<ArchiveEntry>::open(&stored.join("archive.log"))
            .unwrap()
            .1
            .records
    });
    assert!(ws.join("loop-1.txt").exists(), "the allowed write ran");
    assert_eq!(
        *second.lock().unwrap(),
        0,
        "the continued turn made no model call past its budget"
    );
    let finished: Vec<StopReason> = archive
        .iter()
        .filter_map(|e| match e {
            ArchiveEntry::TurnFinished { stop_reason } => Some(*stop_reason),
            _ => None,
        })
        .collect();
    assert_eq!(finished, [StopReason::LimitReached]);
}
