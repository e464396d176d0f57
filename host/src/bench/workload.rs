//! The benchmark workload: appender plugins, in-process and as a plain direct loop.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use hookline_actors::plugin::{HookResult, Plugin, PluginRegistration, Reply};
use hookline_messages::hook::{HookContext, HookKind, HookSet};
use hookline_messages::prompt::Prompt;
use hookline_messages::tool::ToolCall;
use hookline_messages::user::UserMessage;

/// The ~64-byte text each call starts with.
pub const PAYLOAD: &str = "Please refactor the parser so that it reports the line of an error.";

/// A plugin that appends a few bytes to the user message (`on_user_message`), adds a short part
/// to the prompt (`on_prompt`) and to a tool call's name (`on_tool_call`).
#[derive(Debug, Clone)]
pub struct Appender {
    suffix: String,
}

impl Appender {
    /// An appender adding ` #<index>`.
    pub fn new(index: usize) -> Self {
        Self {
            suffix: format!(" #{index}"),
        }
    }
}

#[async_trait]
impl Plugin for Appender {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[
            HookKind::OnUserMessage,
            HookKind::OnPrompt,
            HookKind::OnToolCall,
        ])
    }

    async fn on_prompt(&self, _: &HookContext, prompt: Prompt) -> HookResult<Reply<Prompt>> {
        Ok(Reply::Replace(prompt.append(self.suffix.as_str())))
    }

    async fn on_tool_call(
        &self,
        _: &HookContext,
        mut call: ToolCall,
    ) -> HookResult<Reply<ToolCall>> {
        call.name.push_str(&self.suffix);
        Ok(Reply::Replace(call))
    }

    async fn on_user_message(
        &self,
        _: &HookContext,
        mut message: UserMessage,
    ) -> HookResult<Reply<UserMessage>> {
        message.text.push_str(&self.suffix);
        Ok(Reply::Replace(message))
    }
}

/// `count` appender plugins, named `append-0` ... in load order.
pub fn appender_plugins(count: usize) -> Vec<PluginRegistration> {
    (0..count)
        .map(|i| {
            PluginRegistration::new(format!("append-{i}")).with_hooks(Arc::new(Appender::new(i)))
        })
        .collect()
}

/// The baseline's plugin interface: plain synchronous methods, called through `dyn`.
pub trait DirectAppender {
    /// Returns the replacement.
    fn on_user_message(&self, message: UserMessage) -> UserMessage;
    /// Returns the prompt with a part appended.
    fn on_prompt(&self, prompt: Prompt) -> Prompt;
    /// Returns the renamed call.
    fn on_tool_call(&self, call: ToolCall) -> ToolCall;
}

impl DirectAppender for Appender {
    fn on_user_message(&self, mut message: UserMessage) -> UserMessage {
        message.text.push_str(&self.suffix);
        message
    }

    fn on_prompt(&self, prompt: Prompt) -> Prompt {
        prompt.append(self.suffix.as_str())
    }

    fn on_tool_call(&self, mut call: ToolCall) -> ToolCall {
        call.name.push_str(&self.suffix);
        call
    }
}

/// Runs `calls` calls through `plugins` appenders in a plain loop over `Vec<Box<dyn _>>` on this
/// thread: the physical limit the pipeline is compared with. Returns the time per call.
pub fn direct_baseline(plugins: usize, calls: u64) -> Duration {
    let chain: Vec<Box<dyn DirectAppender>> = (0..plugins)
        .map(|i| Box::new(Appender::new(i)) as Box<dyn DirectAppender>)
        .collect();
    let started = Instant::now();
    for _ in 0..calls {
        let mut message = UserMessage::new(PAYLOAD);
        for plugin in &chain {
            message = plugin.on_user_message(message);
        }
        black_box(message);
    }
    started.elapsed() / u32::try_from(calls.max(1)).unwrap_or(u32::MAX)
}
