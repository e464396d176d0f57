//! The registry: every tool the host can run, by name.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use super::builtin::{ListDir, ReadFile, WriteFile};
use super::external;
use super::{Tool, ToolSpec};

/// Why a tool could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// A tool with that name is already registered.
    #[error("a tool named {name:?} is already registered")]
    Duplicate {
        /// The name.
        name: String,
    },
}

/// The tools the host can run, by name (sorted).
#[derive(Default, Clone)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// A registry holding the built-in tools `read_file`, `list_dir` and `write_file`, each
    /// fenced to the workspace root.
    pub fn with_builtins() -> Self {
        let builtins: [Arc<dyn Tool>; 3] = [
            Arc::new(ReadFile::new()),
            Arc::new(ListDir::new()),
            Arc::new(WriteFile::new()),
        ];
        let tools = builtins
            .into_iter()
            .map(|t| (t.spec().name.clone(), t))
            .collect();
        Self { tools }
    }

    /// Adds a tool.
    ///
    /// # Errors
    /// [`ToolError::Duplicate`] if a tool with the same name is already registered (the
    /// registry is unchanged).
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<(), ToolError> {
        let name = tool.spec().name.clone();
        if self.tools.contains_key(&name) {
            return Err(ToolError::Duplicate { name });
        }
        self.tools.insert(name, tool);
        Ok(())
    }

    /// The tool called `name`, if registered.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.get(name).cloned()
    }

    /// Every registered tool's spec, sorted by name.
    pub fn specs(&self) -> impl Iterator<Item = &ToolSpec> {
        self.tools.values().map(|t| t.spec())
    }

    /// Loads external tools from `dir`: one subdirectory per tool, each with a `tool.json`
    /// manifest. Returns the problems (English sentences naming the directory) for tools that
    /// were skipped; the others are registered. A missing `dir` is no problem: no tools.
    pub fn load_external(&mut self, dir: &Path) -> Vec<String> {
        let (tools, mut problems) = external::load_dir(dir);
        for tool in tools {
            let tool_dir = tool.dir().to_path_buf();
            if let Err(e) = self.register(Arc::new(tool)) {
                problems.push(format!(
                    "Skipped the external tool in {}: {e}.",
                    tool_dir.display()
                ));
            }
        }
        problems
    }
}

impl fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.tools.keys()).finish()
    }
}
