//! Tools a plugin contributes: each tool declared in a plugin's hello is a [`PluginTool`], a
//! [`Tool`] with provider [`ToolProvider::Plugin`], so the host's [`ToolRegistry`] holds it and
//! every call goes through the same `on_tool_call`, approval and `on_tool_result` as built-in and
//! external tools (SPEC P1.3).
//!
//! [`ToolRegistry`]: crate::tools::ToolRegistry

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use hookline_messages::note::SkipReason;
use hookline_messages::protocol::{
    HostMessage, ReplyBody, ToolDecl, ToolOutput as WireOutput, ToolRequest,
};
use hookline_messages::tool::ToolProvider;

use super::ExternalPlugin;
use crate::tools::{Tool, ToolContext, ToolOutput, ToolSpec};
#[cfg(feature = "wasm")]
use crate::wasm::WasmPlugin;

/// How long a plugin tool may run.
pub const TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// One tool declared in a plugin's hello, run by that plugin: in its process (an external
/// plugin) or in its sandbox (a WebAssembly plugin).
#[derive(Clone, Debug)]
pub struct PluginTool {
    runner: Runner,
    spec: ToolSpec,
}

/// The plugin that runs a [`PluginTool`].
#[derive(Clone, Debug)]
enum Runner {
    External(Arc<ExternalPlugin>),
    #[cfg(feature = "wasm")]
    Wasm(Arc<WasmPlugin>),
}

impl PluginTool {
    /// The tools `plugin` declared in its hello, in the order declared.
    pub fn all_of(plugin: &Arc<ExternalPlugin>) -> Vec<Self> {
        Self::declared(&plugin.hello().tools, || Runner::External(plugin.clone()))
    }

    /// The tools WebAssembly `plugin` declared in its hello, in the order declared.
    #[cfg(feature = "wasm")]
    pub fn all_of_wasm(plugin: &Arc<WasmPlugin>) -> Vec<Self> {
        Self::declared(&plugin.hello().tools, || Runner::Wasm(plugin.clone()))
    }

    fn declared(decls: &[ToolDecl], runner: impl Fn() -> Runner) -> Vec<Self> {
        decls
            .iter()
            .map(|decl| Self {
                runner: runner(),
                spec: spec_of(decl),
            })
            .collect()
    }

    /// Whether `plugin` runs it.
    pub(crate) fn is_of(&self, plugin: &Arc<ExternalPlugin>) -> bool {
        matches!(&self.runner, Runner::External(runner) if Arc::ptr_eq(runner, plugin))
    }

    /// The plugin that runs it.
    pub fn plugin_name(&self) -> &str {
        match &self.runner {
            Runner::External(plugin) => plugin.name(),
            #[cfg(feature = "wasm")]
            Runner::Wasm(plugin) => plugin.name(),
        }
    }

    /// Decodes the plugin's reply to a tool request.
    fn output(&self, reply: Result<ReplyBody, SkipReason>) -> ToolOutput {
        let plugin = self.plugin_name();
        match reply {
            Ok(ReplyBody::Replace(value)) => match serde_json::from_value::<WireOutput>(value) {
                Ok(out) if out.success => ToolOutput::success(out.text),
                Ok(out) => ToolOutput::failure(out.text),
                Err(_) => ToolOutput::failure(format!(
                    "Plugin '{plugin}' returned a tool result that could not be decoded."
                )),
            },
            Ok(ReplyBody::Keep) => {
                ToolOutput::failure(format!("Plugin '{plugin}' returned no tool result."))
            }
            Ok(ReplyBody::Error(message)) => ToolOutput::failure(message),
            Err(reason) => ToolOutput::failure(format!(
                "Plugin '{plugin}' tool '{}' failed: {reason}",
                self.spec.name
            )),
        }
    }
}

/// The registry's view of a declaration: provider `plugin`, the plugin's risk and authority.
fn spec_of(decl: &ToolDecl) -> ToolSpec {
    ToolSpec {
        name: decl.name.clone(),
        description: decl.description.clone(),
        provider: ToolProvider::Plugin,
        risk: decl.risk,
        authority: decl.authority,
    }
}

#[async_trait]
impl Tool for PluginTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    /// Runs the tool in the plugin, under [`TOOL_TIMEOUT`]. Never fails and never hangs: every
    /// problem becomes `success: false` with an English text.
    async fn run(&self, cx: &ToolContext, arguments: serde_json::Value) -> ToolOutput {
        let tool = self.spec.name.clone();
        let workspace_root = cx.workspace_root.display().to_string();
        let session = cx.session_id.to_string();
        let approval_mode = cx.approval_mode;
        let build = move |id| {
            HostMessage::Tool(ToolRequest {
                id,
                tool,
                arguments,
                workspace_root,
                session,
                approval_mode,
                traceparent: None,
            })
        };
        let reply = match &self.runner {
            Runner::External(plugin) => plugin.request(TOOL_TIMEOUT, build).await,
            #[cfg(feature = "wasm")]
            Runner::Wasm(plugin) => plugin.request(TOOL_TIMEOUT, build).await,
        };
        self.output(reply)
    }
}
