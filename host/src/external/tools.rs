//! Tools a plugin contributes, as something the host's tool registry can hold.
//!
//! The registry (`host::tools`, branch `store-tools`) has not landed on this branch yet.
//! [`PluginTool`] has the shape of its `Tool` trait (`spec`, `run(cx, arguments) -> output`), so
//! `impl Tool for PluginTool` is a few lines once it lands.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hookline_messages::protocol::{HostMessage, ReplyBody, ToolDecl, ToolOutput, ToolRequest};

use super::ExternalPlugin;

/// How long a plugin tool may run.
pub const TOOL_TIMEOUT: Duration = Duration::from_secs(60);

/// What a tool run returns; errors are `success: false` with an English text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginToolOutput {
    /// The result text.
    pub text: String,
    /// Whether the tool succeeded.
    pub success: bool,
}

/// One tool declared in a plugin's hello, run by that plugin's process.
#[derive(Clone, Debug)]
pub struct PluginTool {
    plugin: Arc<ExternalPlugin>,
    decl: ToolDecl,
}

impl PluginTool {
    /// The tools `plugin` declared in its hello.
    pub fn all_of(plugin: &Arc<ExternalPlugin>) -> Vec<Self> {
        plugin
            .hello()
            .tools
            .iter()
            .map(|decl| Self {
                plugin: plugin.clone(),
                decl: decl.clone(),
            })
            .collect()
    }

    /// The tool's declaration: name, description, risk and authority.
    pub fn spec(&self) -> &ToolDecl {
        &self.decl
    }

    /// The plugin that runs it.
    pub fn plugin_name(&self) -> &str {
        self.plugin.name()
    }

    /// Runs the tool. Never fails and never hangs: every problem becomes `success: false`.
    pub async fn run(
        &self,
        workspace_root: &Path,
        arguments: serde_json::Value,
    ) -> PluginToolOutput {
        let tool = self.decl.name.clone();
        let workspace_root = workspace_root.display().to_string();
        let reply = self
            .plugin
            .request(TOOL_TIMEOUT, move |id| {
                HostMessage::Tool(ToolRequest {
                    id,
                    tool,
                    arguments,
                    workspace_root,
                })
            })
            .await;
        let failed = |text: String| PluginToolOutput {
            text,
            success: false,
        };
        match reply {
            Ok(ReplyBody::Replace(value)) => match serde_json::from_value::<ToolOutput>(value) {
                Ok(out) => PluginToolOutput {
                    text: out.text,
                    success: out.success,
                },
                Err(_) => failed(format!(
                    "Plugin '{}' returned a tool result that could not be decoded.",
                    self.plugin_name()
                )),
            },
            Ok(ReplyBody::Keep) => failed(format!(
                "Plugin '{}' returned no tool result.",
                self.plugin_name()
            )),
            Ok(ReplyBody::Error(message)) => failed(message),
            Err(reason) => failed(format!(
                "Plugin '{}' tool '{}' failed: {reason}",
                self.plugin_name(),
                self.decl.name
            )),
        }
    }
}
