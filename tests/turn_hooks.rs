//! End-to-end turns: each hook at its place (SPEC P2, P3, R1 to R5).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod host_support;

use std::sync::Arc;

use async_trait::async_trait;
use hookline::actors::plugin::{HookResult, Plugin, PluginRegistration, RawHooks, Reply};
use hookline::host::store::{FileStore, FileStoreOptions, SessionStore as _};
use hookline::host::turn::UserInput;
use hookline::host::SessionCommand;
use hookline::messages::approval::{Authority, Risk};
use hookline::messages::compaction::{Compaction, CompactionPhase, CompactionText};
use hookline::messages::hook::{HookContext, HookKind, HookSet};
use hookline::messages::model::{
    ImageRef, Item, ItemBody, MediaType, ModelRequest, Purpose, Usage,
};
use hookline::messages::note::Note;
use hookline::messages::prompt::SystemText;
use hookline::messages::record::{ArchiveEntry, Decider, Decision, Record};
use hookline::messages::scenario::ScriptedReply;
use hookline::messages::session::ApprovalMode;
use hookline::messages::session::SessionId;
use hookline::messages::tool::{ToolCall, ToolResult};
use hookline::messages::user::{StopReason, UserMessage};
use host_support::*;
use serde_json::json;

/// Rewrites every `read_file` call into a `write_file` call.
struct ReadToWrite;

#[async_trait]
impl Plugin for ReadToWrite {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[HookKind::OnToolCall])
    }
    async fn on_tool_call(&self, _: &HookContext, call: ToolCall) -> HookResult<Reply<ToolCall>> {
        Ok(Reply::Replace(ToolCall {
            name: "write_file".into(),
            arguments: json!({"path": "notes.txt", "content": "gone"}),
            ..call
        }))
    }
}

#[actix_rt::test]
async fn a_rewritten_tool_call_is_classified_and_approved_again() {
    let mut rig = rig(
        vec![PluginRegistration::new("rw").with_hooks(Arc::new(ReadToWrite))],
        false,
        ApprovalMode::AskAboveRead,
    );
    rig.host.open().await.unwrap();
    rig.replies(vec![
        call("c1", "read_file", json!({"path": "notes.txt"})),
        text("done"),
    ]);
    // No operator answer: a call that must ask is refused.
    rig.host
        .user_turn(UserInput::work("read it"))
        .await
        .unwrap();
    let approvals: Vec<_> = rig
        .archive("s1")
        .into_iter()
        .filter_map(|e| match e {
            ArchiveEntry::Approval(a) => Some(a),
            _ => None,
        })
        .collect();
    assert_eq!(approvals.len(), 1);
    // SPEC P3.1: the read would have run unasked; the rewritten write is classified as a write.
    assert_eq!(approvals[0].tool, "write_file");
    assert_eq!(approvals[0].classification.risk, Risk::Write);
    assert_eq!(
        (approvals[0].decision, approvals[0].decided_by),
        (Decision::Deny, Decider::Operator)
    );
    assert_eq!(
        std::fs::read_to_string(rig.workspace().join("notes.txt")).unwrap(),
        "three little words"
    );
    let records = rig.records("s1");
    // SPEC P3.6: the stored call is the model's; the refused result is recorded.
    assert!(records
        .iter()
        .any(|r| matches!(r, Record::ToolCall { name, .. } if name == "read_file")));
    assert!(records.iter().any(
        |r| matches!(r, Record::ToolResult { success: false, name, .. } if name == "write_file")
    ));
}

#[actix_rt::test]
async fn an_allowed_rewritten_call_runs_as_rewritten() {
    let mut rig = rig(
        vec![PluginRegistration::new("rw").with_hooks(Arc::new(ReadToWrite))],
        false,
        ApprovalMode::AskAboveRead,
    );
    rig.host.open().await.unwrap();
    rig.replies(vec![
        call("c1", "read_file", json!({"path": "notes.txt"})),
        text("done"),
    ]);
    rig.answers(&[hookline::messages::scenario::OperatorAnswer::Allow]);
    rig.host
        .user_turn(UserInput::work("read it"))
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(rig.workspace().join("notes.txt")).unwrap(),
        "gone"
    );
}

/// Replaces the user message before it is stored, and changes outbound user text.
struct Rewriter;

#[async_trait]
impl Plugin for Rewriter {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[HookKind::OnUserMessage, HookKind::TransformModel])
    }
    async fn on_user_message(
        &self,
        _: &HookContext,
        m: UserMessage,
    ) -> HookResult<Reply<UserMessage>> {
        Ok(Reply::Replace(UserMessage::new(format!(
            "stored: {}",
            m.text
        ))))
    }
    async fn transform_model(
        &self,
        _: &HookContext,
        mut r: ModelRequest,
    ) -> HookResult<Reply<ModelRequest>> {
        for item in r.items.to_mut() {
            if let ItemBody::User { text, .. } = &item.body {
                let outbound = format!("outbound: {text}");
                if let ItemBody::User { text, .. } = &mut std::sync::Arc::make_mut(item).body {
                    *text = outbound;
                }
            }
        }
        Ok(Reply::Replace(r))
    }
}

