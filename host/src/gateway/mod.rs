//! The gateway: one set of shared services (pipeline, plugin processes, tools, provider, store,
//! gateway lifecycle) that many sessions run on at once.
//!
//! Each session is a [`Conversation`] owned by a task of its own and driven through a
//! [`SessionHandle`]: its requests run one at a time in arrival order (SPEC P: one session's
//! calls in order), and no session ever waits for another. Sessions are placed on the gateway's
//! arbiters in turn. Everything is bounded: the number of sessions ([`GatewayLimits`]), each
//! session's inbox, each live feed, each approval's wait, and the drain at shutdown.
//!
//! [`Host`](crate::Host) is the one-conversation API over the same code; `hookline serve` is a
//! thin HTTP front over this type.
//!
//! ```text
//! let gateway = Host::builder().plugin(plugin).start_gateway(GatewayLimits::default())?;
//! let session = gateway.open(OpenSession::default()).await?;
//! let report = session.turn(UserInput::work("hello")).await?;
//! let summary = gateway.shutdown("done", None).await?;
//! ```

mod approvals;
mod error;
mod handover;
mod session;
mod status;
mod takeover;
mod waiting;

pub use approvals::{Approvals, NotWaiting, PendingApproval};
pub use error::RequestError;
pub use handover::{HandoverSummary, MovingSession, ADOPTING_AT_ONCE, OPENING_FOR_REQUESTS};
pub use session::{CommandReport, RecordsPage, SessionHandle, TurnReport, SESSION_SHUTDOWN_WAIT};
pub use status::{Activity, QueuedRequests, SessionStatus};

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use actix::ArbiterHandle;
use hookline_actors::lifecycle::SharedStateClosed;
use hookline_actors::Pipeline;
use hookline_messages::note::{Note, SessionEnding};
use hookline_messages::prompt::PromptMode;
use hookline_messages::session::{ApprovalMode, SessionId, SessionInfo};
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use crate::session::{shut_down, Conversation, SessionCommand};
use crate::shared::{Choices, Shared};
use crate::state::{HostError, HostEvent, LiveSink};
use crate::turn::StopSignal;
use approvals::RemoteOperator;
use session::Request;

/// The gateway's bounds.
#[derive(Clone, Debug)]
pub struct GatewayLimits {
    /// Sessions open at once; one more is refused ([`RequestError::Full`]).
    pub max_sessions: usize,
    /// Requests that may wait in one session's inbox; one more is refused
    /// ([`RequestError::Busy`]).
    pub inbox: usize,
    /// Events one live feed holds for a subscriber that falls behind.
    pub live_capacity: usize,
    /// How long an operator approval waits for an answer before the call is denied.
    pub approval_timeout: Duration,
    /// How long running turns get to finish at shutdown before they are stopped like `/stop`.
    pub drain_budget: Duration,
    /// The arbiters sessions are placed on, in turn. None (the default): each session runs on
    /// the arbiter of its pipeline shard ([`Pipeline::arbiter_for`]), so its hook calls make no
    /// thread hop.
    pub arbiters: Vec<ArbiterHandle>,
}

impl Default for GatewayLimits {
    fn default() -> Self {
        Self {
            max_sessions: 10_000,
            inbox: 16,
            live_capacity: 128,
            approval_timeout: Duration::from_secs(60),
            drain_budget: Duration::from_secs(10),
            arbiters: Vec::new(),
        }
    }
}

/// What a new session starts with; every field has the gateway's default.
#[derive(Clone, Debug, Default)]
pub struct OpenSession {
    /// Its workspace (an existing directory; the caller checks where it may be).
    pub workspace: Option<PathBuf>,
    /// Its approval mode.
    pub approval_mode: Option<ApprovalMode>,
    /// Its model (as `/model` sets it).
    pub model: Option<String>,
    /// Who it belongs to (issue 48); stored with it. A resumed session keeps its stored owner.
    pub owner: Option<crate::store::SessionOwner>,
}

/// One event on the gateway's feed: a session's event, or the gateway's own (no session).
#[derive(Clone, Debug)]
pub struct FeedEvent {
    /// The session it belongs to, by key.
    pub session: Option<SessionId>,
    /// The event.
    pub event: Arc<HostEvent>,
}

