//! Write external hookline plugins in Rust. A [`Plugin`] collects typed handlers for hooks, raw
//! hooks, gateway events and tools; [`Plugin::run`] speaks the protocol of `docs/protocol.md`
//! on stdin/stdout: the hello is built from what is registered (nothing implemented goes
//! unlisted), requests are answered by id with many in flight (each is its own task; sync
//! handlers run on the blocking pool), `cancel` aborts the call and sends no reply, and
//! `goodbye` or the end of stdin ends the plugin.
//!
//! ```no_run
//! use hookline_plugin::messages::hook::OnUserMessage;
//! use hookline_plugin::{Plugin, ToolDecl};
//!
//! fn main() -> std::io::Result<()> {
//!     let mut plugin = Plugin::new();
//!     plugin.hook_sync::<OnUserMessage>(|mut message, _cx| {
//!         message.text.push_str(" [seen]");
//!         Ok(Some(message))
//!     });
//!     plugin.tool(ToolDecl::read("echo", "Returns its text."), |arguments, cx| async move {
//!         let text = arguments["text"].as_str().unwrap_or_default().to_owned();
//!         Ok(format!("{text} (session {})", cx.session))
//!     });
//!     plugin.run()
//! }
//! ```

mod serve;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use hookline_messages::hook::{Hook, HookKind, HookSet};
use hookline_messages::protocol::{Hello, ReplyBody, RequestId};
use hookline_messages::session::ApprovalMode;
use serde_json::Value;

pub use hookline_messages as messages;
pub use hookline_messages::approval::{Authority, Risk};
pub use hookline_messages::protocol::ToolDecl as WireToolDecl;

/// What a handler's future resolves to.
type Boxed<T> = Pin<Box<dyn Future<Output = T> + Send>>;
/// A type-erased hook or event handler: JSON in, reply out.
type RawHandler = Arc<dyn Fn(Value, Context) -> Boxed<ReplyBody> + Send + Sync>;
/// A type-erased tool handler.
type ToolHandler = Arc<dyn Fn(Value, ToolContext) -> Boxed<ToolAnswer> + Send + Sync>;

/// A tool's answer: the text, or a failure's text.
pub type ToolAnswer = Result<String, String>;

/// What a hook or event handler knows about its call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Context {
    /// The request id.
    pub id: RequestId,
    /// The hook's wire name, or the event key.
    pub name: String,
    /// The session the call belongs to (empty for events).
    pub session: String,
    /// The W3C trace context of the host's span for this call (`00-<trace>-<span>-<flags>`), when
    /// the host exports traces: start your own spans under it to join the turn's trace.
    pub traceparent: Option<String>,
}

/// What a tool knows about its call: the session facts hooks read (SPEC P2.1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolContext {
    /// The request id.
    pub id: RequestId,
    /// The tool's name.
    pub tool: String,
    /// The session calling it.
    pub session: String,
    /// The session's workspace root.
    pub workspace_root: String,
    /// The session's approval mode at the time of the call.
    pub approval_mode: ApprovalMode,
    /// The W3C trace context of the host's span for this call (`00-<trace>-<span>-<flags>`), when
    /// the host exports traces: start your own spans under it to join the turn's trace.
    pub traceparent: Option<String>,
}

/// A tool a plugin declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolDecl(pub WireToolDecl);

impl ToolDecl {
    /// A read-only tool acting in the workspace.
    pub fn read(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self::new(name, description, Risk::Read, Authority::Workspace)
    }

    /// A tool with the given risk and authority.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        risk: Risk,
        authority: Authority,
    ) -> Self {
        Self(WireToolDecl {
            name: name.into(),
            description: description.into(),
            risk,
            authority,
        })
    }
}

/// A plugin's handlers. Register them, then [`Plugin::run`].
#[derive(Default, Clone)]
pub struct Plugin {
    hooks: BTreeMap<HookKind, RawHandler>,
    events: Vec<(String, RawHandler)>,
    tools: Vec<(WireToolDecl, ToolHandler)>,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("hello", &self.hello())
            .finish()
    }
}

