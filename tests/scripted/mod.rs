//! Test plugins for the pipeline tests: [`Scripted`] implements exactly one hook (ordinary or
//! raw) with a scripted act, and logs every value it is sent.

#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::type_complexity
)]

use std::any::Any;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use hookline::actors::plugin::{
    HookError, HookResult, Plugin, PluginRegistration, RawHooks, Reply,
};
use hookline::actors::Outcome;
use hookline::messages::approval::{Authority, Classification, Risk};
use hookline::messages::compaction::{Compaction, CompactionText};
use hookline::messages::hook::{Hook, HookContext, HookKind, HookSet};
use hookline::messages::model::{ModelRequest, ModelResponse};
use hookline::messages::prompt::{Prompt, SystemText};
use hookline::messages::session::{SessionId, SessionInfo};
use hookline::messages::tool::{ToolCall, ToolProvider, ToolResult};
use hookline::messages::user::{TurnInfo, UserMessage};

/// What a scripted hook does with the value it is sent.
pub enum Act<V> {
    /// Hand the value on unchanged.
    Keep,
    /// Return `f(value)` (for read-only hooks: compute it and return nothing).
    Replace(Box<dyn Fn(&HookContext, V) -> V + Send + Sync>),
    /// Return this error.
    Fail(String),
    /// Panic.
    Panic,
    /// Never answer.
    Hang,
}

/// A plugin implementing exactly hook `kind` with `act`. It panics on its first
/// `panics_first` calls, then acts.
pub struct Scripted<V> {
    kind: HookKind,
    act: Act<V>,
    panics_first: AtomicUsize,
    log: Mutex<Vec<(SessionId, V)>>,
}

impl<V: Clone + Send + 'static> Scripted<V> {
    pub fn new<H: Hook<Value = V>>(act: Act<V>) -> Arc<Self> {
        Self::build(H::KIND, act, 0)
    }

    pub fn build(kind: HookKind, act: Act<V>, panics_first: usize) -> Arc<Self> {
        Arc::new(Self {
            kind,
            act,
            panics_first: AtomicUsize::new(panics_first),
            log: Mutex::new(vec![]),
        })
    }

    /// The values this plugin was sent, in order.
    pub fn seen(&self) -> Vec<V> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// How many calls this plugin received.
    pub fn calls(&self) -> usize {
        self.log.lock().unwrap().len()
    }

    async fn run<T: Send + 'static>(&self, cx: &HookContext, value: T) -> HookResult<Reply<T>> {
        let value: V =
            cast(value).ok_or_else(|| HookError::msg("sent a hook it does not declare"))?;
        self.log
            .lock()
            .unwrap()
            .push((cx.session_id.clone(), value.clone()));
        let panic_now = self
            .panics_first
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if panic_now {
            panic!("scripted panic");
        }
        match &self.act {
            Act::Keep => Ok(Reply::Keep),
            Act::Replace(f) => Ok(Reply::Replace(cast(f(cx, value)).expect("same type"))),
            Act::Fail(message) => Err(HookError::msg(message.clone())),
            Act::Panic => panic!("scripted panic"),
            Act::Hang => std::future::pending().await,
        }
    }

    async fn read_only<T: Send + 'static>(&self, cx: &HookContext, value: T) -> HookResult<()> {
        // A read-only hook may do what it likes with its copy; nothing comes back.
        self.run(cx, value).await.map(drop)
    }
}

fn cast<A: 'static, B: 'static>(value: A) -> Option<B> {
    (Box::new(value) as Box<dyn Any>)
        .downcast::<B>()
        .ok()
        .map(|b| *b)
}

/// A registration for `plugin` under `name`, on the ordinary or raw interface as its hook is.
pub fn register<V: Clone + Send + Sync + 'static>(
    name: &str,
    plugin: &Arc<Scripted<V>>,
) -> PluginRegistration {
    let registration = PluginRegistration::new(name);
    if plugin.kind.is_raw() {
        registration.with_raw_hooks(plugin.clone())
    } else {
        registration.with_hooks(plugin.clone())
    }
}