/// What a shutdown did.
pub struct ShutdownSummary {
    /// The lifecycle's notes (handlers skipped or still running, session ends that timed out).
    pub notes: Vec<Note>,
    /// Turns the drain budget ran out on, stopped like `/stop`.
    pub stopped_turns: usize,
    /// Resolves once the shared state (plugin processes, open files) has closed.
    pub closed: SharedStateClosed,
}

/// A running gateway. Cheap to clone; clones share everything.
#[derive(Clone)]
pub struct Gateway {
    inner: Arc<Inner>,
}

struct Inner {
    shared: Arc<Shared>,
    limits: GatewayLimits,
    sessions: Mutex<HashMap<SessionId, SessionHandle>>,
    /// Sessions being opened (counted against the bound before they have a key).
    opening: AtomicUsize,
    draining: Arc<AtomicBool>,
    next_arbiter: AtomicUsize,
    feed: broadcast::Sender<FeedEvent>,
    /// Sessions being taken over from a holder that is gone ([`Gateway::session_or_take_over`]).
    takeovers: takeover::Takeovers,
    /// Sessions moving between this server and its predecessor or successor (issue 49).
    succession: handover::Succession,
}

impl Gateway {
    pub(crate) fn new(shared: Arc<Shared>, limits: GatewayLimits) -> Self {
        let (feed, _) = broadcast::channel(limits.live_capacity.max(16));
        // Sessions on their shards' arbiters: each made on the shard that served its request.
        if limits.arbiters.is_empty() {
            shared.place_sessions_by_thread();
        }
        Self {
            inner: Arc::new(Inner {
                shared,
                limits,
                sessions: Mutex::new(HashMap::new()),
                opening: AtomicUsize::new(0),
                draining: Arc::new(AtomicBool::new(false)),
                next_arbiter: AtomicUsize::new(0),
                feed,
                takeovers: takeover::Takeovers::default(),
                succession: handover::Succession::default(),
            }),
        }
    }

    /// Opens a fresh session (SPEC P3.10) on a task of its own.
    ///
    /// # Errors
    /// [`RequestError::Draining`], [`RequestError::Full`], or the host's failure opening it.
    pub async fn open(&self, request: OpenSession) -> Result<SessionHandle, RequestError> {
        self.start_session(request, None, None).await
    }

    /// Opens a stored session (SPEC P3.10, P3.12): it continues where it stopped.
    ///
    /// # Errors
    /// As [`Gateway::open`]; [`RequestError::Host`] with [`HostError::UnknownSession`] when the
    /// store does not have it.
    pub async fn resume(&self, id: &SessionId) -> Result<SessionHandle, RequestError> {
        if let Some(handle) = self.session(id) {
            if !handle.has_ended() {
                return Ok(handle);
            }
            self.forget_ended(id);
        }
        self.start_session(OpenSession::default(), Some(id.clone()), None)
            .await
    }

    /// The open session known by `key`.
    pub fn session(&self, key: &SessionId) -> Option<SessionHandle> {
        self.table().get(key).cloned()
    }

    /// Every open session's status, by key.
    pub fn sessions(&self) -> Vec<SessionStatus> {
        let mut all: Vec<SessionStatus> = self.table().values().map(|h| h.status()).collect();
        all.sort_by(|a, b| a.key.cmp(&b.key));
        all
    }

    /// How many sessions are open.
    pub fn open_sessions(&self) -> usize {
        self.table().len()
    }

    /// Sessions being opened now (created or resumed, not yet in the table): a successor opens
    /// the sessions moving to it at most [`OPENING_FOR_REQUESTS`] at a time for requests and
    /// [`ADOPTING_AT_ONCE`] in the background (issue 49).
    pub fn sessions_opening(&self) -> usize {
        self.inner.opening.load(Ordering::Acquire)
    }

    /// Requests waiting in the open sessions' inboxes now.
    pub fn queued_requests(&self) -> QueuedRequests {
        self.table().values().map(SessionHandle::queued).fold(
            QueuedRequests::default(),
            |sum, depth| QueuedRequests {
                total: sum.total + depth,
                deepest: sum.deepest.max(depth),
            },
        )
    }

