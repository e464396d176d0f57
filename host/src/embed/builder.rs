//! [`HostBuilder`]: what a host is made of: in-process plugins, plugins loaded from disk, tools
//! (built-in, plugin-contributed, external), a model provider, an operator and a store.
//!
//! Load order (SPEC P1.1) is the order plugins are added: [`HostBuilder::plugin`] and
//! [`HostBuilder::load_plugins`] append, so `.plugins(in_process).load_plugins(&disk)` runs the
//! in-process plugins first. Tools from every source land in one [`ToolRegistry`] and are hooked
//! alike (SPEC P1.3): in-process plugins contribute theirs with [`HostBuilder::tool`], plugins on
//! disk declare theirs in their hello.

use std::path::PathBuf;
use std::sync::Arc;

use hookline_messages::note::Note;

use hookline_actors::events::EventBusConfig;
use hookline_actors::plugin::PluginRegistration;
use hookline_actors::{Pipeline, PipelineBuilder};
use hookline_messages::session::ApprovalMode;

use hookline_actors::lifecycle::GatewayConfig;
use hookline_messages::event::{BootstrapPolicy, Config};

use super::clash::{self, DiskPlugin};
use super::Host;
use crate::approval::Operator;
use crate::external::{ExternalPlugin, PluginTool};
use crate::gateway::{Gateway, GatewayLimits};
use crate::loading::{load, LoadNote, LoadOptions, LoadReport, PluginState};
use crate::producers::ResetPolicy;
use crate::provider::{Provider, ScriptedProvider};
use crate::replay::{ReplayServices, Replayer};
use crate::session::{existing_dir, Conversation, HostError};
use crate::shared::{shutdown_processes, Guards, Services, Shared};
use crate::shared::{Clock, CommandOrigin, GatewaySettings};
use crate::store::{FileStore, FileStoreOptions, SessionStore, Store};
use crate::tools::{Tool, ToolRegistry};
use crate::turn::DEFAULT_MAX_MODEL_CALLS;

/// Builds a [`Host`].
pub struct HostBuilder {
    plugins: Vec<PluginRegistration>,
    tools: ToolRegistry,
    extra_tools: Vec<Arc<dyn Tool>>,
    tool_dirs: Vec<PathBuf>,
    loaded: Loaded,
    provider: Option<Arc<dyn Provider>>,
    operator: Option<Arc<dyn Operator>>,
    workspace: PathBuf,
    store: Option<PathBuf>,
    session_store: Option<Arc<dyn SessionStore>>,
    spaces_root: Option<PathBuf>,
    approval_mode: ApprovalMode,
    compact_after: Option<usize>,
    max_model_calls: usize,
    durable_steps: bool,
    gateway: GatewaySettings,
    pipeline: PipelineBounds,
}

/// The pipeline's shape and bounds, as [`HostBuilder::shards`], [`HostBuilder::max_pending`]
/// and [`HostBuilder::event_bus`] set them (each `None`: the pipeline's default).
#[derive(Default)]
struct PipelineBounds {
    shards: Option<usize>,
    max_pending: Option<usize>,
    event_bus: Option<EventBusConfig>,
}

