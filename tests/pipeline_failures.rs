//! Failing plugins (SPEC P1.4): an erroring, a panicking and a hanging plugin in first, middle
//! and last position are skipped with their exact note, the value before them stands and the
//! other plugins still run. Timeouts run on paused time, never on sleeps.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::type_complexity)]

mod scripted;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use hookline::actors::plugin::{
    HookResult, Plugin, PluginRegistration, Reply, DEFAULT_HOOK_TIMEOUT,
};
use hookline::actors::Pipeline;
use hookline::messages::hook::{HookContext, HookKind, HookSet, OnToolCall, OnUserMessage};
use hookline::messages::tool::ToolCall;
use hookline::messages::user::UserMessage;
use scripted::*;

fn append(name: &'static str) -> Act<UserMessage> {
    replace(move |m: UserMessage| UserMessage::new(format!("{}+{name}", m.text)))
}

/// Runs three plugins, one of which (at `position`) acts as `failing`; the others append their
/// names. Checks the value, the one note, and what each healthy plugin was sent.
async fn failing_at(position: usize, failing: fn() -> Act<UserMessage>, reason: &str) {
    let names = ["p0", "p1", "p2"];
    let plugins: Vec<_> = names
        .iter()
        .enumerate()
        .map(|(n, name)| {
            let act = if n == position {
                failing()
            } else {
                append(name)
            };
            Scripted::build(HookKind::OnUserMessage, act, 0)
        })
        .collect();
    let pipeline = Pipeline::builder()
        .plugins(
            names
                .iter()
                .zip(&plugins)
                .map(|(name, p)| register(name, p)),
        )
        .start()
        .unwrap();
    let outcome = pipeline
        .call::<OnUserMessage>(&session("s"), UserMessage::new("m"))
        .await
        .unwrap();
    let healthy: Vec<&str> = names
        .iter()
        .enumerate()
        .filter(|(n, _)| *n != position)
        .map(|(_, s)| *s)
        .collect();
    let expected = format!("m+{}", healthy.join("+"));
    assert_eq!(
        outcome.value,
        UserMessage::new(expected),
        "failing at {position}"
    );
    assert_eq!(
        notes(&outcome),
        [format!(
            "Plugin hook 'p{position}' user-message was skipped: {reason}"
        )]
    );
    assert_eq!(changed_by(&outcome), healthy);
    // Each plugin saw the value after the healthy plugins before it.
    let mut value = "m".to_owned();
    for (n, plugin) in plugins.iter().enumerate() {
        assert_eq!(
            plugin.seen(),
            [UserMessage::new(value.clone())],
            "plugin {n}"
        );
        if n != position {
            value = format!("{value}+p{n}");
        }
    }
}

#[actix_rt::test]
async fn an_erroring_plugin_is_skipped_with_its_own_message_in_every_position() {
    for position in 0..3 {
        failing_at(
            position,
            || Act::Fail("  the disk is full \n".into()),
            "the disk is full",
        )
        .await;
    }
}

#[actix_rt::test]
async fn an_error_with_an_empty_message_reads_it_failed() {
    for position in 0..3 {
        failing_at(position, || Act::Fail(" ".into()), "it failed.").await;
    }
}

#[actix_rt::test]
async fn a_panicking_plugin_is_skipped_in_every_position() {
    for position in 0..3 {
        failing_at(position, || Act::Panic, "it panicked.").await;
    }
}

#[actix_rt::test]
async fn a_hanging_plugin_times_out_after_10_s_in_every_position() {
    tokio::time::pause();
    for position in 0..3 {
        let started = tokio::time::Instant::now();
        failing_at(position, || Act::Hang, "it timed out after 10 s.").await;
        let waited = started.elapsed();
        assert!(
            waited >= DEFAULT_HOOK_TIMEOUT
                && waited < DEFAULT_HOOK_TIMEOUT + Duration::from_secs(1),
            "{waited:?}"
        );
    }
}

#[actix_rt::test]
async fn several_failures_in_one_call_each_get_their_note_in_load_order() {
    tokio::time::pause();
    let acts = [
        Act::Hang,
        append("p1"),
        Act::Panic,
        Act::Fail("no".into()),
        append("p4"),
    ];
    let plugins: Vec<_> = acts
        .into_iter()
        .map(|a| Scripted::build(HookKind::OnUserMessage, a, 0))
        .collect();
    let names = ["p0", "p1", "p2", "p3", "p4"];
    let pipeline = Pipeline::builder()
        .plugins(
            names
                .iter()
                .zip(&plugins)
                .map(|(name, p)| register(name, p)),
        )
        .start()
        .unwrap();
    let outcome = pipeline
        .call::<OnUserMessage>(&session("s"), UserMessage::new("m"))
        .await
        .unwrap();
    assert_eq!(outcome.value, UserMessage::new("m+p1+p4"));
    assert_eq!(
        notes(&outcome),
        [
            "Plugin hook 'p0' user-message was skipped: it timed out after 10 s.",
            "Plugin hook 'p2' user-message was skipped: it panicked.",
            "Plugin hook 'p3' user-message was skipped: no",
        ]
    );
}

