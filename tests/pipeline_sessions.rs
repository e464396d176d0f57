//! Sessions and concurrency (issue 2, item 8): notes once per session, per-session order with no
//! cross-talk across 1,000 concurrent sessions, a waiting plugin holding up only its own session
//! (unless it takes one call at a time), bounded admission, and unique plugin names.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::type_complexity)]

mod scripted;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::future::join_all;
use hookline::actors::plugin::{HookError, HookResult, Plugin, PluginRegistration, Reply};
use hookline::actors::{Pipeline, PipelineError, StartError};
use hookline::messages::hook::{HookContext, HookKind, HookSet, OnToolCall, OnUserMessage};
use hookline::messages::session::SessionId;
use hookline::messages::tool::ToolCall;
use hookline::messages::user::UserMessage;
use scripted::*;
use tokio::sync::{Notify, Semaphore};

// ---- notes once per session ----

#[actix_rt::test]
async fn the_same_note_is_recorded_once_per_session() {
    let plugin =
        Scripted::<UserMessage>::build(HookKind::OnUserMessage, Act::Fail("down".into()), 0);
    let pipeline = Pipeline::builder()
        .plugin(register("p", &plugin))
        .start()
        .unwrap();
    let note = ["Plugin hook 'p' user-message was skipped: down"];
    let call = |s: &'static str| {
        let pipeline = pipeline.clone();
        async move {
            pipeline
                .call::<OnUserMessage>(&session(s), UserMessage::new("m"))
                .await
                .unwrap()
        }
    };
    assert_eq!(notes(&call("a").await), note);
    assert!(
        call("a").await.notes.is_empty(),
        "second identical failure, same session"
    );
    assert!(call("a").await.notes.is_empty());
    assert_eq!(
        notes(&call("b").await),
        note,
        "another session records its own"
    );
    assert!(call("b").await.notes.is_empty());
    // A forgotten session starts afresh.
    pipeline.forget_session(&session("a")).await.unwrap();
    assert_eq!(notes(&call("a").await), note);
    assert_eq!(plugin.calls(), 6, "the plugin is still called every time");
}

/// Fails with a message naming the call's text, so each call's note differs.
struct FailsWithText;

#[async_trait]
impl Plugin for FailsWithText {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[HookKind::OnUserMessage])
    }
    async fn on_user_message(
        &self,
        _: &HookContext,
        m: UserMessage,
    ) -> HookResult<Reply<UserMessage>> {
        Err(HookError::msg(format!("cannot handle {}", m.text)))
    }
}

#[actix_rt::test]
async fn different_notes_in_one_session_are_each_recorded() {
    let pipeline = Pipeline::builder()
        .plugin(PluginRegistration::new("p").with_hooks(Arc::new(FailsWithText)))
        .start()
        .unwrap();
    let s = session("s");
    for (text, recorded) in [("x", true), ("y", true), ("x", false), ("z", true)] {
        let outcome = pipeline
            .call::<OnUserMessage>(&s, UserMessage::new(text))
            .await
            .unwrap();
        let expected: Vec<String> = recorded
            .then(|| format!("Plugin hook 'p' user-message was skipped: cannot handle {text}"))
            .into_iter()
            .collect();
        assert_eq!(notes(&outcome), expected);
    }
    let again = pipeline
        .call::<OnUserMessage>(&s, UserMessage::new("x"))
        .await
        .unwrap();
    assert!(again.notes.is_empty());
}

// ---- per-session order, no cross-talk ----

/// Appends `|<name>:<session>:<n>`, where `n` counts this plugin's calls for the session, after
/// yielding so that sessions interleave.
struct Sequencer {
    name: &'static str,
    counts: Mutex<HashMap<SessionId, usize>>,
}

impl Sequencer {
    fn new(name: &'static str) -> Arc<Self> {
        Arc::new(Self {
            name,
            counts: Mutex::new(HashMap::new()),
        })
    }
}

