//! Tools: the [`Tool`] trait every provider implements, the [`ToolRegistry`], the built-in file
//! tools fenced to the workspace root, and external tools declared by a manifest (issue 4 item 3,
//! issue 8 item 4).
//!
//! Whoever provides a tool (built in, a plugin, an external executable), the host calls it the
//! same way, after the same hooks and the same approval (SPEC P1.3). A tool never panics and
//! never hangs: every failure becomes a [`ToolOutput`] with `success: false` and an English text.
//!
//! - Built-in tools ([`ToolRegistry::with_builtins`]): `read_file`, `list_dir`, `write_file`.
//!   Every path goes through one fence ([`fence::resolve`]): `..` escapes, absolute paths outside
//!   the root and symbolic links that resolve outside are refused.
//! - External tools ([`ToolRegistry::load_external`]): one subdirectory per tool with a
//!   `tool.json` manifest; see [`external`] for the manifest and the stdin/stdout protocol.
//!
//! ```
//! use hookline_host::tools::{ToolContext, ToolRegistry};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! let workspace = tempfile::tempdir()?;
//! std::fs::write(workspace.path().join("notes.txt"), "hello")?;
//! let cx = ToolContext {
//!     workspace_root: workspace.path().to_path_buf(),
//!     session_id: "s1".into(),
//!     approval_mode: Default::default(),
//! };
//!
//! let tools = ToolRegistry::with_builtins();
//! let read = tools.get("read_file").ok_or(std::io::ErrorKind::NotFound)?;
//! let output = read.run(&cx, json!({"path": "notes.txt"})).await;
//! assert!(output.success, "{}", output.text);
//! assert_eq!(output.text, "hello");
//!
//! // The fence: nothing outside the workspace root.
//! let output = read.run(&cx, json!({"path": "../../etc/passwd"})).await;
//! assert!(!output.success);
//! # Ok(())
//! # }
//! ```

mod builtin;
pub mod external;
pub mod fence;
mod registry;

use std::path::PathBuf;

use async_trait::async_trait;
use hookline_messages::approval::{Authority, Risk};
use hookline_messages::model::ImageRef;
use hookline_messages::session::{ApprovalMode, SessionId, SessionInfo};
use hookline_messages::tool::ToolProvider;
use serde::Serialize;

pub use builtin::{
    ListDir, ReadFile, WriteFile, MAX_LIST_ENTRIES, MAX_READ_BYTES, MAX_WRITE_BYTES,
};
pub use external::ExternalTool;
pub use registry::{ToolError, ToolRegistry};

/// What the host knows about a tool: its name, what it does, who provides it, and how the
/// approval classifier rates it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    /// The name the model calls it by; unique in a registry.
    pub name: String,
    /// One line for the model and the operator.
    pub description: String,
    /// Who provides it.
    pub provider: ToolProvider,
    /// How risky a call is.
    pub risk: Risk,
    /// Where a call acts.
    pub authority: Authority,
}

/// What a tool may know about the session calling it: the facts session hooks read (SPEC P2.1),
/// the same for every tool whoever provides it (SPEC P1.3), taken when the call runs (so a mode
/// changed mid-session is the mode the tool sees).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolContext {
    /// The session's workspace root; built-in file tools stay inside it.
    pub workspace_root: PathBuf,
    /// The session calling the tool.
    pub session_id: SessionId,
    /// The session's approval mode at the time of the call.
    pub approval_mode: ApprovalMode,
}

impl ToolContext {
    /// The context of a call made in the session `info` describes, as it is now.
    pub fn of(info: &SessionInfo) -> Self {
        Self {
            workspace_root: PathBuf::from(&info.workspace_root),
            session_id: info.session_id.clone(),
            approval_mode: info.approval_mode,
        }
    }
}

/// A tool's answer. Failures are answers too: `success: false` and an English text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ToolOutput {
    /// The result text the model sees.
    pub text: String,
    /// Images the result carries, as markers.
    pub images: Vec<ImageRef>,
    /// Whether the tool did what was asked.
    pub success: bool,
}

impl ToolOutput {
    /// A successful answer with `text` and no images.
    pub fn success(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            images: Vec::new(),
            success: true,
        }
    }

    /// A failed answer explaining why in `text`.
    pub fn failure(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            images: Vec::new(),
            success: false,
        }
    }
}

/// A tool the host can run.
#[async_trait]
pub trait Tool: Send + Sync + 'static {
    /// The tool's name, description, provider and classification.
    fn spec(&self) -> &ToolSpec;

    /// The JSON Schema of the tool's arguments, as a model provider offers it to the model
    /// (`docs/providers.md`). The default accepts any object.
    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({ "type": "object" })
    }

    /// Runs one call. Never panics and never hangs: errors become `success: false` with an
    /// English text.
    async fn run(&self, cx: &ToolContext, arguments: serde_json::Value) -> ToolOutput;
}
