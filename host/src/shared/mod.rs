//! What every conversation of one gateway shares: the pipeline, the plugin processes, the tools,
//! the model provider, the default operator, the store, the settings (`GatewaySettings`), the
//! fail-closed guards (`Guards`) and the gateway lifecycle actor. Built once by
//! [`HostBuilder`](crate::HostBuilder); read by many sessions at once, so everything here is
//! either immutable or atomic.
//!
//! It sits on a floor below the gateway, the session and the turn, which all read it: it imports
//! none of them (the gateway runs conversations, a conversation runs turns, and each of them
//! takes these services from here).

mod guards;
mod settings;

pub(crate) use guards::Guards;
pub use guards::GUARD_HOOKS;
pub(crate) use settings::GatewaySettings;
pub use settings::{Clock, CommandOrigin, ManualClock, SystemClock};

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use hookline_actors::lifecycle::{Lifecycle, SharedState};
use hookline_actors::Pipeline;
use hookline_messages::note::Note;
use hookline_messages::prompt::PromptMode;
use hookline_messages::record::Record;
use hookline_messages::session::ApprovalMode;

use crate::approval::Operator;
use crate::external::ExternalPlugin;
use crate::provider::Provider;
use crate::state::{HostError, Opened, SessionState};
use crate::store::{NewSession, SessionStore, Store};
use crate::tools::ToolRegistry;

/// The services and settings of one gateway.
pub(crate) struct Shared {
    pub(crate) pipeline: Pipeline,
    pub(crate) tools: Arc<ToolRegistry>,
    pub(crate) provider: Arc<dyn Provider>,
    /// The operator of conversations that do not bring their own.
    pub(crate) operator: Arc<dyn Operator>,
    pub(crate) max_model_calls: usize,
    /// Each step of a turn is stored before the next (issue 22); off only for measuring.
    pub(crate) durable_steps: bool,
    pub(crate) guards: Guards,
    /// Where the store lives (its root directory, for the file store).
    pub(crate) store: Store,
    /// The sessions' store: the file store by default, PostgreSQL for several nodes.
    pub(crate) sessions: Arc<dyn SessionStore>,
    /// The workspace of conversations that do not name one.
    pub(crate) workspace: PathBuf,
    pub(crate) spaces_root: PathBuf,
    pub(crate) approval_mode: ApprovalMode,
    pub(crate) compact_after: Option<usize>,
    pub(crate) settings: GatewaySettings,
    /// The gateway lifecycle actor (startup, bounded shutdown drains).
    pub(crate) lifecycle: Lifecycle,
    /// What the lifecycle closes once every shutdown handler has finished.
    pub(crate) resources: Arc<Resources>,
    started: AtomicBool,
    shut_down: AtomicBool,
    /// Whether a fresh session runs on the shard whose thread creates it
    /// ([`Shared::place_sessions_by_thread`]).
    by_thread: AtomicBool,
    /// Load notes not yet archived in a session (the first session to open takes them).
    load_notes: Mutex<Vec<Note>>,
    /// Every load note, kept for [`Shared::load_notes`].
    all_load_notes: Vec<Note>,
}

/// What [`Shared::new`] takes.
pub(crate) struct Services {
    pub(crate) pipeline: Pipeline,
    pub(crate) tools: ToolRegistry,
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) operator: Option<Arc<dyn Operator>>,
    pub(crate) max_model_calls: usize,
    pub(crate) durable_steps: bool,
    pub(crate) guards: Guards,
    pub(crate) store: Store,
    pub(crate) sessions: Arc<dyn SessionStore>,
    pub(crate) workspace: PathBuf,
    pub(crate) spaces_root: PathBuf,
    pub(crate) approval_mode: ApprovalMode,
    pub(crate) compact_after: Option<usize>,
    pub(crate) settings: GatewaySettings,
    pub(crate) processes: Vec<Arc<ExternalPlugin>>,
    pub(crate) load_notes: Vec<Note>,
}

impl Shared {
    /// Starts the gateway lifecycle actor over the services.
    pub(crate) fn new(services: Services) -> Arc<Self> {
        let resources = Arc::new(Resources {
            pipeline: services.pipeline.clone(),
            processes: services.processes,
            parked: Mutex::new(Parked::default()),
        });
        let lifecycle = Lifecycle::start(
            services.pipeline.clone(),
            resources.clone(),
            services.settings.lifecycle,
        );
        Arc::new(Self {
            pipeline: services.pipeline,
            tools: Arc::new(services.tools),
            provider: services.provider,
            operator: services
                .operator
                .unwrap_or_else(|| Arc::new(crate::approval::RefuseAll)),
            max_model_calls: services.max_model_calls,
            durable_steps: services.durable_steps,
            guards: services.guards,
            store: services.store,
            sessions: services.sessions,
            workspace: services.workspace,
            spaces_root: services.spaces_root,
            approval_mode: services.approval_mode,
            compact_after: services.compact_after,
            settings: services.settings,
            lifecycle,
            resources,
            started: AtomicBool::new(false),
            by_thread: AtomicBool::new(false),
            shut_down: AtomicBool::new(false),
            all_load_notes: services.load_notes.clone(),
            load_notes: Mutex::new(services.load_notes),
        })
    }