fn user_texts(request: &ModelRequest) -> Vec<String> {
    request
        .items
        .iter()
        .filter_map(|i| match &i.body {
            ItemBody::User { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[actix_rt::test]
async fn the_user_message_is_stored_as_replaced_while_transform_reaches_only_the_request() {
    let mut rig = rig(
        vec![PluginRegistration::new("rewriter").with_hooks(Arc::new(Rewriter))],
        false,
        ApprovalMode::AskAboveRead,
    );
    rig.host.open().await.unwrap();
    rig.replies(vec![text("hi")]);
    rig.host.user_turn(UserInput::work("hello")).await.unwrap();
    let records = rig.records("s1");
    assert!(records.contains(&Record::User {
        text: "stored: hello".into(),
        images: vec![]
    }));
    assert_eq!(
        user_texts(&rig.provider.sent()[0]),
        ["outbound: stored: hello"]
    );
    assert!(!records
        .iter()
        .any(|r| matches!(r, Record::User { text, .. } if text.contains("outbound"))));
}

/// Replaces the work text with the empty string.
struct Blank;

#[async_trait]
impl RawHooks for Blank {
    fn raw_hooks(&self) -> HookSet {
        HookSet::of(&[HookKind::RewritePrompt])
    }
    async fn rewrite_prompt(
        &self,
        _: &HookContext,
        t: SystemText,
    ) -> HookResult<Reply<SystemText>> {
        Ok(Reply::Replace(SystemText {
            text: String::new(),
            ..t
        }))
    }
}

#[actix_rt::test]
async fn rewrite_prompts_empty_string_is_sent_stored_and_archived() {
    let mut rig = rig(
        vec![PluginRegistration::new("blank").with_raw_hooks(Arc::new(Blank))],
        false,
        ApprovalMode::AskAboveRead,
    );
    rig.host.open().await.unwrap();
    rig.replies(vec![text("ok")]);
    rig.host.user_turn(UserInput::work("go")).await.unwrap();
    let sent = &rig.provider.sent()[0];
    assert_eq!(
        sent.items[0].body,
        ItemBody::System {
            text: String::new(),
            images: vec![]
        }
    );
    assert!(rig
        .records("s1")
        .iter()
        .any(|r| matches!(r, Record::System { text, .. } if text.is_empty())));
    assert!(rig
        .archive("s1")
        .iter()
        .any(|e| matches!(e, ArchiveEntry::SystemText { text, .. } if text.is_empty())));
}

/// Appends compaction facts, rewrites the summary, and records what compaction's
/// transform_model saw.
struct Compactor(Seen);

#[async_trait]
impl Plugin for Compactor {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[HookKind::OnCompaction, HookKind::TransformModel])
    }
    async fn on_compaction(&self, _: &HookContext, c: Compaction) -> HookResult<Reply<Compaction>> {
        Ok(Reply::Replace(c.append("Fact: tests pass.")))
    }
    async fn transform_model(
        &self,
        _: &HookContext,
        r: ModelRequest,
    ) -> HookResult<Reply<ModelRequest>> {
        if r.purpose == Purpose::Compaction {
            self.0.lock().unwrap().extend(user_texts(&r));
        }
        Ok(Reply::Keep)
    }
}

#[async_trait]
impl RawHooks for Compactor {
    fn raw_hooks(&self) -> HookSet {
        HookSet::of(&[HookKind::RewriteCompaction])
    }
    async fn rewrite_compaction(
        &self,
        _: &HookContext,
        t: CompactionText,
    ) -> HookResult<Reply<CompactionText>> {
        if t.phase == CompactionPhase::Summary {
            return Ok(Reply::Replace(CompactionText {
                text: format!("REWRITTEN {}", t.text),
                ..t
            }));
        }
        Ok(Reply::Keep)
    }
}

#[actix_rt::test]
async fn compaction_appends_facts_and_the_rewritten_summary_replaces_the_history() {
    let log = Seen::default();
    let plugin = Arc::new(Compactor(log.clone()));
    let reg = PluginRegistration::new("compactor")
        .with_hooks(plugin.clone())
        .with_raw_hooks(plugin);
    let mut rig = rig(vec![reg], false, ApprovalMode::AskAboveRead);
    rig.host.open().await.unwrap();
    rig.replies(vec![text("first answer")]);
    rig.host
        .user_turn(UserInput::work("first question"))
        .await
        .unwrap();
    rig.replies(vec![text("they talked")]);
    rig.host.command(SessionCommand::Compact).await.unwrap();
    // SPEC P3.4: transform_model saw the earlier turns; the prompt carries the appended fact.
    let seen = seen(&log);
    assert_eq!(seen[0], "first question");
    assert!(seen[1].ends_with("\n\nFact: tests pass."), "{seen:?}");
    let summary = "REWRITTEN they talked\n\nFact: tests pass.";
    let records = rig.records("s1");
    assert_eq!(
        records.last(),
        Some(&Record::Summary {
            text: summary.into()
        })
    );
    assert!(!records
        .iter()
        .any(|r| matches!(r, Record::User { .. } | Record::Assistant { .. })));
    assert_eq!(rig.provider.sent()[1].purpose, Purpose::Compaction);
    assert!(!rig.provider.sent()[1].accepts_images);
}

/// Counts user messages and adds an image to tool results.
struct ImageAdder(Seen);

#[async_trait]
impl Plugin for ImageAdder {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[HookKind::OnUserMessage, HookKind::OnToolResult])
    }
    async fn on_user_message(
        &self,
        _: &HookContext,
        m: UserMessage,
    ) -> HookResult<Reply<UserMessage>> {
        self.0.lock().unwrap().push(m.text);
        Ok(Reply::Keep)
    }
    async fn on_tool_result(
        &self,
        _: &HookContext,
        mut r: ToolResult,
    ) -> HookResult<Reply<ToolResult>> {
        r.images.push(ImageRef {
            number: 1,
            media_type: MediaType::Png,
        });
        r.text.push_str(" (seen)");
        Ok(Reply::Replace(r))
    }
}