    /// Ends one session: its end hooks run (SPEC P3.11) and the gateway forgets it. A session
    /// this node does not have open is taken over first when its holder is gone, as a turn or
    /// `/resume` would (issue 46 item 8), so it is closed here rather than left to nobody.
    ///
    /// # Errors
    /// As [`Gateway::session_or_take_over`] ([`RequestError::Unknown`], a store's `Leased`
    /// while a holder that runs has it), or as [`SessionHandle::close`].
    pub async fn close(&self, key: &SessionId) -> Result<Vec<HostEvent>, RequestError> {
        let handle = self.session_or_take_over(key).await?;
        let result = handle.close().await;
        self.table().remove(key);
        result
    }

    /// Every session's events, and the gateway's, as they happen.
    pub fn subscribe(&self) -> broadcast::Receiver<FeedEvent> {
        self.inner.feed.subscribe()
    }

    /// Whether a shutdown has begun: new sessions and turns are refused.
    pub fn is_draining(&self) -> bool {
        self.inner.draining.load(Ordering::Acquire)
    }

    /// The hook pipeline.
    pub fn pipeline(&self) -> &Pipeline {
        &self.inner.shared.pipeline
    }

    /// The tools every session runs.
    pub fn tools(&self) -> &crate::tools::ToolRegistry {
        &self.inner.shared.tools
    }

    /// The store.
    pub fn store(&self) -> &crate::store::Store {
        &self.inner.shared.store
    }

    /// The sessions' store (the file store, or PostgreSQL shared with other nodes).
    pub fn session_store(&self) -> &Arc<dyn crate::store::SessionStore> {
        &self.inner.shared.sessions
    }

    /// The plugins loaded from disk, in load order.
    pub fn loaded_plugins(&self) -> &[Arc<crate::external::ExternalPlugin>] {
        self.inner.shared.processes()
    }

    /// The gateway's bounds.
    pub fn limits(&self) -> &GatewayLimits {
        &self.inner.limits
    }

    /// Shuts the gateway down (SPEC G2): new sessions and turns are refused; running turns get
    /// the drain budget, then are stopped like `/stop` (a note says so in their session);
    /// `gateway:shutdown` runs with its bounded wait (and `gateway:pre-restart` when a restart
    /// is expected); every active session's end hooks run under the session-end budget; each
    /// session archives its end; the shared state closes once every handler has finished.
    ///
    /// # Errors
    /// [`HostError::Gateway`] on a second shutdown.
    pub async fn shutdown(
        &self,
        reason: impl Into<String>,
        restart_expected_ms: Option<u64>,
    ) -> Result<ShutdownSummary, HostError> {
        self.inner.draining.store(true, Ordering::Release);
        let handles: Vec<SessionHandle> = self.table().values().cloned().collect();
        let stopped_turns = self.drain_turns(&handles).await;
        self.end_sessions(reason.into(), restart_expected_ms, handles, stopped_turns)
            .await
    }

    /// The end of a shutdown once no turn runs: `gateway:shutdown` (and `gateway:pre-restart`),
    /// the end hooks of every active session, each session's end archived, the table emptied.
    async fn end_sessions(
        &self,
        reason: String,
        restart_expected_ms: Option<u64>,
        handles: Vec<SessionHandle>,
        stopped_turns: usize,
    ) -> Result<ShutdownSummary, HostError> {
        self.inner.draining.store(true, Ordering::Release);
        let active: Vec<SessionInfo> = handles.iter().filter_map(active_info).collect();
        let report = shut_down(&self.inner.shared, reason, restart_expected_ms, active).await?;
        self.feed(
            None,
            HostEvent::gateway(
                hookline_messages::event::EventKey::GatewayShutdown,
                "bounded",
            ),
        );
        let notes: Arc<[Note]> = report.notes.clone().into();
        let ends = handles.iter().map(|handle| {
            let notes = notes.clone();
            let restart_expected = restart_expected_ms.is_some();
            tokio::time::timeout(
                SESSION_SHUTDOWN_WAIT,
                handle.ask(move |reply| Request::Shutdown {
                    restart_expected,
                    notes,
                    reply,
                }),
            )
        });
        futures::future::join_all(ends).await;
        self.table().clear();
        Ok(ShutdownSummary {
            notes: report.notes,
            stopped_turns,
            closed: report.closed,
        })
    }