    /// The plugin processes loaded from disk, in load order.
    pub(crate) fn processes(&self) -> &[Arc<ExternalPlugin>] {
        &self.resources.processes
    }

    /// True for exactly one caller: the one that emits `gateway:startup` (SPEC G5.7).
    pub(crate) fn claim_startup(&self) -> bool {
        !self.started.swap(true, Ordering::AcqRel)
    }

    /// Marks the gateway shut down; true for the first caller only.
    pub(crate) fn claim_shutdown(&self) -> bool {
        !self.shut_down.swap(true, Ordering::AcqRel)
    }

    /// Whether the gateway has shut down.
    pub(crate) fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::Acquire)
    }

    /// Every load note, whether archived yet or not.
    pub(crate) fn load_notes(&self) -> &[Note] {
        &self.all_load_notes
    }

    /// The load notes no session has archived yet.
    pub(crate) fn take_load_notes(&self) -> Vec<Note> {
        std::mem::take(
            &mut *self
                .load_notes
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// A fresh session in `workspace` holding `records`; the store allocates its id (unique
    /// across threads, processes and, for PostgreSQL, nodes).
    pub(crate) async fn fresh_session(
        &self,
        workspace: PathBuf,
        choices: Choices,
        records: &[Record],
    ) -> Result<Opened, HostError> {
        let new = NewSession {
            workspace_root: workspace.display().to_string(),
            approval_mode: choices.approval_mode,
            model: choices.model,
            mode: choices.mode,
            owner: choices.owner,
        };
        let opened = SessionState::create(&*self.sessions, new, records).await?;
        if self.by_thread.load(Ordering::Relaxed) {
            // Before the session's first call: from now on its calls go to this thread's shard.
            self.pipeline.place_here(&opened.state.info.session_id);
        }
        Ok(opened)
    }

    /// From now on, a fresh session runs on the pipeline shard whose thread creates it, when it
    /// is one ([`Pipeline::place_here`](hookline_actors::Pipeline::place_here)): a gateway whose
    /// sessions run on their shards' arbiters, served on every shard's thread, then runs a
    /// session where its request was served, and its hook calls and requests make no thread hop
    /// (issue 47). Ids stay `s1`, `s2`, ... one after another either way.
    pub(crate) fn place_sessions_by_thread(&self) {
        self.by_thread.store(true, Ordering::Relaxed);
    }
}

/// What a conversation chose for the sessions it opens: each fresh session starts with them and
/// stores them with its facts; a resume takes them back from the stored facts (issue 26).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Choices {
    /// The approval mode (`/approvals`, `"approvalMode"` at open).
    pub(crate) approval_mode: ApprovalMode,
    /// The model (`/model`, `"model"` at open).
    pub(crate) model: Option<String>,
    /// The default turn mode (`/mode`).
    pub(crate) mode: Option<PromptMode>,
    /// Who the sessions belong to (issue 48): every session of a conversation has its owner.
    pub(crate) owner: Option<crate::store::SessionOwner>,
}

/// What the lifecycle closes once every shutdown handler has finished (SPEC G2.3): the pipeline,
/// the plugin processes loaded from disk, and the open session files parked here.
pub(crate) struct Resources {
    pipeline: Pipeline,
    processes: Vec<Arc<ExternalPlugin>>,
    parked: Mutex<Parked>,
}

#[derive(Default)]
struct Parked {
    closed: bool,
    sessions: Vec<SessionState>,
}

impl Resources {
    /// Hands an ended session's open files over; they close with the shared state. When it has
    /// closed already the session comes back, for the caller to release now (a PostgreSQL
    /// lease dropped unreleased would hold until it expired).
    pub(crate) fn park(&self, session: SessionState) -> Option<SessionState> {
        let mut parked = self.parked.lock().unwrap_or_else(PoisonError::into_inner);
        if parked.closed {
            return Some(session);
        }
        parked.sessions.push(session);
        None
    }
}

#[async_trait]
impl SharedState for Resources {
    async fn close(&self) {
        self.pipeline.stop().await;
        // Goodbye, close stdin, terminate, kill: each step bounded, all plugins at once.
        shutdown_processes(&self.processes).await;
        let sessions = {
            let mut parked = self.parked.lock().unwrap_or_else(PoisonError::into_inner);
            parked.closed = true;
            std::mem::take(&mut parked.sessions)
        };
        // Give the leases up (PostgreSQL's would otherwise wait for their expiry).
        let releases = sessions.into_iter().map(|session| async move {
            let id = session.info.session_id.clone();
            if let Err(error) = session.release().await {
                tracing::warn!(session = %id, %error, "could not release a session's lease");
            }
        });
        futures::future::join_all(releases).await;
    }
}

/// Shuts plugin processes down, all at once (each bounded: goodbye, close stdin, terminate, kill).
pub(crate) async fn shutdown_processes(processes: &[Arc<ExternalPlugin>]) {
    futures::future::join_all(processes.iter().map(|plugin| plugin.shutdown())).await;
}