#[async_trait]
impl<V: Clone + Send + Sync + 'static> Plugin for Scripted<V> {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[self.kind])
    }
    async fn on_session_started(&self, cx: &HookContext, v: SessionInfo) -> HookResult<()> {
        self.read_only(cx, v).await
    }
    async fn on_session_ended(&self, cx: &HookContext, v: SessionInfo) -> HookResult<()> {
        self.read_only(cx, v).await
    }
    async fn on_prompt(&self, cx: &HookContext, v: Prompt) -> HookResult<Reply<Prompt>> {
        self.run(cx, v).await
    }
    async fn on_user_message(
        &self,
        cx: &HookContext,
        v: UserMessage,
    ) -> HookResult<Reply<UserMessage>> {
        self.run(cx, v).await
    }
    async fn on_turn_started(&self, cx: &HookContext, v: TurnInfo) -> HookResult<()> {
        self.read_only(cx, v).await
    }
    async fn on_turn_finished(&self, cx: &HookContext, v: TurnInfo) -> HookResult<()> {
        self.read_only(cx, v).await
    }
    async fn transform_model(
        &self,
        cx: &HookContext,
        v: ModelRequest,
    ) -> HookResult<Reply<ModelRequest>> {
        self.run(cx, v).await
    }
    async fn on_model_response(&self, cx: &HookContext, v: ModelResponse) -> HookResult<()> {
        self.read_only(cx, v).await
    }
    async fn on_tool_call(&self, cx: &HookContext, v: ToolCall) -> HookResult<Reply<ToolCall>> {
        self.run(cx, v).await
    }
    async fn on_tool_result(
        &self,
        cx: &HookContext,
        v: ToolResult,
    ) -> HookResult<Reply<ToolResult>> {
        self.run(cx, v).await
    }
    async fn on_approval(
        &self,
        cx: &HookContext,
        v: Classification,
    ) -> HookResult<Reply<Classification>> {
        self.run(cx, v).await
    }
    async fn on_compaction(
        &self,
        cx: &HookContext,
        v: Compaction,
    ) -> HookResult<Reply<Compaction>> {
        self.run(cx, v).await
    }
}

#[async_trait]
impl<V: Clone + Send + Sync + 'static> RawHooks for Scripted<V> {
    fn raw_hooks(&self) -> HookSet {
        HookSet::of(&[self.kind])
    }
    async fn rebuild_model(
        &self,
        cx: &HookContext,
        v: ModelRequest,
    ) -> HookResult<Reply<ModelRequest>> {
        self.run(cx, v).await
    }
    async fn rewrite_prompt(
        &self,
        cx: &HookContext,
        v: SystemText,
    ) -> HookResult<Reply<SystemText>> {
        self.run(cx, v).await
    }
    async fn rewrite_compaction(
        &self,
        cx: &HookContext,
        v: CompactionText,
    ) -> HookResult<Reply<CompactionText>> {
        self.run(cx, v).await
    }
    async fn rewrite_approval(
        &self,
        cx: &HookContext,
        v: Classification,
    ) -> HookResult<Reply<Classification>> {
        self.run(cx, v).await
    }
}

/// A replacing act from a closure that ignores the context.
pub fn replace<V>(f: impl Fn(V) -> V + Send + Sync + 'static) -> Act<V> {
    Act::Replace(Box::new(move |_, v| f(v)))
}

/// The notes of an outcome, as text.
pub fn notes<T>(outcome: &Outcome<T>) -> Vec<String> {
    outcome.notes.iter().map(ToString::to_string).collect()
}

/// The names in `changed_by`.
pub fn changed_by<T>(outcome: &Outcome<T>) -> Vec<String> {
    outcome.changed_by.iter().map(|n| n.to_string()).collect()
}

pub fn session(id: &str) -> SessionId {
    SessionId::new(id)
}

pub fn tool_call() -> ToolCall {
    ToolCall {
        call_id: "c1".into(),
        name: "read_file".into(),
        arguments: serde_json::json!({"path": "a.txt"}),
        provider: ToolProvider::BuiltIn,
    }
}

pub fn classification() -> Classification {
    Classification {
        risk: Risk::Write,
        authority: Authority::Workspace,
        summary: "write a.txt".into(),
        requires_prompt: false,
    }
}

/// Runs hook `H` on `before` through three plugins named `first`, `middle` and `last`, in that
/// load order, and returns the outcome and the plugins (to read what each was sent).
pub async fn trio<H>(
    context: H::Context,
    before: H::Value,
    acts: [Act<H::Value>; 3],
) -> (Outcome<H::Value>, [Arc<Scripted<H::Value>>; 3])
where
    H: hookline::actors::plugin::Dispatch,
    H::Value: Sync,
{
    let plugins = acts.map(|act| Scripted::build(H::KIND, act, 0));
    let pipeline = hookline::actors::Pipeline::builder()
        .plugin(register("first", &plugins[0]))
        .plugin(register("middle", &plugins[1]))
        .plugin(register("last", &plugins[2]))
        .start()
        .expect("distinct names");
    let outcome = pipeline
        .call_with::<H>(&session("s1"), context, before)
        .await
        .expect("the pipeline is running");
    (outcome, plugins)
}
