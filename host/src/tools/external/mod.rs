//! External tools: executables declared by a manifest in a tools directory.
//!
//! The tools directory holds one subdirectory per tool, each with a `tool.json`:
//!
//! ```json
//! {
//!   "name": "word_count",
//!   "description": "Count the words of a text.",
//!   "command": "run.sh",
//!   "args": [],
//!   "risk": "read",
//!   "authority": "workspace",
//!   "timeout_ms": 5000
//! }
//! ```
//!
//! `command` is a path relative to the tool's directory and must resolve (links followed) to an
//! executable file inside it. `args` (default none) and `timeout_ms` (default 30 000, at most
//! 600 000) are optional; `risk` is `read`, `write`, `execute` or `critical`, `authority` is
//! `workspace` or `host`. Unknown fields are refused.
//!
//! A call runs the command with its directory as working directory, writes the call's JSON
//! arguments to its stdin and closes it, and reads one JSON object `{"text": string,
//! "success": bool}` from its stdout. The process gets only an allowlisted environment
//! ([`ALLOWED_ENV`] plus `HOOKLINE_WORKSPACE_ROOT`, `HOOKLINE_SESSION_ID`,
//! `HOOKLINE_APPROVAL_MODE` and `HOOKLINE_TOOL_NAME`), so the host's
//! secrets are not inherited. Its stdout is capped at [`MAX_STDOUT_BYTES`] and its stderr kept up
//! to [`MAX_STDERR_BYTES`]; past the timeout or the stdout cap its whole process group is
//! killed. Every failure is an answer with `success: false`, never a panic or a hang.

mod manifest;
mod process;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use hookline_messages::tool::ToolProvider;

use super::{Tool, ToolContext, ToolOutput, ToolSpec};
use manifest::Manifest;

pub use manifest::MANIFEST;
pub use process::{ALLOWED_ENV, MAX_STDERR_BYTES, MAX_STDOUT_BYTES};

/// A tool run as an external process, loaded from its directory's manifest.
#[derive(Debug)]
pub struct ExternalTool {
    spec: ToolSpec,
    manifest: Manifest,
}

impl ExternalTool {
    /// Loads the tool in `dir` from its `tool.json`.
    ///
    /// # Errors
    /// An English sentence naming the directory and the problem.
    pub fn load(dir: &Path) -> Result<Self, String> {
        let manifest = manifest::load(dir).map_err(|problem| {
            format!("Skipped the external tool in {}: {problem}.", dir.display())
        })?;
        let spec = ToolSpec {
            name: manifest.name.clone(),
            description: manifest.description.clone(),
            provider: ToolProvider::External,
            risk: manifest.risk,
            authority: manifest.authority,
        };
        Ok(Self { spec, manifest })
    }

    /// The tool's directory (canonical).
    pub fn dir(&self) -> &Path {
        &self.manifest.dir
    }
}

#[async_trait]
impl Tool for ExternalTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, cx: &ToolContext, arguments: serde_json::Value) -> ToolOutput {
        process::run(&self.manifest, cx, &arguments).await
    }
}

/// Loads every tool under `dir`, in name order; returns them and the problems of the skipped.
pub(crate) fn load_dir(dir: &Path) -> (Vec<ExternalTool>, Vec<String>) {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return (Vec::new(), Vec::new()),
        Err(e) => {
            let problem = format!("Could not list the tools directory {}: {e}.", dir.display());
            return (Vec::new(), vec![problem]);
        }
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let (mut tools, mut problems) = (Vec::new(), Vec::new());
    for tool_dir in dirs {
        match ExternalTool::load(&tool_dir) {
            Ok(tool) => tools.push(tool),
            Err(problem) => problems.push(problem),
        }
    }
    (tools, problems)
}