    /// Waits for running turns up to the drain budget, then stops the ones still running and
    /// waits for them to end (bounded by the budget again). Returns how many it stopped.
    async fn drain_turns(&self, handles: &[SessionHandle]) -> usize {
        let budget = self.inner.limits.drain_budget;
        for handle in handles {
            // Nobody answers a draining gateway's approvals: a turn waiting for one stops now.
            handle.end_session(SessionEnding::Drain);
        }
        let waits = handles.iter().map(|h| wait_idle(h.watch_status(), budget));
        let finished = futures::future::join_all(waits).await;
        let mut stopped = 0;
        let mut stopping = Vec::new();
        for (handle, finished) in handles.iter().zip(finished) {
            if !finished {
                stopped += 1;
                handle.stop_turn();
                let millis = u64::try_from(budget.as_millis()).unwrap_or(u64::MAX);
                let _ = handle.send(Request::Note(Note::TurnStoppedByDrain { millis }));
                stopping.push(wait_idle(handle.watch_status(), budget));
            }
        }
        futures::future::join_all(stopping).await;
        stopped
    }

    /// Opens a session (`resume`: a stored one), known by `key` when given (a moved session
    /// whose conversation had gone on to another session), else by its id.
    async fn start_session(
        &self,
        request: OpenSession,
        resume: Option<SessionId>,
        key: Option<SessionId>,
    ) -> Result<SessionHandle, RequestError> {
        if self.inner.succession.is_handing_over() {
            return Err(RequestError::Moving);
        }
        if self.is_draining() {
            return Err(RequestError::Draining);
        }
        if let Some(model) = &request.model {
            // Issue 21: a session asks for one of the configured models, or none.
            let provider = &self.inner.shared.provider;
            if !provider.serves_model(model) {
                return Err(RequestError::Host(HostError::UnknownModel {
                    name: model.clone(),
                    configured: provider.model_names(),
                }));
            }
        }
        let _slot = self.reserve()?;
        let shared = self.inner.shared.clone();
        let limits = &self.inner.limits;
        let (requests, inbox) = mpsc::channel(limits.inbox.max(1));
        let (live, _) = broadcast::channel(limits.live_capacity.max(16));
        let approvals = Arc::new(Approvals::default());
        let key_cell: Arc<std::sync::OnceLock<SessionId>> = Arc::default();
        let sink = self.sink(live.clone(), key_cell.clone());
        let workspace = request
            .workspace
            .clone()
            .unwrap_or_else(|| shared.workspace.clone());
        let approval_mode = request.approval_mode.unwrap_or(shared.approval_mode);
        let status = Arc::new(watch::Sender::new(SessionStatus {
            key: key
                .clone()
                .or_else(|| resume.clone())
                .unwrap_or_else(|| SessionId::new("opening")),
            session_id: None,
            workspace: workspace.display().to_string(),
            approval_mode,
            model: request.model.clone(),
            activity: Activity::Turn,
            turns: 0,
            last_activity_ms: shared.settings.clock.now_ms(),
            records: 0,
            usage: None,
            usage_by_model: None,
            owner: request.owner.clone(),
        }));
        let stop = Arc::new(StopSignal::default());
        let (detach, detached) = watch::channel(false);
        let operator = Arc::new(RemoteOperator {
            approvals: approvals.clone(),
            live: sink.clone(),
            status: status.clone(),
            timeout: limits.approval_timeout,
            stop: stop.clone(),
            clock: shared.settings.clock.clone(),
        });
        // A fresh session is created here, so its id, and with it its shard, is known before
        // the conversation is placed.
        let (created, arbiter) = match &resume {
            Some(id) => (None, self.arbiter(id)),
            None => {
                let created = shared
                    .fresh_session(
                        workspace.clone(),
                        Choices {
                            approval_mode,
                            model: request.model.clone(),
                            mode: Some(PromptMode::Work),
                            owner: request.owner.clone(),
                        },
                        &[],
                    )
                    .await?;
                let arbiter = self.arbiter(&created.state.info.session_id);
                (Some(created), arbiter)
            }
        };
        let (opened, opening) = oneshot::channel();
        let boot = Boot {
            gateway: Arc::downgrade(&self.inner),
            stop,
            created,
            shared,
            workspace,
            approval_mode,
            model: request.model,
            owner: request.owner,
            resume,
            operator,
            sink,
            status: status.clone(),
            inbox,
            opened,
            detached,
            key,
        };
        self.spawn(boot, arbiter);
        let (key, stop, events) = match opening.await {
            Ok(Ok(opened)) => opened,
            Ok(Err(error)) => return Err(RequestError::Host(error)),
            Err(_) => return Err(RequestError::Host(HostError::NoSession)),
        };
        let _ = key_cell.set(key.clone());
        for event in events {
            self.feed(Some(key.clone()), event);
        }
        let handle = SessionHandle {
            key: key.clone(),
            requests,
            status: status.subscribe(),
            live,
            approvals,
            stop,
            draining: self.inner.draining.clone(),
            moving: Arc::default(),
            detach: Arc::new(detach),
        };
        self.table().insert(key, handle.clone());
        Ok(handle)
    }