impl Plugin {
    /// A plugin with no handlers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Handles hook `H` (ordinary or raw: `H::KIND` decides) with an async handler
    /// (`plugin.hook::<OnPrompt, _>(|prompt, cx| async move { .. })`):
    /// `Ok(None)` keeps the value, `Ok(Some(v))` replaces it, `Err(why)` skips the hook with
    /// `why` as the note. A second handler for the same hook replaces the first.
    pub fn hook<H, Fut>(
        &mut self,
        handler: impl Fn(H::Value, Context) -> Fut + Send + Sync + 'static,
    ) -> &mut Self
    where
        H: Hook,
        Fut: Future<Output = Result<Option<H::Value>, String>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let erased: RawHandler = Arc::new(move |value, cx| {
            let handler = handler.clone();
            Box::pin(async move {
                match serde_json::from_value::<H::Value>(value) {
                    Ok(value) => reply(handler(value, cx).await),
                    Err(error) => ReplyBody::Error(format!("the value did not decode: {error}")),
                }
            })
        });
        self.hooks.insert(H::KIND, erased);
        self
    }

    /// Handles hook `H` with a blocking handler (run on the blocking pool, so other calls go on).
    pub fn hook_sync<H: Hook>(
        &mut self,
        handler: impl Fn(H::Value, Context) -> Result<Option<H::Value>, String> + Send + Sync + 'static,
    ) -> &mut Self {
        let handler = Arc::new(handler);
        self.hook::<H, _>(move |value, cx| {
            let handler = handler.clone();
            blocking(move || handler(value, cx))
        })
    }

    /// Subscribes an async handler to a gateway event key or family (`command:new`,
    /// `session`). `Ok(None)` is the usual answer; only `agent:bootstrap` may return a
    /// replacement (its `bootstrapFiles`).
    pub fn event<F, Fut>(&mut self, key: impl Into<String>, handler: F) -> &mut Self
    where
        F: Fn(Value, Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Option<Value>, String>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let erased: RawHandler = Arc::new(move |value, cx| {
            let handler = handler.clone();
            Box::pin(async move { reply(handler(value, cx).await) })
        });
        self.events.push((key.into(), erased));
        self
    }

    /// Declares a tool with an async handler: `Ok(text)` succeeds, `Err(text)` fails.
    pub fn tool<F, Fut>(&mut self, decl: ToolDecl, handler: F) -> &mut Self
    where
        F: Fn(Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ToolAnswer> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let erased: ToolHandler = Arc::new(move |arguments, cx| {
            let handler = handler.clone();
            Box::pin(async move { handler(arguments, cx).await })
        });
        self.tools
            .retain(|(existing, _)| existing.name != decl.0.name);
        self.tools.push((decl.0, erased));
        self
    }

    /// Declares a tool with a blocking handler (run on the blocking pool).
    pub fn tool_sync<F>(&mut self, decl: ToolDecl, handler: F) -> &mut Self
    where
        F: Fn(Value, ToolContext) -> ToolAnswer + Send + Sync + 'static,
    {
        let handler = Arc::new(handler);
        self.tool(decl, move |arguments, cx| {
            let handler = handler.clone();
            async move {
                blocking(move || Ok(handler(arguments, cx)))
                    .await
                    .and_then(|answer| answer)
            }
        })
    }

    /// The hello: exactly the hooks, raw hooks, events and tools registered.
    pub fn hello(&self) -> Hello {
        let kinds: Vec<HookKind> = self.hooks.keys().copied().collect();
        let all = HookSet::of(&kinds);
        let mut hello = Hello::new();
        hello.hooks = all.ordinary_only();
        hello.raw_hooks = all.raw_only();
        hello.events = self.events.iter().map(|(key, _)| key.clone()).collect();
        hello.tools = self.tools.iter().map(|(decl, _)| decl.clone()).collect();
        hello
    }

    /// Serves the protocol on the process's stdin and stdout until `goodbye` or end of input.
    ///
    /// # Errors
    /// The runtime cannot start, or stdout cannot be written.
    pub fn run(self) -> std::io::Result<()> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        runtime.block_on(self.serve(tokio::io::stdin(), tokio::io::stdout()))
    }

    /// Serves the protocol on `input` and `output` (a test can pass in-memory pipes).
    ///
    /// # Errors
    /// `output` cannot be written.
    pub async fn serve<R, W>(self, input: R, output: W) -> std::io::Result<()>
    where
        R: tokio::io::AsyncRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        serve::serve(Arc::new(self), input, output).await
    }

    fn event_handler(&self, key: &str) -> Option<RawHandler> {
        let family = key.split(':').next().unwrap_or(key);
        let exact = self.events.iter().find(|(k, _)| k == key);
        exact
            .or_else(|| self.events.iter().find(|(k, _)| k == family))
            .map(|(_, handler)| handler.clone())
    }
}

/// A handler's result as a reply.
fn reply<T: serde::Serialize>(result: Result<Option<T>, String>) -> ReplyBody {
    match result {
        Ok(None) => ReplyBody::Keep,
        Ok(Some(value)) => match serde_json::to_value(value) {
            Ok(value) => ReplyBody::Replace(value),
            Err(error) => ReplyBody::Error(error.to_string()),
        },
        Err(message) => ReplyBody::Error(message),
    }
}

/// Runs `work` on the blocking pool; a panic becomes an error.
fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Boxed<Result<T, String>> {
    Box::pin(async move {
        tokio::task::spawn_blocking(work)
            .await
            .unwrap_or_else(|_| Err("the handler panicked".to_owned()))
    })
}
