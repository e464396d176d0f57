//! The shipped example plugins (Python and Rust) as real processes: hooks, a raw hook, the rules
//! applied through the protocol, tools and events.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use hookline::actors::Pipeline;
use hookline::host::external::PluginTool;
use hookline::host::tools::{Tool, ToolContext};
use hookline::messages::approval::{Authority, Classification, Risk};
use hookline::messages::hook::{
    OnApproval, OnPrompt, OnToolCall, OnUserMessage, RewriteApproval, RewritePrompt,
};
use hookline::messages::prompt::{Prompt, PromptMode, SystemText};
use hookline::messages::protocol::ReplyBody;
use hookline::messages::session::SessionId;
use hookline::messages::tool::ToolProvider;
use hookline::messages::user::UserMessage;
use serde_json::json;
use support::{examples, load_user, scripted, texts, tool_call};

#[actix_rt::test]
async fn the_examples_run_their_hooks_raw_hook_tools_and_events() {
    let root = tempfile::tempdir().unwrap();
    examples(root.path());
    let report = load_user(root.path()).await;
    assert_eq!(
        texts(&report.notes),
        ["Plugin 'house-rules' subscribes to 'command:nwe', which the gateway never emits."]
    );
    let pipeline = Pipeline::builder()
        .plugins(report.registrations())
        .start()
        .unwrap();
    assert_eq!(
        texts(pipeline.load_notes()),
        [
            "Plugin 'rust-guard' registered a raw hook.",
            "Plugin 'house-rules' subscribes to 'command:nwe', which the gateway never emits."
        ]
    );
    let s = SessionId::new("s");
    let prompt = pipeline
        .call::<OnPrompt>(&s, Prompt::new(PromptMode::Work, "Work."))
        .await
        .unwrap();
    assert_eq!(prompt.value.appended, ["Use British spelling."]);
    let call = pipeline
        .call::<OnToolCall>(&s, tool_call("ls", "c1"))
        .await
        .unwrap();
    assert_eq!(call.value.name, "list_dir");
    let message = UserMessage::new("my password hunter2 ok");
    let redacted = pipeline.call::<OnUserMessage>(&s, message).await.unwrap();
    assert_eq!(redacted.value.text, "my password [redacted] ok");
    let review = SystemText {
        mode: PromptMode::Review,
        text: "Review.".into(),
    };
    let strict = pipeline.call::<RewritePrompt>(&s, review).await.unwrap();
    assert_eq!(strict.value.text, "Review.\nBe strict.");
    assert_eq!(strict.changed_by.len(), 1);
    let tools: Vec<PluginTool> = report.tools();
    let names: Vec<&str> = tools.iter().map(|t| t.spec().name.as_str()).collect();
    assert_eq!(names, ["word_count", "echo"]);
    assert!(tools
        .iter()
        .all(|t| t.spec().provider == ToolProvider::Plugin));
    let cx = ToolContext {
        workspace_root: root.path().to_path_buf(),
        session_id: "s1".into(),
        approval_mode: Default::default(),
    };
    let count = tools[0].run(&cx, json!({"text": "one two three"})).await;
    assert_eq!((count.text.as_str(), count.success), ("3", true));
    let echo = tools[1].run(&cx, json!({"text": "hi"})).await;
    assert_eq!(echo.text, "hi");
    let guard = report.plugins[1].as_external().expect("an external plugin");
    assert_eq!(guard.events(), ["message:received", "session"]);
    let ack = guard
        .deliver_event(
            "message:received",
            json!({"from": "a"}),
            Duration::from_secs(5),
        )
        .await;
    assert_eq!(ack, Ok(ReplyBody::Keep));
    report.shutdown().await;
}

fn classification(risk: Risk) -> Classification {
    Classification {
        risk,
        authority: Authority::Workspace,
        summary: "run it".into(),
        requires_prompt: false,
    }
}

#[actix_rt::test]
async fn the_rules_apply_to_external_replacements_as_to_any_plugin() {
    let root = tempfile::tempdir().unwrap();
    let lower = json!({"risk": "read", "authority": "workspace", "summary": "run it", "requiresPrompt": false});
    scripted(
        root.path(),
        "rules",
        json!({
            "on_tool_call": {"replace": {"callId": "other", "name": "t", "arguments": {}, "provider": "built-in"}},
            "on_prompt": {"replace": {"mode": "work", "text": "Replaced.", "appended": []}},
            "on_approval": {"replace": lower},
            "rewrite_approval": {"replace": lower},
            "on_user_message": {"replace": {"unexpected": true}},
        }),
    );
    let report = load_user(root.path()).await;
    let pipeline = Pipeline::builder()
        .plugins(report.registrations())
        .start()
        .unwrap();
    let s = SessionId::new("s");
    let call = pipeline
        .call::<OnToolCall>(&s, tool_call("t", "c1"))
        .await
        .unwrap();
    assert_eq!(call.value.call_id, "c1");
    let prompt = pipeline
        .call::<OnPrompt>(&s, Prompt::new(PromptMode::Work, "Work."))
        .await
        .unwrap();
    assert_eq!(prompt.value.text, "Work.");
    let approval = pipeline
        .call::<OnApproval>(&s, classification(Risk::Execute))
        .await
        .unwrap();
    assert_eq!(approval.value.risk, Risk::Execute);
    // SPEC R5.10: the raw hook may lower risk.
    let raw = pipeline
        .call::<RewriteApproval>(&s, classification(Risk::Execute))
        .await
        .unwrap();
    assert_eq!(raw.value.risk, Risk::Read);
    let message = pipeline
        .call::<OnUserMessage>(&s, UserMessage::new("hi"))
        .await
        .unwrap();
    assert_eq!(message.value.text, "hi");
    let notes: Vec<String> = [
        call.notes,
        prompt.notes,
        approval.notes,
        raw.notes,
        message.notes,
    ]
    .iter()
    .flat_map(|n| texts(n))
    .collect();
    assert_eq!(
        notes,
        [
            "Plugin hook 'rules' tool-call was skipped: it returned a different call id.",
            "Plugin hook 'rules' prompt was skipped: it replaced the work text.",
            "Plugin hook 'rules' approval was skipped: it tried to lower risk.",
            "Plugin hook 'rules' user-message was skipped: it returned a value that could not be decoded.",
        ]
    );
    report.shutdown().await;
}