    /// The live sink of one session: its own feed, and the gateway's once its key is known.
    fn sink(
        &self,
        live: broadcast::Sender<Arc<HostEvent>>,
        key: Arc<std::sync::OnceLock<SessionId>>,
    ) -> LiveSink {
        let feed = self.inner.feed.clone();
        Arc::new(move |event: &HostEvent| {
            let event = Arc::new(event.clone());
            // No subscriber is not an error: nobody watches this session now.
            let _ = live.send(event.clone());
            if let Some(key) = key.get() {
                let _ = feed.send(FeedEvent {
                    session: Some(key.clone()),
                    event,
                });
            }
        })
    }

    fn feed(&self, session: Option<SessionId>, event: HostEvent) {
        let _ = self.inner.feed.send(FeedEvent {
            session,
            event: Arc::new(event),
        });
    }

    /// Counts a session being opened against the bound, until the guard drops.
    fn reserve(&self) -> Result<OpeningSlot<'_>, RequestError> {
        let opening = self.inner.opening.fetch_add(1, Ordering::AcqRel) + 1;
        let slot = OpeningSlot(&self.inner.opening);
        if self.table().len() + opening > self.inner.limits.max_sessions {
            return Err(RequestError::Full(self.inner.limits.max_sessions));
        }
        Ok(slot)
    }

    /// Where a session runs: the next of [`GatewayLimits::arbiters`], or its shard's arbiter.
    fn arbiter(&self, session: &SessionId) -> ArbiterHandle {
        let arbiters = &self.inner.limits.arbiters;
        if arbiters.is_empty() {
            return self.inner.shared.pipeline.arbiter_for(session);
        }
        let next = self.inner.next_arbiter.fetch_add(1, Ordering::Relaxed) % arbiters.len();
        arbiters[next].clone()
    }

    fn spawn(&self, boot: Boot, arbiter: ArbiterHandle) {
        // The conversation is built on the arbiter it lives on (its lifecycle actor starts
        // there); only the boot's ingredients cross the thread.
        let spawned = arbiter.spawn_fn(move || {
            actix_rt::spawn(boot.run());
        });
        if !spawned {
            tracing::warn!("an arbiter of the gateway has stopped; a session could not start");
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, SessionHandle>> {
        self.inner.table()
    }

    /// Forgets the session `key` if its task has ended (its lease was lost to another node).
    fn forget_ended(&self, key: &SessionId) {
        self.inner.forget_ended(key);
    }
}

impl Inner {
    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, SessionHandle>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Removes `key` from the table when its task has ended, and only then: a handle opened
    /// again under the same key stays.
    fn forget_ended(&self, key: &SessionId) {
        let mut table = self.table();
        if table.get(key).is_some_and(SessionHandle::has_ended) {
            table.remove(key);
        }
    }
}

struct OpeningSlot<'a>(&'a AtomicUsize);

impl Drop for OpeningSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

type Opened = (SessionId, Arc<StopSignal>, Vec<HostEvent>);

