//! The benchmark workload: appender plugins, in-process and as a plain direct loop.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hookline_actors::plugin::{PluginRegistration, Reply};
use hookline_messages::hook::{OnPrompt, OnToolCall, OnUserMessage};
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

impl Appender {
    /// The tool call with the suffix appended to its name.
    pub fn renamed(&self, call: &ToolCall) -> ToolCall {
        ToolCall {
            name: format!("{}{}", call.name, self.suffix),
            ..call.clone()
        }
    }

    /// The registration of this appender on the fast paths: `on_user_message` appends to the
    /// message in place (`PluginRegistration::edit` with `Draft::append`: the append is the hook's
    /// only work, no copy is kept); `on_prompt` and `on_tool_call` answer at once with a
    /// replacement.
    pub fn registration(self, name: impl Into<Arc<str>>) -> PluginRegistration {
        let me = Arc::new(self);
        let (prompt, tool) = (me.clone(), me.clone());
        PluginRegistration::new(name)
            .edit(OnUserMessage, move |_, message| {
                message.append(&me.suffix);
                Ok(())
            })
            .on(OnPrompt, move |_, p| {
                Ok(Reply::Replace(p.clone().append(prompt.suffix.as_str())))
            })
            .on(OnToolCall, move |_, call| {
                Ok(Reply::Replace(tool.renamed(call)))
            })
    }
}

/// `count` appender plugins, named `append-0` ... in load order.
pub fn appender_plugins(count: usize) -> Vec<PluginRegistration> {
    (0..count)
        .map(|i| Appender::new(i).registration(format!("append-{i}")))
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
