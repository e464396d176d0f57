//! The built-in file tools: `read_file`, `list_dir`, `write_file`, each fenced to the workspace
//! root by [`fence::resolve`](super::fence::resolve) and bounded in what it reads or writes.

use std::fs;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

use async_trait::async_trait;
use hookline_messages::approval::{Authority, Risk};
use hookline_messages::tool::ToolProvider;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::fence::{self, Fenced};
use super::{Tool, ToolContext, ToolOutput, ToolSpec};

/// The most bytes `read_file` returns; a longer file is cut with a note.
pub const MAX_READ_BYTES: u64 = 256 * 1024;
/// The most entries `list_dir` returns.
pub const MAX_LIST_ENTRIES: usize = 1000;
/// The most bytes `write_file` writes in one call.
pub const MAX_WRITE_BYTES: usize = 8 * 1024 * 1024;
/// How long a built-in tool may take (a slow or stuck file system must not hang a turn).
const DEADLINE: Duration = Duration::from_secs(30);

fn builtin_spec(name: &str, description: &str, risk: Risk) -> ToolSpec {
    ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        provider: ToolProvider::BuiltIn,
        risk,
        authority: Authority::Workspace,
    }
}

/// Parses a tool's arguments, or explains the expected shape.
fn arguments<A: DeserializeOwned>(
    tool: &str,
    shape: &str,
    value: serde_json::Value,
) -> Result<A, String> {
    serde_json::from_value(value)
        .map_err(|e| format!("The {tool} tool takes arguments {shape}; these do not fit: {e}."))
}

/// Runs blocking file work off the async threads, under [`DEADLINE`].
async fn blocking<F>(tool: &str, work: F) -> ToolOutput
where
    F: FnOnce() -> Result<String, String> + Send + 'static,
{
    let task = tokio::task::spawn_blocking(work);
    match tokio::time::timeout(DEADLINE, task).await {
        Ok(Ok(Ok(text))) => ToolOutput::success(text),
        Ok(Ok(Err(problem))) => ToolOutput::failure(problem),
        Ok(Err(_)) => ToolOutput::failure(format!("The {tool} tool failed unexpectedly.")),
        Err(_) => ToolOutput::failure(format!(
            "The {tool} tool did not finish within {} seconds.",
            DEADLINE.as_secs()
        )),
    }
}

fn fenced(root: &Path, requested: &str) -> Result<Fenced, String> {
    fence::resolve(root, requested).map_err(|e| e.to_string())
}

/// `read_file {"path": string}`: the file's text (lossy UTF-8), at most [`MAX_READ_BYTES`].
#[derive(Debug)]
pub struct ReadFile(ToolSpec);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    path: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PathArgs {
    #[serde(default)]
    path: Option<String>,
}

impl ReadFile {
    /// The tool, rated Read/Workspace.
    pub fn new() -> Self {
        Self(builtin_spec(
            "read_file",
            "Read a text file inside the workspace.",
            Risk::Read,
        ))
    }
}

impl Default for ReadFile {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for ReadFile {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": { "path": { "type": "string", "description": "A file path relative to the workspace." } },
            "required": ["path"],
            "additionalProperties": false
        })
    }

    async fn run(&self, cx: &ToolContext, arguments_json: serde_json::Value) -> ToolOutput {
        let args: ReadArgs = match arguments("read_file", "{\"path\": string}", arguments_json) {
            Ok(args) => args,
            Err(problem) => return ToolOutput::failure(problem),
        };
        let root = cx.workspace_root.clone();
        blocking("read_file", move || read_file(&root, &args.path)).await
    }
}

fn read_file(root: &Path, requested: &str) -> Result<String, String> {
    let target = fenced(root, requested)?;
    let meta =
        fs::metadata(&target.path).map_err(|_| format!("There is no file {requested:?}."))?;
    // Only regular files: a FIFO or device could block or never end.
    if !meta.is_file() {
        return Err(format!("{requested:?} is not a regular file."));
    }
    let file =
        fs::File::open(&target.path).map_err(|e| format!("Could not open {requested:?}: {e}."))?;
    let mut bytes = Vec::new();
    file.take(MAX_READ_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("Could not read {requested:?}: {e}."))?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if meta.len() > MAX_READ_BYTES {
        text.push_str(&format!(
            "\n[The file is {} bytes; only the first {MAX_READ_BYTES} are shown.]",
            meta.len()
        ));
    }
    Ok(text)
}

