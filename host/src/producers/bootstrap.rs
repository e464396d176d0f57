//! Session start: read the workspace's bootstrap files, let `agent:bootstrap` handlers replace or
//! extend the list, then de-duplicate, filter and budget it (SPEC G5.4).

use std::path::Path;

use hookline_actors::events::EventError;
use hookline_messages::event::{
    finalize_bootstrap_files, AgentBootstrapContext, BootstrapFile, BootstrapPolicy, Event,
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

/// What one `agent:bootstrap` did (SPEC G5.4): the final list, the handlers' skip notes, and
/// what the archive keeps of the event (`hookline replay` delivers it again, issue 34).
#[derive(Debug)]
pub struct Bootstrapped {
    /// The list after the handlers, de-duplicated, filtered and budgeted.
    pub files: Vec<BootstrapFile>,
    /// A note for each skipped handler call.
    pub notes: Vec<Note>,
    /// The event as emitted (the files as read from the workspace).
    pub emitted: Event,
    /// The list the handlers handed on, when they replaced it.
    pub handed_on: Option<Vec<BootstrapFile>>,
    /// How many handler calls the delivery made.
    pub calls: usize,
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
        let done = self.bootstrap_delivered(request).await?;
        Ok((done.files, done.notes))
    }

    /// [`GatewayEvents::bootstrap`], with the event as emitted and what its handlers did.
    ///
    /// # Errors
    /// [`EventError::Stopped`] when the bus is gone.
    pub async fn bootstrap_delivered(
        &self,
        request: BootstrapRequest,
    ) -> Result<Bootstrapped, EventError> {
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
        let read = context.bootstrap_files.clone();
        let emitted = Event::AgentBootstrap(context);
        let delivery = self.bus.dispatch(emitted.clone()).await?;
        let after = match delivery.event {
            Event::AgentBootstrap(after) => after.bootstrap_files,
            _ => read.clone(),
        };
        let handed_on = (after != read).then(|| after.clone());
        Ok(Bootstrapped {
            files: finalize_bootstrap_files(after, &request.policy),
            notes: delivery.notes,
            emitted,
            handed_on,
            calls: delivery.calls,
        })
    }
}