#[async_trait]
impl Plugin for Sequencer {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[HookKind::OnUserMessage])
    }
    async fn on_user_message(
        &self,
        cx: &HookContext,
        m: UserMessage,
    ) -> HookResult<Reply<UserMessage>> {
        let n = {
            let mut counts = self.counts.lock().unwrap();
            let n = counts.entry(cx.session_id.clone()).or_default();
            *n += 1;
            *n - 1
        };
        tokio::task::yield_now().await;
        tokio::task::yield_now().await;
        Ok(Reply::Replace(UserMessage::new(format!(
            "{}|{}:{}:{n}",
            m.text, self.name, cx.session_id
        ))))
    }
}

async fn many_sessions(sessions: usize, calls_per_session: usize) {
    let pipeline = Pipeline::builder()
        .plugin(PluginRegistration::new("p1").with_hooks(Sequencer::new("p1")))
        .plugin(PluginRegistration::new("p2").with_hooks(Sequencer::new("p2")))
        .start()
        .unwrap();
    let runs = (0..sessions).map(|s| {
        let pipeline = pipeline.clone();
        async move {
            let id = SessionId::new(format!("s{s}"));
            // All of a session's calls are issued at once, in order; they must run in that order.
            let calls = (0..calls_per_session).map(|k| {
                pipeline.call::<OnUserMessage>(&id, UserMessage::new(format!("{id}#{k}")))
            });
            let outcomes = join_all(calls).await;
            (id, outcomes)
        }
    });
    for (id, outcomes) in join_all(runs).await {
        for (k, outcome) in outcomes.into_iter().enumerate() {
            let outcome = outcome.unwrap();
            assert_eq!(
                outcome.value.text,
                format!("{id}#{k}|p1:{id}:{k}|p2:{id}:{k}")
            );
            assert!(outcome.notes.is_empty());
        }
    }
}

#[actix_rt::test]
async fn a_thousand_concurrent_sessions_each_get_their_results_in_their_own_order() {
    many_sessions(1000, 4).await;
}

#[actix_rt::test]
async fn sessions_issuing_more_calls_than_the_mailbox_holds_keep_their_order() {
    many_sessions(1000, 8).await;
}

// ---- a waiting plugin holds up only its own session ----

/// Waits for a permit on messages starting with `wait`, announcing that it has started.
struct Waits {
    entered: Notify,
    release: Semaphore,
    running: AtomicUsize,
    most_at_once: AtomicUsize,
}

impl Waits {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            entered: Notify::new(),
            release: Semaphore::new(0),
            running: AtomicUsize::new(0),
            most_at_once: AtomicUsize::new(0),
        })
    }
}

#[async_trait]
impl Plugin for Waits {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[HookKind::OnUserMessage, HookKind::OnToolCall])
    }
    async fn on_tool_call(&self, _: &HookContext, _: ToolCall) -> HookResult<Reply<ToolCall>> {
        self.entered.notify_one();
        std::future::pending().await
    }
    async fn on_user_message(
        &self,
        cx: &HookContext,
        m: UserMessage,
    ) -> HookResult<Reply<UserMessage>> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_at_once.fetch_max(now, Ordering::SeqCst);
        self.entered.notify_one();
        if m.text.starts_with("wait") {
            self.release
                .acquire()
                .await
                .map_err(|e| HookError::msg(e.to_string()))?
                .forget();
        }
        self.running.fetch_sub(1, Ordering::SeqCst);
        Ok(Reply::Replace(UserMessage::new(format!(
            "{}+{}",
            m.text, cx.session_id
        ))))
    }
}

fn spawn_call(
    pipeline: &Pipeline,
    s: &str,
    text: &str,
) -> tokio::task::JoinHandle<Result<hookline::actors::Outcome<UserMessage>, PipelineError>> {
    let (pipeline, s, text) = (pipeline.clone(), session(s), UserMessage::new(text));
    actix_rt::spawn(async move { pipeline.call::<OnUserMessage>(&s, text).await })
}