#[actix_rt::test]
async fn text_only_turns_ignore_plugin_images_with_one_note() {
    let log = Seen::default();
    let mut rig = rig(
        vec![PluginRegistration::new("img").with_hooks(Arc::new(ImageAdder(log)))],
        false,
        ApprovalMode::AskAboveRead,
    );
    rig.host.open().await.unwrap();
    for round in 0..2 {
        rig.replies(vec![
            call(
                &format!("c{round}"),
                "read_file",
                json!({"path": "notes.txt"}),
            ),
            text("ok"),
        ]);
        rig.host.user_turn(UserInput::work("read")).await.unwrap();
    }
    let ignored = rig
        .notes("s1")
        .into_iter()
        .filter(|n| *n == Note::PluginImagesIgnored)
        .count();
    assert_eq!(ignored, 1);
    let results: Vec<_> = rig
        .records("s1")
        .into_iter()
        .filter(|r| matches!(r, Record::ToolResult { .. }))
        .collect();
    assert!(results.iter().all(|r| r.images().is_empty()));
    assert!(results
        .iter()
        .all(|r| matches!(r, Record::ToolResult { text, .. } if text.ends_with("(seen)"))));
}

#[actix_rt::test]
async fn image_turns_keep_held_plugin_images() {
    let log = Seen::default();
    let mut rig = rig(
        vec![PluginRegistration::new("img").with_hooks(Arc::new(ImageAdder(log)))],
        true,
        ApprovalMode::AskAboveRead,
    );
    rig.host.open().await.unwrap();
    rig.replies(vec![
        call("c1", "read_file", json!({"path": "notes.txt"})),
        text("ok"),
    ]);
    let input = UserInput {
        images: vec![MediaType::Png],
        ..UserInput::work("look")
    };
    rig.host.user_turn(input).await.unwrap();
    assert!(rig.notes("s1").is_empty());
    let image = ImageRef {
        number: 1,
        media_type: MediaType::Png,
    };
    assert!(rig
        .records("s1")
        .iter()
        .any(|r| matches!(r, Record::ToolResult { images, .. } if images == &vec![image])));
    assert!(rig.provider.sent()[0].accepts_images);
}

