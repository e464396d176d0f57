//! `word_count`: a tool the example plugins contribute (provider `plugin`).

use async_trait::async_trait;
use hookline_messages::approval::{Authority, Risk};
use hookline_messages::tool::ToolProvider;

use crate::tools::fence::resolve;
use crate::tools::{Tool, ToolContext, ToolOutput, ToolSpec};

/// Counts the words of a workspace file.
pub struct WordCount(ToolSpec);

impl WordCount {
    /// The tool.
    pub fn new() -> Self {
        Self(ToolSpec {
            name: "word_count".into(),
            description: "Count the words of a file in the workspace.".into(),
            provider: ToolProvider::Plugin,
            risk: Risk::Read,
            authority: Authority::Workspace,
        })
    }
}

impl Default for WordCount {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for WordCount {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": { "path": { "type": "string" } },
            "required": ["path"]
        })
    }

    async fn run(&self, cx: &ToolContext, arguments: serde_json::Value) -> ToolOutput {
        let Some(path) = arguments.get("path").and_then(|p| p.as_str()) else {
            return ToolOutput::failure("word_count needs a string argument 'path'.");
        };
        let fenced = match resolve(&cx.workspace_root, path) {
            Ok(fenced) => fenced,
            Err(e) => return ToolOutput::failure(e.to_string()),
        };
        match tokio::fs::read_to_string(&fenced.path).await {
            Ok(text) => ToolOutput::success(format!("{} words", text.split_whitespace().count())),
            Err(e) => ToolOutput::failure(format!("cannot read {path}: {e}")),
        }
    }
}