/// `list_dir {"path"?: string}`: the directory's entries, sorted, directories ending in `/`.
#[derive(Debug)]
pub struct ListDir(ToolSpec);

impl ListDir {
    /// The tool, rated Read/Workspace.
    pub fn new() -> Self {
        Self(builtin_spec(
            "list_dir",
            "List a directory inside the workspace.",
            Risk::Read,
        ))
    }
}

impl Default for ListDir {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for ListDir {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": { "path": { "type": "string", "description": "A directory relative to the workspace (default: the workspace)." } },
            "additionalProperties": false
        })
    }

    async fn run(&self, cx: &ToolContext, arguments_json: serde_json::Value) -> ToolOutput {
        let args: PathArgs = match arguments("list_dir", "{\"path\"?: string}", arguments_json) {
            Ok(args) => args,
            Err(problem) => return ToolOutput::failure(problem),
        };
        let root = cx.workspace_root.clone();
        let path = args.path.unwrap_or_else(|| ".".to_owned());
        blocking("list_dir", move || list_dir(&root, &path)).await
    }
}

fn list_dir(root: &Path, requested: &str) -> Result<String, String> {
    let target = fenced(root, requested)?;
    let entries = fs::read_dir(&target.path).map_err(|e| match target.exists {
        true => format!("Could not list {requested:?}: {e}."),
        false => format!("There is no directory {requested:?}."),
    })?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| {
            let slash = if e.file_type().is_ok_and(|t| t.is_dir()) {
                "/"
            } else {
                ""
            };
            format!("{}{slash}", e.file_name().to_string_lossy())
        })
        .collect();
    names.sort();
    let more = names.len().saturating_sub(MAX_LIST_ENTRIES);
    names.truncate(MAX_LIST_ENTRIES);
    if more > 0 {
        names.push(format!("[{more} more entries are not shown.]"));
    }
    if names.is_empty() {
        return Ok("[The directory is empty.]".to_owned());
    }
    Ok(names.join("\n"))
}

/// `write_file {"path": string, "content": string}`: creates or replaces a file (and missing
/// parent directories) inside the workspace.
#[derive(Debug)]
pub struct WriteFile(ToolSpec);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    path: String,
    content: String,
}

impl WriteFile {
    /// The tool, rated Write/Workspace.
    pub fn new() -> Self {
        Self(builtin_spec(
            "write_file",
            "Create or replace a file inside the workspace.",
            Risk::Write,
        ))
    }
}

impl Default for WriteFile {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for WriteFile {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    fn parameters(&self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "path": { "type": "string", "description": "A file path relative to the workspace." },
                "content": { "type": "string", "description": "The whole new content." }
            },
            "required": ["path", "content"],
            "additionalProperties": false
        })
    }

    async fn run(&self, cx: &ToolContext, arguments_json: serde_json::Value) -> ToolOutput {
        let shape = "{\"path\": string, \"content\": string}";
        let args: WriteArgs = match arguments("write_file", shape, arguments_json) {
            Ok(args) => args,
            Err(problem) => return ToolOutput::failure(problem),
        };
        let root = cx.workspace_root.clone();
        blocking("write_file", move || {
            write_file(&root, &args.path, &args.content)
        })
        .await
    }
}

fn write_file(root: &Path, requested: &str, content: &str) -> Result<String, String> {
    if content.len() > MAX_WRITE_BYTES {
        return Err(format!(
            "The content is over the {MAX_WRITE_BYTES}-byte limit of write_file."
        ));
    }
    let target = fenced(root, requested)?;
    if target.exists && !fs::metadata(&target.path).is_ok_and(|m| m.is_file()) {
        return Err(format!("{requested:?} exists and is not a regular file."));
    }
    if let Some(parent) = target.path.parent() {
        // Every missing directory is a plain name under an ancestor the fence checked.
        fs::create_dir_all(parent)
            .map_err(|e| format!("Could not create the directories for {requested:?}: {e}."))?;
    }
    fs::write(&target.path, content).map_err(|e| format!("Could not write {requested:?}: {e}."))?;
    Ok(format!("Wrote {} bytes to {requested}.", content.len()))
}