#[actix_rt::test]
async fn a_plugin_waiting_for_session_a_does_not_hold_up_session_b() {
    tokio::time::pause();
    let waits = Waits::new();
    let other = Sequencer::new("q");
    let pipeline = Pipeline::builder()
        .plugin(PluginRegistration::new("w").with_hooks(waits.clone()))
        .plugin(PluginRegistration::new("q").with_hooks(other))
        .start()
        .unwrap();
    let a = spawn_call(&pipeline, "a", "wait");
    waits.entered.notified().await;
    let started = tokio::time::Instant::now();
    let b = pipeline
        .call::<OnUserMessage>(&session("b"), UserMessage::new("go"))
        .await
        .unwrap();
    assert_eq!(started.elapsed(), Duration::ZERO, "b did not wait for a");
    assert_eq!(b.value.text, "go+b|q:b:0");
    assert!(b.notes.is_empty());
    assert!(!a.is_finished());
    waits.release.add_permits(1);
    let a = a.await.unwrap().unwrap();
    assert_eq!(a.value.text, "wait+a|q:a:0");
    assert_eq!(
        waits.most_at_once.load(Ordering::SeqCst),
        2,
        "both calls ran in the plugin at once"
    );
}

#[actix_rt::test]
async fn a_sessions_second_call_waits_for_its_first() {
    tokio::time::pause();
    let waits = Waits::new();
    let pipeline = Pipeline::builder()
        .plugin(PluginRegistration::new("w").with_hooks(waits.clone()))
        .start()
        .unwrap();
    let first = spawn_call(&pipeline, "a", "wait-1");
    waits.entered.notified().await;
    let mut second = spawn_call(&pipeline, "a", "go-2");
    let held = tokio::time::timeout(Duration::from_secs(5), &mut second).await;
    assert!(
        held.is_err(),
        "the second call of a session must wait for its first"
    );
    waits.release.add_permits(1);
    assert_eq!(first.await.unwrap().unwrap().value.text, "wait-1+a");
    assert_eq!(second.await.unwrap().unwrap().value.text, "go-2+a");
    assert_eq!(waits.most_at_once.load(Ordering::SeqCst), 1);
}

#[actix_rt::test]
async fn a_one_call_at_a_time_plugin_serialises_sessions() {
    tokio::time::pause();
    let waits = Waits::new();
    let pipeline = Pipeline::builder()
        .plugin(
            PluginRegistration::new("w")
                .with_hooks(waits.clone())
                .one_call_at_a_time(),
        )
        .start()
        .unwrap();
    let a = spawn_call(&pipeline, "a", "wait");
    waits.entered.notified().await;
    let mut b = spawn_call(&pipeline, "b", "go");
    let held = tokio::time::timeout(Duration::from_secs(5), &mut b).await;
    assert!(held.is_err(), "b must wait while the plugin is busy with a");
    waits.release.add_permits(1);
    assert_eq!(a.await.unwrap().unwrap().value.text, "wait+a");
    let b = b.await.unwrap().unwrap();
    assert_eq!(b.value.text, "go+b");
    assert!(b.notes.is_empty());
    assert_eq!(waits.most_at_once.load(Ordering::SeqCst), 1);
}

#[actix_rt::test]
async fn waiting_for_a_one_call_at_a_time_plugin_counts_against_the_timeout() {
    tokio::time::pause();
    let waits = Waits::new();
    let pipeline = Pipeline::builder()
        .plugin(
            PluginRegistration::new("w")
                .with_hooks(waits.clone())
                .one_call_at_a_time()
                .with_timeout(HookKind::OnUserMessage, Duration::from_secs(3)),
        )
        .start()
        .unwrap();
    // Session a's tool call holds the plugin for its whole 10 s; b's message waits 3 s at most.
    let a = {
        let pipeline = pipeline.clone();
        actix_rt::spawn(async move {
            pipeline
                .call::<OnToolCall>(&session("a"), tool_call())
                .await
        })
    };
    waits.entered.notified().await;
    let started = tokio::time::Instant::now();
    let b = pipeline
        .call::<OnUserMessage>(&session("b"), UserMessage::new("go"))
        .await
        .unwrap();
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(3) && waited < Duration::from_millis(3100),
        "{waited:?}"
    );
    assert_eq!(b.value.text, "go");
    assert_eq!(
        notes(&b),
        ["Plugin hook 'w' user-message was skipped: it timed out after 3 s."]
    );
    let a = a.await.unwrap().unwrap();
    assert_eq!(
        notes(&a),
        ["Plugin hook 'w' tool-call was skipped: it timed out after 10 s."]
    );
}

