//! [`HostBuilder`]: what a host is made of.

use std::path::PathBuf;
use std::sync::Arc;

use actix::Actor;
use hookline_actors::plugin::PluginRegistration;
use hookline_actors::session::SessionLifecycle;
use hookline_actors::Pipeline;
use hookline_messages::session::ApprovalMode;

use super::{existing_dir, Host, HostError};
use crate::approval::{Operator, RefuseAll};
use crate::provider::{Provider, ScriptedProvider};
use crate::store::Store;
use crate::tools::ToolRegistry;
use crate::turn::{Engine, Guards, DEFAULT_MAX_MODEL_CALLS};

/// Builds a [`Host`].
pub struct HostBuilder {
    plugins: Vec<PluginRegistration>,
    tools: ToolRegistry,
    provider: Option<Arc<dyn Provider>>,
    operator: Arc<dyn Operator>,
    workspace: PathBuf,
    store: Option<PathBuf>,
    spaces_root: Option<PathBuf>,
    approval_mode: ApprovalMode,
    compact_after: Option<usize>,
    max_model_calls: usize,
}

impl Default for HostBuilder {
    fn default() -> Self {
        Self {
            plugins: Vec::new(),
            tools: ToolRegistry::new(),
            provider: None,
            operator: Arc::new(RefuseAll),
            workspace: PathBuf::from("."),
            store: None,
            spaces_root: None,
            approval_mode: ApprovalMode::default(),
            compact_after: None,
            max_model_calls: DEFAULT_MAX_MODEL_CALLS,
        }
    }
}

impl HostBuilder {
    /// Adds a plugin; plugins load in the order they are added (SPEC P1.1).
    #[must_use]
    pub fn plugin(mut self, plugin: PluginRegistration) -> Self {
        self.plugins.push(plugin);
        self
    }

    /// Adds plugins in order.
    #[must_use]
    pub fn plugins(mut self, plugins: impl IntoIterator<Item = PluginRegistration>) -> Self {
        self.plugins.extend(plugins);
        self
    }

    /// The tools: built-in, plugin-contributed and external, all hooked alike (SPEC P1.3).
    #[must_use]
    pub fn tools(mut self, tools: ToolRegistry) -> Self {
        self.tools = tools;
        self
    }

    /// The model provider (default: a [`ScriptedProvider`] with no replies).
    #[must_use]
    pub fn provider(mut self, provider: Arc<dyn Provider>) -> Self {
        self.provider = Some(provider);
        self
    }

    /// The operator the approval policy asks (default: one that refuses).
    #[must_use]
    pub fn operator(mut self, operator: Arc<dyn Operator>) -> Self {
        self.operator = operator;
        self
    }

    /// The workspace root (default: the current directory).
    #[must_use]
    pub fn workspace(mut self, workspace: impl Into<PathBuf>) -> Self {
        self.workspace = workspace.into();
        self
    }

    /// The store directory (default: `.hookline/` under the workspace).
    #[must_use]
    pub fn store(mut self, store: impl Into<PathBuf>) -> Self {
        self.store = Some(store.into());
        self
    }

    /// Where `/space <name>` workspaces live (default: the workspace's parent directory).
    #[must_use]
    pub fn spaces_root(mut self, root: impl Into<PathBuf>) -> Self {
        self.spaces_root = Some(root.into());
        self
    }

    /// The approval mode of new sessions.
    #[must_use]
    pub fn approval_mode(mut self, mode: ApprovalMode) -> Self {
        self.approval_mode = mode;
        self
    }

    /// Compact before a turn once the stored records exceed `records`.
    #[must_use]
    pub fn compact_after(mut self, records: usize) -> Self {
        self.compact_after = Some(records);
        self
    }

    /// Bounds the model calls of one turn (default [`DEFAULT_MAX_MODEL_CALLS`]).
    #[must_use]
    pub fn max_model_calls(mut self, calls: usize) -> Self {
        self.max_model_calls = calls.max(1);
        self
    }

    /// Loads the plugins and starts the host's actors on the current actix system. No session
    /// is open yet: call [`Host::open`] or [`Host::resume`].
    ///
    /// # Errors
    /// [`HostError`] for a missing workspace, a store that cannot open, or duplicate plugin names.
    ///
    /// # Panics
    /// When called outside an actix system (as every actor start does).
    pub fn start(self) -> Result<Host, HostError> {
        let workspace = existing_dir(&self.workspace)?;
        let store = Store::open(self.store.unwrap_or_else(|| workspace.join(".hookline")))?;
        let spaces_root = self
            .spaces_root
            .or_else(|| workspace.parent().map(PathBuf::from))
            .unwrap_or_else(|| workspace.clone());
        let guards = Guards::of(&self.plugins);
        let pipeline = Pipeline::builder().plugins(self.plugins).start()?;
        let load_notes = pipeline.load_notes().to_vec();
        let lifecycle = SessionLifecycle::new(pipeline.clone()).start();
        let provider = self
            .provider
            .unwrap_or_else(|| Arc::new(ScriptedProvider::default()));
        let engine = Engine {
            pipeline,
            tools: Arc::new(self.tools),
            provider,
            operator: self.operator,
            max_model_calls: self.max_model_calls,
            events: Vec::new(),
            guards,
        };
        Ok(Host {
            engine,
            lifecycle,
            store,
            session: None,
            workspace,
            spaces_root,
            approval_mode: self.approval_mode,
            compact_after: self.compact_after,
            load_notes,
            next_id: 0,
        })
    }
}
