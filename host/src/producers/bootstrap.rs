//! Session start: read the workspace's bootstrap files, let `agent:bootstrap` handlers replace or
//! extend the list, then de-duplicate, filter and budget it (SPEC G5.4).

use std::path::Path;

use hookline_actors::events::EventError;
use hookline_messages::event::{
    finalize_bootstrap_files, AgentBootstrapContext, BootstrapFile, BootstrapPolicy,
};
use hookline_messages::note::Note;

use super::GatewayEvents;

/// The files a workspace may provide, in injection order.
pub const DEFAULT_BOOTSTRAP_FILES: [&str; 6] = [
    "AGENTS.md",
    "SOUL.md",
    "TOOLS.md",
    "IDENTITY.md",
    "USER.md",
    "MEMORY.md",
];

/// The session a bootstrap is for, and the host's filter and budget.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BootstrapRequest {
    /// The session's key.
    pub session_key: Option<String>,
    /// The session's id.
    pub session_id: Option<String>,
    /// The file names to look for, in order.
    pub file_names: Vec<String>,
    /// The session/privacy filter and context budget applied after the handlers.
    pub policy: BootstrapPolicy,
}

/// Reads `names` from `workspace_dir`, in order. A file that cannot be read is recorded as
/// missing, without content.
pub async fn load_bootstrap_files(workspace_dir: &Path, names: &[String]) -> Vec<BootstrapFile> {
    let mut files = Vec::with_capacity(names.len());
    for name in names {
        let path = workspace_dir.join(name);
        let content = tokio::fs::read_to_string(&path).await.ok();
        files.push(BootstrapFile {
            name: name.clone(),
            path: path.to_string_lossy().into_owned(),
            missing: content.is_none(),
            content,
        });
    }
    files
}

impl GatewayEvents {
    /// Loads the workspace's bootstrap files, runs `agent:bootstrap` (each handler sees the
    /// previous replacement) and returns the final list with the handlers' skip notes.
    ///
    /// # Errors
    /// [`EventError::Stopped`] when the bus is gone.
    pub async fn bootstrap(
        &self,
        request: BootstrapRequest,
    ) -> Result<(Vec<BootstrapFile>, Vec<Note>), EventError> {
        let workspace = Path::new(&self.facts.workspace_dir);
        let files = load_bootstrap_files(workspace, &request.file_names).await;
        let context = AgentBootstrapContext {
            workspace_dir: self.facts.workspace_dir.clone(),
            bootstrap_files: files,
            cfg: Some(self.facts.cfg.clone()),
            session_key: request.session_key,
            session_id: request.session_id,
            agent_id: Some(self.facts.agent_id.clone()),
        };
        let (after, notes) = self.bus.bootstrap(context).await?;
        Ok((
            finalize_bootstrap_files(after.bootstrap_files, &request.policy),
            notes,
        ))
    }
}