impl Default for HostBuilder {
    fn default() -> Self {
        Self {
            plugins: Vec::new(),
            tools: ToolRegistry::new(),
            extra_tools: Vec::new(),
            tool_dirs: Vec::new(),
            loaded: Loaded::default(),
            provider: None,
            operator: None,
            workspace: PathBuf::from("."),
            store: None,
            session_store: None,
            spaces_root: None,
            approval_mode: ApprovalMode::default(),
            compact_after: None,
            max_model_calls: DEFAULT_MAX_MODEL_CALLS,
            durable_steps: true,
            gateway: GatewaySettings::default(),
            pipeline: PipelineBounds::default(),
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
    /// Tools added with [`HostBuilder::tool`] and tools of plugins loaded from disk are added to
    /// this registry at start, whichever call comes first.
    #[must_use]
    pub fn tools(mut self, tools: ToolRegistry) -> Self {
        self.tools = tools;
        self
    }

    /// Adds one tool, typically one an in-process plugin contributes (its spec's provider is
    /// [`ToolProvider::Plugin`](hookline_messages::tool::ToolProvider::Plugin)). A name already
    /// taken fails [`HostBuilder::start`] with [`HostError::Tools`].
    #[must_use]
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.extra_tools.push(tool);
        self
    }

    /// Adds the external tools declared in `dir` (one subdirectory per tool, each with a
    /// `tool.json`; see [`crate::tools::external`]). They go through the same hooks and approval
    /// as every other tool (SPEC P1.3). A tool whose manifest is bad, or whose name is taken, is
    /// left out with a note recorded in the first session; a missing `dir` adds nothing.
    #[must_use]
    pub fn external_tools(mut self, dir: impl Into<PathBuf>) -> Self {
        self.tool_dirs.push(dir.into());
        self
    }

    /// Loads the plugins on disk ([`load`]: the user directory overlaid by the workspace
    /// directory) and adds them after the plugins added so far, in their load order. Never fails:
    /// a plugin that cannot load is skipped with a note, recorded in the first session.
    pub async fn load_plugins(self, options: &LoadOptions) -> Self {
        self.loaded_plugins(load(options).await)
    }

    /// Adds plugins already loaded from disk (see [`HostBuilder::load_plugins`]): their
    /// registrations (hooks, raw hooks, event handler), their tools, and the loading notes. The
    /// host owns their processes from now on and shuts them down in [`Host::shutdown`].
    #[must_use]
    pub fn loaded_plugins(mut self, report: LoadReport) -> Self {
        let first = self.plugins.len();
        let dirs = report
            .statuses
            .iter()
            .filter(|s| s.state == PluginState::Loaded);
        self.loaded
            .disk
            .extend(dirs.enumerate().map(|(offset, status)| DiskPlugin {
                index: first + offset,
                dir: status.dir.clone(),
            }));
        self.plugins.extend(report.registrations());
        self.loaded.tools.extend(report.tools());
        // Unknown subscriptions are the pipeline's load notes (the plugin registers its event
        // handler); only skipped directories are loading's own.
        self.loaded.notes.extend(
            report
                .notes
                .iter()
                .filter(|note| matches!(note, LoadNote::Skipped { .. }))
                .map(LoadNote::to_note),
        );
        self.loaded.processes.extend(report.processes());
        self
    }

    /// Shuts down the plugin processes loaded so far, for a builder that will not be started.
    pub async fn shutdown_plugins(self) {
        shutdown_processes(&self.loaded.processes).await;
    }

    /// The registry the host will use: [`HostBuilder::tools`], then each
    /// [`HostBuilder::tool`], then the tools of plugins loaded from disk, then the external tools
    /// of each [`HostBuilder::external_tools`] directory. A plugin or external tool whose name is
    /// taken, or whose manifest is bad, is left out with a note (built-in tools are never
    /// replaced, SPEC X).
    ///
    /// # Errors
    /// [`HostError::Tools`] when a tool added with [`HostBuilder::tool`] has a name already taken.
    pub fn tool_registry(&self) -> Result<(ToolRegistry, Vec<Note>), HostError> {
        let mut tools = self.tools.clone();
        for tool in &self.extra_tools {
            tools
                .register(tool.clone())
                .map_err(|e| HostError::Tools(e.to_string()))?;
        }
        let mut notes = Vec::new();
        for tool in &self.loaded.tools {
            if tools.register(Arc::new(tool.clone())).is_err() {
                notes.push(Note::PluginToolNotRegistered {
                    plugin: tool.plugin_name().to_owned(),
                    tool: tool.spec().name.clone(),
                });
            }
        }
        for dir in &self.tool_dirs {
            let problems = tools.load_external(dir);
            notes.extend(
                problems
                    .into_iter()
                    .map(|problem| Note::ExternalToolSkipped { problem }),
            );
        }
        Ok((tools, notes))
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
        self.operator = Some(operator);
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

    /// The sessions' store (default: a [`FileStore`] in [`HostBuilder::store`]'s directory).
    /// Give a `PgStore` (crate `hookline-postgres`) to share sessions between nodes.
    #[must_use]
    pub fn session_store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.session_store = Some(store);
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

    /// Refuses to resume a stored session whose workspace lies outside `root` (a server's
    /// workspace root): [`HostError::Unrestorable`] instead of running it there. The root is
    /// canonicalized when the host starts.
    #[must_use]
    pub fn workspace_fence(mut self, root: impl Into<PathBuf>) -> Self {
        self.gateway.workspace_fence = Some(root.into());
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

    /// Whether each step of a turn is stored before the next one (default: yes, issue 22;
    /// `docs/turn.md`). Off, a turn is stored in one append at its end, and a crash loses it
    /// whole: only for measuring what the steps cost (`hookline serve --commit-per-turn`).
    #[must_use]
    pub fn durable_steps(mut self, on: bool) -> Self {
        self.durable_steps = on;
        self
    }

    /// The agent's id in gateway event contexts (`agentId`, default `main`).
    #[must_use]
    pub fn agent_id(mut self, agent_id: impl Into<String>) -> Self {
        self.gateway.agent_id = agent_id.into();
        self
    }

    /// The gateway configuration handed to event handlers (`cfg`, default `{}`).
    #[must_use]
    pub fn gateway_cfg(mut self, cfg: Config) -> Self {
        self.gateway.cfg = cfg;
        self
    }

    /// The path [`Host::command`] attributes commands to (default: chat channel `cli`, sender
    /// `operator`); it sets `commandSource` and `senderId` (SPEC G5.1, G5.2).
    #[must_use]
    pub fn chat_origin(mut self, origin: CommandOrigin) -> Self {
        self.gateway.chat = origin;
        self
    }

    /// When sessions reset by themselves (default: never). Checked before each user turn.
    #[must_use]
    pub fn reset_policy(mut self, policy: ResetPolicy) -> Self {
        self.gateway.reset_policy = policy;
        self
    }

    /// The clock the reset policy reads (default: the system clock).
    #[must_use]
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.gateway.clock = clock;
        self
    }

    /// The bootstrap files looked for at session start (default
    /// [`DEFAULT_BOOTSTRAP_FILES`](crate::producers::DEFAULT_BOOTSTRAP_FILES))
    /// and the filter and budget applied after `agent:bootstrap` (SPEC G5.4).
    #[must_use]
    pub fn bootstrap(mut self, file_names: Vec<String>, policy: BootstrapPolicy) -> Self {
        self.gateway.bootstrap_files = file_names;
        self.gateway.bootstrap_policy = policy;
        self
    }

    /// The lifecycle's bounds (default: 5 s shutdown wait, 10 s pre-restart, 2 s session ends).
    #[must_use]
    pub fn gateway_config(mut self, config: GatewayConfig) -> Self {
        self.gateway.lifecycle = config;
        self
    }

    /// The pipeline's shards (default: [`PipelineBuilder::shards`]'s).
    ///
    /// [`PipelineBuilder::shards`]: hookline_actors::PipelineBuilder::shards
    #[must_use]
    pub fn shards(mut self, shards: usize) -> Self {
        self.pipeline.shards = Some(shards);
        self
    }

    /// Bounds the hook calls the pipeline admits at once, per shard (default
    /// [`DEFAULT_MAX_PENDING`](hookline_actors::coordinator::DEFAULT_MAX_PENDING)).
    #[must_use]
    pub fn max_pending(mut self, max_pending: usize) -> Self {
        self.pipeline.max_pending = Some(max_pending);
        self
    }

    /// Bounds the gateway event bus (queue, detached deliveries, notes).
    #[must_use]
    pub fn event_bus(mut self, config: EventBusConfig) -> Self {
        self.pipeline.event_bus = Some(config);
        self
    }

    /// Loads the plugins and starts the host's actors on the current actix system. No session
    /// is open yet: call [`Host::open`] or [`Host::resume`].
    ///
    /// # Errors
    /// [`HostError`] for a missing workspace, a store that cannot open, duplicate plugin names or
    /// duplicate tool names. Plugin processes loaded from disk are then shut down in the
    /// background.
    ///
    /// # Panics
    /// When called outside an actix system (as every actor start does).
    pub fn start(mut self) -> Result<Host, HostError> {
        self.skip_name_clashes();
        let processes = std::mem::take(&mut self.loaded.processes);
        match self.start_with(processes.clone()) {
            Ok(host) => Ok(host),
            Err(error) => {
                actix_rt::spawn(async move { shutdown_processes(&processes).await });
                Err(error)
            }
        }
    }

    /// Loads the plugins and starts a [`Gateway`] on the current actix system: the shared
    /// services of many sessions, each opened with [`Gateway::open`]. `gateway:startup` is
    /// emitted by the first session that opens (SPEC G5.7).
    ///
    /// # Errors
    /// As [`HostBuilder::start`].
    ///
    /// # Panics
    /// When called outside an actix system (as every actor start does).
    pub fn start_gateway(mut self, limits: GatewayLimits) -> Result<Gateway, HostError> {
        self.skip_name_clashes();
        let processes = std::mem::take(&mut self.loaded.processes);
        match self.start_shared(processes.clone(), false) {
            Ok(shared) => Ok(Gateway::new(shared, limits)),
            Err(error) => {
                actix_rt::spawn(async move { shutdown_processes(&processes).await });
                Err(error)
            }
        }
    }

    /// Starts the plugins for `hookline replay` (issue 25): the pipeline on the current actix
    /// system and the specs of every tool, and nothing else: no store, no gateway, no
    /// workspace. The provider, operator and tools given here are not used; a replay answers
    /// from each session's recording.
    ///
    /// # Errors
    /// As [`HostBuilder::start`] for duplicate plugin or tool names.
    ///
    /// # Panics
    /// When called outside an actix system (as every actor start does).
    pub fn start_replay(mut self) -> Result<Replayer, HostError> {
        self.skip_name_clashes();
        let processes = std::mem::take(&mut self.loaded.processes);
        let started = self.tool_registry().and_then(|(tools, _)| {
            let guards = Guards::of(&self.plugins);
            let pipeline = self
                .pipeline
                .apply(Pipeline::builder().plugins(self.plugins));
            Ok((tools, guards, pipeline.start()?))
        });
        match started {
            Ok((tools, guards, pipeline)) => Ok(Replayer::new(ReplayServices {
                pipeline,
                tools,
                guards,
                processes,
                max_model_calls: self.max_model_calls,
            })),
            Err(error) => {
                actix_rt::spawn(async move { shutdown_processes(&processes).await });
                Err(error)
            }
        }
    }

    /// Skips every disk plugin whose name is taken (issue 15 defect 2): its registration, its
    /// tools and its process go, a note naming its directory stays.
    fn skip_name_clashes(&mut self) {
        let clashes = clash::clashes(&self.plugins, &self.loaded.disk);
        let mut gone = Vec::new();
        for (position, note) in clashes.into_iter().rev() {
            let disk = self.loaded.disk.remove(position);
            self.plugins.remove(disk.index);
            let process = self.loaded.processes.remove(position);
            self.loaded.tools.retain(|tool| !tool.is_of(&process));
            self.loaded.notes.push(note);
            gone.push(process);
        }
        if !gone.is_empty() {
            actix_rt::spawn(async move { shutdown_processes(&gone).await });
        }
    }

    fn start_with(self, processes: Vec<Arc<ExternalPlugin>>) -> Result<Host, HostError> {
        // One conversation has nothing to group: its writes go straight to disk.
        let shared = self.start_shared(processes, true)?;
        let workspace = shared.workspace.clone();
        let approval_mode = shared.approval_mode;
        Ok(Host::new(Conversation::new(
            shared,
            workspace,
            approval_mode,
        )))
    }

    /// Starts the shared services: the pipeline, the gateway lifecycle actor, the store.
    /// Starts the shared services; `inline_store`: the default file store writes on the
    /// caller's thread (one conversation) rather than through its group-commit thread.
    pub(crate) fn start_shared(
        self,
        processes: Vec<Arc<ExternalPlugin>>,
        inline_store: bool,
    ) -> Result<Arc<Shared>, HostError> {
        let (tools, tool_notes) = self.tool_registry()?;
        let workspace = existing_dir(&self.workspace)?;
        let root = self.store.unwrap_or_else(|| workspace.join(".hookline"));
        let store = Store::open(&root)?;
        let sessions: Arc<dyn SessionStore> = match self.session_store {
            Some(sessions) => sessions,
            None => Arc::new(FileStore::open(
                &root,
                FileStoreOptions {
                    inline: inline_store,
                    ..FileStoreOptions::default()
                },
            )?),
        };
        let spaces_root = self
            .spaces_root
            .or_else(|| workspace.parent().map(PathBuf::from))
            .unwrap_or_else(|| workspace.clone());
        let guards = Guards::of(&self.plugins);
        let pipeline = self
            .pipeline
            .apply(Pipeline::builder().plugins(self.plugins));
        let pipeline = pipeline.start()?;
        let mut load_notes = self.loaded.notes;
        load_notes.extend(pipeline.load_notes().iter().cloned());
        load_notes.extend(tool_notes);
        let provider = self
            .provider
            .unwrap_or_else(|| Arc::new(ScriptedProvider::default()));
        let mut settings = self.gateway;
        if let Some(fence) = settings.workspace_fence.take() {
            settings.workspace_fence = Some(existing_dir(&fence)?);
        }
        Ok(Shared::new(Services {
            pipeline,
            tools,
            provider,
            operator: self.operator,
            max_model_calls: self.max_model_calls,
            durable_steps: self.durable_steps,
            guards,
            store,
            sessions,
            workspace,
            spaces_root,
            approval_mode: self.approval_mode,
            compact_after: self.compact_after,
            settings,
            processes,
            load_notes,
        }))
    }
}

impl PipelineBounds {
    fn apply(self, mut builder: PipelineBuilder) -> PipelineBuilder {
        if let Some(shards) = self.shards {
            builder = builder.shards(shards);
        }
        if let Some(max_pending) = self.max_pending {
            builder = builder.max_pending(max_pending);
        }
        if let Some(config) = self.event_bus {
            builder = builder.event_bus(config);
        }
        builder
    }
}

/// What [`HostBuilder::loaded_plugins`] keeps until start.
#[derive(Default)]
struct Loaded {
    /// The running plugin processes, in load order.
    processes: Vec<Arc<ExternalPlugin>>,
    /// Their tools, in load order.
    tools: Vec<PluginTool>,
    /// Skipped plugin directories.
    notes: Vec<Note>,
    /// Where each process's registration sits, aligned with `processes`.
    disk: Vec<DiskPlugin>,
}