/// What a session's task starts from.
struct Boot {
    /// The gateway, to leave its table when the session ends by itself (a lost lease).
    gateway: std::sync::Weak<Inner>,
    /// The session's stop signal (its operator waits on it too).
    stop: Arc<StopSignal>,
    /// The session the store created for a fresh open (none to resume).
    created: Option<crate::state::Opened>,
    shared: Arc<Shared>,
    workspace: PathBuf,
    approval_mode: ApprovalMode,
    model: Option<String>,
    owner: Option<crate::store::SessionOwner>,
    resume: Option<SessionId>,
    operator: Arc<RemoteOperator>,
    sink: LiveSink,
    status: Arc<watch::Sender<SessionStatus>>,
    inbox: mpsc::Receiver<(Request, tracing::Span)>,
    opened: oneshot::Sender<Result<Opened, HostError>>,
    /// Raised when the turn waiting for an approval is handed over (issue 49).
    detached: watch::Receiver<bool>,
    /// The key it is known by, when not its id (a moved session, issue 49).
    key: Option<SessionId>,
}

impl Boot {
    async fn run(self) {
        let clock = self.shared.settings.clock.clone();
        let mut conversation = Conversation::new(self.shared, self.workspace, self.approval_mode);
        conversation.set_operator(self.operator);
        conversation.set_stop_signal(self.stop);
        conversation.set_owner(self.owner);
        conversation.attach_live(self.sink);
        conversation.continue_waiting_approvals();
        let opened = match (&self.resume, self.created) {
            (Some(id), _) => conversation.resume(id).await.map(|()| id.clone()),
            (None, Some(created)) => conversation.open_created(created).await,
            (None, None) => conversation.open().await,
        };
        let opened = match (opened, self.model) {
            (Ok(id), Some(model)) => conversation
                .command(SessionCommand::Model(model))
                .await
                .map(|()| id),
            (opened, _) => opened,
        };
        let key = match opened {
            Ok(id) => self.key.unwrap_or(id),
            Err(error) => {
                let _ = self.opened.send(Err(error));
                return;
            }
        };
        // Everything the status shows comes from the conversation as it now is: a resumed
        // session's stored approval mode, model and turn count, never the open defaults.
        self.status.send_modify(|s| {
            s.key = key.clone();
            s.activity = Activity::Idle;
            session::refresh_status(s, &conversation);
        });
        let events = conversation.take_events();
        let stop = conversation.stop_signal();
        let answer = (key.clone(), stop, events);
        let mut moved = session::Moved {
            detach: self.detached,
            gone: false,
        };
        let sent = if conversation.has_waiting_turn() {
            let continued = waiting::continue_waiting(
                &mut conversation,
                &self.status,
                self.opened,
                answer,
                &mut moved,
            )
            .await;
            if continued.lost {
                if let Some(gateway) = self.gateway.upgrade() {
                    gateway.forget_ended(&key);
                }
                return;
            }
            continued.sent
        } else {
            self.opened.send(Ok(answer)).is_ok()
        };
        if !sent {
            // The caller gave up waiting: end the session again.
            let _ = conversation.close().await;
            return;
        }
        session::serve(conversation, self.inbox, self.status, clock, moved).await;
        // The inbox is gone with the task: a session that ended by itself (another node took
        // it over) leaves the table, so this node can open it again later.
        if let Some(gateway) = self.gateway.upgrade() {
            gateway.forget_ended(&key);
        }
    }
}

/// The active session of a handle, as the lifecycle's shutdown needs it.
fn active_info(handle: &SessionHandle) -> Option<SessionInfo> {
    let status = handle.status();
    if status.activity == Activity::Closed {
        return None;
    }
    Some(SessionInfo {
        workspace_root: status.workspace,
        session_id: status.session_id?,
        approval_mode: status.approval_mode,
    })
}

/// Waits until the session is neither in a turn nor waiting for an approval; false when
/// `budget` ran out first.
async fn wait_idle(mut status: watch::Receiver<SessionStatus>, budget: Duration) -> bool {
    let idle = status.wait_for(|s| !matches!(s.activity, Activity::Turn | Activity::Approval));
    matches!(tokio::time::timeout(budget, idle).await, Ok(Ok(_)))
}