#[actix_rt::test]
async fn a_side_question_is_no_record_skips_on_user_message_and_counts_in_usage() {
    let log = Seen::default();
    let mut rig = rig(
        vec![PluginRegistration::new("img").with_hooks(Arc::new(ImageAdder(log.clone())))],
        true,
        ApprovalMode::AskAboveRead,
    );
    rig.host.open().await.unwrap();
    rig.replies(vec![text("a")]);
    rig.host
        .user_turn(UserInput::work("stored question"))
        .await
        .unwrap();
    let (records, archive) = (rig.records("s1"), rig.archive("s1"));
    let usage = Usage {
        input_tokens: Some(7),
        output_tokens: Some(2),
    };
    rig.replies(vec![ScriptedReply {
        usage,
        ..text("side answer")
    }]);
    let answer = rig.host.side_question("side question").await.unwrap();
    assert_eq!(answer.as_deref(), Some("side answer"));
    assert_eq!(rig.records("s1"), records);
    // The archive keeps the question, its request and its answer, for `hookline replay` (issue
    // 34); no record, so no later request carries it.
    let after = rig.archive("s1");
    assert_eq!(after[..archive.len()], archive[..]);
    assert!(
        matches!(&after[archive.len()..], [
            ArchiveEntry::SideQuestion { question },
            ArchiveEntry::ModelRequest { purpose: Purpose::Side, .. },
            ArchiveEntry::ModelResponse { purpose: Purpose::Side, usage: u, .. },
        ] if question == "side question" && *u == usage),
        "{after:#?}"
    );
    // Issue 34: the answer's usage counts (live and on resume).
    let totals = rig.host.usage().expect("the side call reported usage");
    assert_eq!(
        (
            totals.input_tokens,
            totals.output_tokens,
            totals.model_calls
        ),
        (Some(7), Some(2), 2)
    );
    let root = rig.host.store().root().to_owned();
    let store = FileStore::open(root, FileStoreOptions::default()).unwrap();
    let stored = store.read(&SessionId::new("s1")).await.unwrap();
    assert_eq!(stored.unwrap().usage(), totals, "a resume counts it too");
    assert_eq!(seen(&log), ["stored question"]);
    let side = &rig.provider.sent()[1];
    assert_eq!((side.purpose, side.accepts_images), (Purpose::Side, false));
    assert_eq!(user_texts(side), ["stored question", "side question"]);
}

/// A raw hook that adds an item to every request (or, as `Same`, returns it unchanged).
struct Adder(bool);

#[async_trait]
impl RawHooks for Adder {
    fn raw_hooks(&self) -> HookSet {
        HookSet::of(&[HookKind::RebuildModel])
    }
    async fn rebuild_model(
        &self,
        _: &HookContext,
        mut r: ModelRequest,
    ) -> HookResult<Reply<ModelRequest>> {
        if self.0 {
            r.items.push(
                Item::new(
                    "extra-item",
                    ItemBody::User {
                        text: "x".into(),
                        images: vec![],
                    },
                )
                .into(),
            );
        }
        Ok(Reply::Replace(r))
    }
}

fn raw_change_notes(rig: &Rig) -> usize {
    rig.notes("s1")
        .iter()
        .filter(|n| matches!(n, Note::RawChangeFailure { .. }))
        .count()
}

#[actix_rt::test]
async fn the_raw_change_note_is_recorded_once_per_failed_work_or_plan_call() {
    let regs = vec![
        PluginRegistration::new("acme").with_raw_hooks(Arc::new(Adder(true))),
        PluginRegistration::new("same").with_raw_hooks(Arc::new(Adder(false))),
    ];
    let mut rig = rig(regs, false, ApprovalMode::AskAboveRead);
    rig.host.open().await.unwrap();
    for _ in 0..2 {
        rig.replies(vec![fail("boom")]);
        assert_eq!(
            rig.host.user_turn(UserInput::work("go")).await.unwrap(),
            StopReason::Failed
        );
    }
    assert_eq!(raw_change_notes(&rig), 2);
    assert!(rig.notes("s1").contains(&Note::RawChangeFailure {
        plugins: vec!["acme".into()]
    }));
    // Side and compaction failures earn no note.
    rig.replies(vec![fail("boom")]);
    assert_eq!(rig.host.side_question("q").await.unwrap(), None);
    rig.replies(vec![fail("boom")]);
    rig.host.command(SessionCommand::Compact).await.unwrap();
    assert_eq!(raw_change_notes(&rig), 2);
}

#[actix_rt::test]
async fn no_raw_change_note_when_the_raw_hook_left_the_request_unchanged() {
    let regs = vec![PluginRegistration::new("same").with_raw_hooks(Arc::new(Adder(false)))];
    let mut rig = rig(regs, false, ApprovalMode::AskAboveRead);
    rig.host.open().await.unwrap();
    rig.replies(vec![fail("boom")]);
    rig.host.user_turn(UserInput::work("go")).await.unwrap();
    assert_eq!(raw_change_notes(&rig), 0);
    assert!(rig
        .archive("s1")
        .iter()
        .any(|e| matches!(e, ArchiveEntry::ModelFailure { .. })));
}

#[actix_rt::test]
async fn unknown_tools_are_critical_host_calls_that_never_run_unasked() {
    let mut rig = rig(vec![], false, ApprovalMode::AllowWorkspace);
    rig.host.open().await.unwrap();
    rig.replies(vec![call("c1", "rm_rf", json!({})), text("ok")]);
    rig.host.user_turn(UserInput::work("go")).await.unwrap();
    let approval = rig
        .archive("s1")
        .into_iter()
        .find_map(|e| match e {
            ArchiveEntry::Approval(a) => Some(a),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        (
            approval.classification.risk,
            approval.classification.authority
        ),
        (Risk::Critical, Authority::Host)
    );
    assert_eq!(approval.decision, Decision::Deny);
}
