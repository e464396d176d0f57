//! What every conversation of one gateway shares: the pipeline, the plugin processes, the tools,
//! the model provider, the default operator, the store, the settings and the gateway lifecycle
//! actor. Built once by [`HostBuilder`](crate::HostBuilder); read by many sessions at once, so
//! everything here is either immutable or atomic.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use hookline_actors::lifecycle::{Lifecycle, SharedState};
use hookline_actors::Pipeline;
use hookline_messages::note::Note;
use hookline_messages::record::Record;
use hookline_messages::session::{ApprovalMode, SessionId, SessionInfo};

use crate::approval::Operator;
use crate::external::ExternalPlugin;
use crate::provider::Provider;
use crate::session::GatewaySettings;
use crate::state::{HostError, Opened, SessionState};
use crate::store::Store;
use crate::tools::ToolRegistry;
use crate::turn::Guards;

/// The services and settings of one gateway.
pub(crate) struct Shared {
    pub(crate) pipeline: Pipeline,
    pub(crate) tools: Arc<ToolRegistry>,
    pub(crate) provider: Arc<dyn Provider>,
    /// The operator of conversations that do not bring their own.
    pub(crate) operator: Arc<dyn Operator>,
    pub(crate) max_model_calls: usize,
    pub(crate) guards: Guards,
    pub(crate) store: Store,
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
    next_id: AtomicU64,
    /// Load notes not yet archived in a session (the first session to open takes them).
    load_notes: Mutex<Vec<Note>>,
}

/// What [`Shared::new`] takes.
pub(crate) struct Services {
    pub(crate) pipeline: Pipeline,
    pub(crate) tools: ToolRegistry,
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) operator: Option<Arc<dyn Operator>>,
    pub(crate) max_model_calls: usize,
    pub(crate) guards: Guards,
    pub(crate) store: Store,
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
            guards: services.guards,
            store: services.store,
            workspace: services.workspace,
            spaces_root: services.spaces_root,
            approval_mode: services.approval_mode,
            compact_after: services.compact_after,
            settings: services.settings,
            lifecycle,
            resources,
            started: AtomicBool::new(false),
            shut_down: AtomicBool::new(false),
            next_id: AtomicU64::new(0),
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

    /// The load notes no session has archived yet.
    pub(crate) fn take_load_notes(&self) -> Vec<Note> {
        std::mem::take(
            &mut *self
                .load_notes
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// A fresh session with an id no other session of this store has, in `workspace`, holding
    /// `records`. Ids are claimed in the store (an atomic directory creation), so concurrent
    /// conversations, and other processes sharing the store, never get the same one.
    pub(crate) fn fresh_session(
        &self,
        workspace: PathBuf,
        approval_mode: ApprovalMode,
        records: &[Record],
    ) -> Result<Opened, HostError> {
        let id = loop {
            let n = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
            let id = SessionId::new(format!("s{n}"));
            if self.store.claim(&id)? {
                break id;
            }
        };
        let info = SessionInfo {
            workspace_root: workspace.display().to_string(),
            session_id: id,
            approval_mode,
        };
        SessionState::create(&self.store, info, records)
    }
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
    /// Hands an ended session's open files over; they close with the shared state (or now, when
    /// it is already closed).
    pub(crate) fn park(&self, session: SessionState) {
        let mut parked = self.parked.lock().unwrap_or_else(PoisonError::into_inner);
        if !parked.closed {
            parked.sessions.push(session);
        }
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
        drop(sessions);
    }
}

/// Shuts plugin processes down, all at once (each bounded: goodbye, close stdin, terminate, kill).
pub(crate) async fn shutdown_processes(processes: &[Arc<ExternalPlugin>]) {
    futures::future::join_all(processes.iter().map(|plugin| plugin.shutdown())).await;
}