#[actix_rt::test]
async fn a_panicking_plugins_next_call_works() {
    let plugin = Scripted::build(HookKind::OnUserMessage, append("p"), 1);
    let pipeline = Pipeline::builder()
        .plugin(register("p", &plugin))
        .start()
        .unwrap();
    let first = pipeline
        .call::<OnUserMessage>(&session("s"), UserMessage::new("a"))
        .await
        .unwrap();
    assert_eq!(first.value, UserMessage::new("a"));
    assert_eq!(
        notes(&first),
        ["Plugin hook 'p' user-message was skipped: it panicked."]
    );
    let second = pipeline
        .call::<OnUserMessage>(&session("s"), UserMessage::new("b"))
        .await
        .unwrap();
    assert_eq!(second.value, UserMessage::new("b+p"));
    assert!(second.notes.is_empty());
    let other = pipeline
        .call::<OnUserMessage>(&session("t"), UserMessage::new("c"))
        .await
        .unwrap();
    assert_eq!(other.value, UserMessage::new("c+p"));
    assert_eq!(plugin.calls(), 3);
}

#[actix_rt::test]
async fn a_plugin_that_always_panics_keeps_being_called_and_skipped() {
    let plugin = Scripted::<UserMessage>::build(HookKind::OnUserMessage, Act::Panic, 0);
    let pipeline = Pipeline::builder()
        .plugin(register("p", &plugin))
        .start()
        .unwrap();
    for n in 0..5 {
        let session = session(&format!("s{n}"));
        let outcome = pipeline
            .call::<OnUserMessage>(&session, UserMessage::new("m"))
            .await
            .unwrap();
        assert_eq!(
            notes(&outcome),
            ["Plugin hook 'p' user-message was skipped: it panicked."]
        );
    }
    assert_eq!(plugin.calls(), 5);
}

/// Hangs on both hooks it declares.
struct Hangs;

#[async_trait]
impl Plugin for Hangs {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[HookKind::OnUserMessage, HookKind::OnToolCall])
    }
    async fn on_user_message(
        &self,
        _: &HookContext,
        _: UserMessage,
    ) -> HookResult<Reply<UserMessage>> {
        std::future::pending().await
    }
    async fn on_tool_call(&self, _: &HookContext, _: ToolCall) -> HookResult<Reply<ToolCall>> {
        std::future::pending().await
    }
}

#[actix_rt::test]
async fn a_custom_timeout_applies_to_its_plugin_and_hook_only() {
    tokio::time::pause();
    let pipeline = Pipeline::builder()
        .plugin(
            PluginRegistration::new("quick")
                .with_hooks(Arc::new(Hangs))
                .with_timeout(HookKind::OnUserMessage, Duration::from_millis(250)),
        )
        .plugin(
            PluginRegistration::new("odd")
                .with_hooks(Arc::new(Hangs))
                .with_timeout(HookKind::OnUserMessage, Duration::from_millis(1500)),
        )
        .plugin(PluginRegistration::new("default").with_hooks(Arc::new(Hangs)))
        .start()
        .unwrap();
    let started = tokio::time::Instant::now();
    let outcome = pipeline
        .call::<OnUserMessage>(&session("s"), UserMessage::new("m"))
        .await
        .unwrap();
    assert_eq!(
        notes(&outcome),
        [
            "Plugin hook 'quick' user-message was skipped: it timed out after 250 ms.",
            "Plugin hook 'odd' user-message was skipped: it timed out after 1500 ms.",
            "Plugin hook 'default' user-message was skipped: it timed out after 10 s.",
        ]
    );
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(11_750) && waited < Duration::from_secs(12),
        "{waited:?}"
    );
    let outcome = pipeline
        .call::<OnToolCall>(&session("s"), tool_call())
        .await
        .unwrap();
    assert_eq!(outcome.value, tool_call());
    assert_eq!(
        notes(&outcome),
        [
            "Plugin hook 'quick' tool-call was skipped: it timed out after 10 s.",
            "Plugin hook 'odd' tool-call was skipped: it timed out after 10 s.",
            "Plugin hook 'default' tool-call was skipped: it timed out after 10 s.",
        ]
    );
}