#[actix_rt::test]
async fn a_timed_out_call_frees_a_one_call_at_a_time_plugin() {
    tokio::time::pause();
    let waits = Waits::new();
    let pipeline = Pipeline::builder()
        .plugin(
            PluginRegistration::new("w")
                .with_hooks(waits.clone())
                .one_call_at_a_time()
                .with_timeout(HookKind::OnUserMessage, Duration::from_secs(3)),
        )
        .start()
        .unwrap();
    let a = spawn_call(&pipeline, "a", "wait");
    waits.entered.notified().await;
    tokio::time::advance(Duration::from_secs(1)).await;
    let b = pipeline
        .call::<OnUserMessage>(&session("b"), UserMessage::new("go"))
        .await
        .unwrap();
    assert_eq!(b.value.text, "go+b");
    assert!(b.notes.is_empty());
    let a = a.await.unwrap().unwrap();
    assert_eq!(
        notes(&a),
        ["Plugin hook 'w' user-message was skipped: it timed out after 3 s."]
    );
}

// ---- admission bound and names ----

#[actix_rt::test]
async fn calls_beyond_max_pending_are_refused_as_overloaded() {
    tokio::time::pause();
    let waits = Waits::new();
    let pipeline = Pipeline::builder()
        .plugin(PluginRegistration::new("w").with_hooks(waits.clone()))
        .max_pending(2)
        .start()
        .unwrap();
    let a = spawn_call(&pipeline, "a", "wait");
    waits.entered.notified().await;
    let b = spawn_call(&pipeline, "b", "wait");
    waits.entered.notified().await;
    let c = pipeline
        .call::<OnUserMessage>(&session("c"), UserMessage::new("go"))
        .await;
    assert_eq!(c, Err(PipelineError::Overloaded));
    // A call queued behind its own session counts too.
    let a2 = pipeline
        .call::<OnUserMessage>(&session("a"), UserMessage::new("go"))
        .await;
    assert_eq!(a2, Err(PipelineError::Overloaded));
    waits.release.add_permits(2);
    assert!(a.await.unwrap().is_ok());
    assert!(b.await.unwrap().is_ok());
    let c = pipeline
        .call::<OnUserMessage>(&session("c"), UserMessage::new("go"))
        .await
        .unwrap();
    assert_eq!(c.value.text, "go+c", "admitted again once calls finish");
}

#[actix_rt::test]
async fn two_plugins_with_one_name_do_not_start() {
    let plugin = Scripted::<UserMessage>::build(HookKind::OnUserMessage, Act::Keep, 0);
    let started = Pipeline::builder()
        .plugin(register("a", &plugin))
        .plugin(register("dup", &plugin))
        .plugin(register("dup", &plugin))
        .start();
    match started {
        Err(error) => {
            assert_eq!(error, StartError::DuplicateName("dup".into()));
            assert_eq!(error.to_string(), "two plugins are named 'dup'");
        }
        Ok(_) => panic!("duplicate names started"),
    }
}

#[actix_rt::test]
async fn a_stopped_pipeline_answers_stopped() {
    let plugin = Scripted::<UserMessage>::build(HookKind::OnUserMessage, Act::Keep, 0);
    let pipeline = Pipeline::builder()
        .plugin(register("p", &plugin))
        .start()
        .unwrap();
    pipeline.stop().await;
    let result = pipeline
        .call::<OnUserMessage>(&session("s"), UserMessage::new("m"))
        .await;
    assert_eq!(result, Err(PipelineError::Stopped));
}
