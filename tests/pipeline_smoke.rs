//! A first end-to-end check of the coordinator: waterfall order, a refusal, a panic.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use async_trait::async_trait;
use hookline::actors::plugin::{HookError, HookResult, Plugin, PluginRegistration, Reply};
use hookline::actors::Pipeline;
use hookline::messages::hook::{HookContext, HookKind, HookSet, OnToolCall};
use hookline::messages::session::SessionId;
use hookline::messages::tool::{ToolCall, ToolProvider};

struct Rename(&'static str);

#[async_trait]
impl Plugin for Rename {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[HookKind::OnToolCall])
    }
    async fn on_tool_call(&self, _: &HookContext, call: ToolCall) -> HookResult<Reply<ToolCall>> {
        match self.0 {
            "panic" => panic!("plugin bug"),
            "error" => Err(HookError::msg("no thanks")),
            "new-id" => Ok(Reply::Replace(ToolCall {
                call_id: "other".into(),
                ..call
            })),
            suffix => Ok(Reply::Replace(ToolCall {
                name: format!("{}{suffix}", call.name),
                ..call
            })),
        }
    }
}

fn call() -> ToolCall {
    ToolCall {
        call_id: "c1".into(),
        name: "t".into(),
        arguments: serde_json::json!({}),
        provider: ToolProvider::BuiltIn,
    }
}

#[actix_rt::test]
async fn waterfall_skips_failures_and_keeps_going() {
    let plugins = [
        ("a", "-a"),
        ("boom", "panic"),
        ("b", "-b"),
        ("bad", "new-id"),
        ("err", "error"),
        ("c", "-c"),
    ];
    let pipeline = Pipeline::builder()
        .plugins(
            plugins
                .iter()
                .map(|(name, op)| PluginRegistration::new(*name).with_hooks(Arc::new(Rename(op)))),
        )
        .start()
        .unwrap();
    let session = SessionId::new("s");
    let outcome = pipeline.call::<OnToolCall>(&session, call()).await.unwrap();
    assert_eq!(outcome.value.name, "t-a-b-c");
    let notes: Vec<String> = outcome.notes.iter().map(ToString::to_string).collect();
    assert_eq!(
        notes,
        [
            "Plugin hook 'boom' tool-call was skipped: it panicked.",
            "Plugin hook 'bad' tool-call was skipped: it returned a different call id.",
            "Plugin hook 'err' tool-call was skipped: no thanks",
        ]
    );
    // The panicking plugin's actor survived; the same notes are not recorded twice per session.
    let again = pipeline.call::<OnToolCall>(&session, call()).await.unwrap();
    assert_eq!(again.value.name, "t-a-b-c");
    assert!(again.notes.is_empty());
}
