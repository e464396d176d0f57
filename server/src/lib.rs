//! `hookline serve`: a thin HTTP and WebSocket front over a [`Gateway`] (issue 11, docs/serve.md).
//!
//! The server is an axum router served on the caller's actix system (actix-rt is tokio
//! underneath): one acceptor on the caller's thread deals the connections to a server on each
//! pipeline shard's thread (`accept.rs`, [`ServeConfig::serve_on_shards`]); sessions live on the
//! gateway's arbiters (by default their pipeline shards', each made on the shard that served
//! its request). Every route's future is `Send`: handlers only message session tasks through
//! [`SessionHandle`](hookline_host::gateway::SessionHandle)s.
//!
//! Bounded everywhere: request bodies are capped, requests time out, sessions are capped by the
//! gateway, each session's inbox and live feed are bounded, and [`ServeHandle::drain`] drains the
//! gateway within its budget before the listener closes. [`ServeHandle::hand_over`] instead
//! hands every session to a server that replaces this one on the same socket (issue 49,
//! docs/serve.md "Hand-over"), which [`ServeHandle::adopt`]s them.
//!
//! ```text
//! let gateway = Host::builder().provider(Arc::new(EchoProvider::new())).start_gateway(limits)?;
//! let (addr, handle) = serve::start(gateway, ServeConfig::new(root)).await?;
//! // ... clients talk to http://{addr}/v1/sessions ...
//! let summary = handle.drain("done", None).await?;
//! ```

mod accept;
mod auth;
pub mod console;
mod error;
mod metrics;
mod openapi;
mod plugins;
mod routes;
mod trace;
mod workspace;

pub use auth::jwt::{JwksSource, JwtSettings, REFETCH_FLOOR};

/// Reads the JWKS of `settings` once, as [`start`] will (`hookline serve` checks it before it
/// spawns any plugin).
///
/// # Errors
/// [`ServeError::Jwks`]: why it cannot be read.
pub async fn check_jwks(settings: &JwtSettings) -> Result<(), ServeError> {
    auth::jwt::check_jwks(settings)
        .await
        .map_err(ServeError::Jwks)
}
pub use auth::limits::TenantLimits;
pub use auth::tenants::{ApprovalAnswerers, TenantPolicy, Tenants};
pub use auth::{Principal, DEFAULT_TENANT};
pub use error::{ApiError, ErrorBody, ErrorDetail, RETRY_AFTER_SECS};
/// What [`ServeHandle::hand_over`] did.
pub use hookline_host::gateway::HandoverSummary;
/// The JWT signing algorithms (`jsonwebtoken`'s).
pub use jsonwebtoken::Algorithm as JwtAlgorithm;
pub use metrics::install_recorder;
pub use openapi::openapi_json;
pub use plugins::{PluginView, PluginsView, ServedState};
pub use workspace::{resolve_workspace, WorkspaceRoot};

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use metrics_exporter_prometheus::PrometheusHandle;
use tokio::sync::watch;

use hookline_host::gateway::{Gateway, MovingSession, ShutdownSummary};
use hookline_host::state::HostError;

/// Default cap on a request body.
pub const DEFAULT_BODY_LIMIT: usize = 256 * 1024;

/// Default bound on one request (a JSON turn waits for its approvals: keep it above the
/// approval timeout).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// How long an idempotency key lasts after its request (`--idempotency-ttl`, docs/serve.md).
pub const DEFAULT_IDEMPOTENCY_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// The most idempotency keys one session keeps (`--idempotency-keys`): past it the oldest
/// finished ones are forgotten.
pub const DEFAULT_IDEMPOTENCY_KEYS: usize = 256;

/// How long the listener waits for open connections (event streams, sockets) once the gateway
/// has drained.
const CLOSE_CONNECTIONS_WAIT: Duration = Duration::from_secs(2);

/// How long a hand-over waits, once its sessions' turns are out, for the answers of keyed
/// requests to be stored before it gives the sessions back (a store write each).
const KEYS_SETTLE_WAIT: Duration = Duration::from_secs(5);

/// How a server runs.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// Where it listens (unless `listener` is given).
    pub listen: SocketAddr,
    /// A socket already bound and listening: handed over by the server this one replaces, or by
    /// systemd (issue 49). `listen` is then ignored. The caller may keep a clone of it (to hand it
    /// over in turn); the server accepts on a duplicate of its own.
    pub listener: Option<Arc<std::net::TcpListener>>,
    /// The directory every session's workspace lies in.
    pub workspace_root: PathBuf,
    /// The bearer token every route but `/healthz` needs, an admin of the tenant `default`;
    /// none: no token.
    pub token: Option<String>,
    /// The API key table (issue 48); with a key in it, every route but `/healthz` and the
    /// console's page needs credentials.
    pub keys: Option<KeyTable>,
    /// How JWT bearer tokens are checked (issue 48); none: JWTs are refused.
    pub jwt: Option<JwtSettings>,
    /// Each tenant's settings.
    pub tenants: Tenants,
    /// The cap on a request body, in bytes.
    pub body_limit: usize,
    /// The bound on one request (not on event streams and sockets once they answered).
    pub request_timeout: Duration,
    /// What `GET /v1/plugins` reports.
    pub plugins: PluginsView,
    /// How long an idempotency key lasts after its request's claim.
    pub idempotency_ttl: Duration,
    /// The most idempotency keys one session keeps.
    pub idempotency_keys: usize,
    /// This server replaces a running one (issue 49): for this long from its start, a request
    /// for a session the predecessor still holds waits for it (at most this long) and takes it
    /// over, instead of being refused. The predecessor's drain budget and a margin.
    pub predecessor_wait: Option<Duration>,
    /// Whether connections are dealt to a server on every pipeline shard's thread (the
    /// default, `accept.rs`), or all served on the thread that starts the server (an embedder
    /// keeping HTTP on its own thread; a test needing one thread's order).
    pub serve_on_shards: bool,
}

impl ServeConfig {
    /// Loopback on an ephemeral port, no token, default bounds, sessions under `root`.
    pub fn new(workspace_root: impl Into<PathBuf>) -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            listener: None,
            workspace_root: workspace_root.into(),
            token: None,
            keys: None,
            jwt: None,
            tenants: Tenants::default(),
            body_limit: DEFAULT_BODY_LIMIT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            plugins: PluginsView::default(),
            idempotency_ttl: DEFAULT_IDEMPOTENCY_TTL,
            idempotency_keys: DEFAULT_IDEMPOTENCY_KEYS,
            predecessor_wait: None,
            serve_on_shards: true,
        }
    }
}

/// The API key table a server checks keys against (`hookline keys` writes it).
#[derive(Clone)]
pub struct KeyTable(pub Arc<dyn hookline_host::store::ApiKeyTable>);

impl std::fmt::Debug for KeyTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyTable")
    }
}

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The address cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// A non-loopback address without a token.
    #[error("refusing to listen on {0} without --token-file: only loopback addresses may go without a token")]
    NeedsToken(SocketAddr),
    /// The token is empty.
    #[error("the token is empty")]
    EmptyToken,
    /// The JWKS cannot be read.
    #[error("{0}")]
    Jwks(String),
    /// The API key table cannot be read.
    #[error("cannot read the API key table: {0}")]
    Keys(hookline_host::store::StoreError),
    /// The workspace root cannot be used.
    #[error("cannot use workspace root {path}: {source}")]
    Root {
        /// The directory.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

/// What every route reads.
#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) gateway: Gateway,
    pub(crate) root: Arc<WorkspaceRoot>,
    /// Who calls (issue 48).
    pub(crate) auth: Arc<auth::Authenticator>,
    /// Each tenant's settings.
    pub(crate) tenants: Arc<Tenants>,
    /// Each tenant's usage against its limits on this node.
    pub(crate) limiter: Arc<auth::limits::Limiter>,
    pub(crate) draining: Arc<AtomicBool>,
    pub(crate) metrics: PrometheusHandle,
    pub(crate) plugins: Arc<PluginsView>,
    pub(crate) body_limit: usize,
    /// Idempotency keys: their settings and the keyed requests running here.
    pub(crate) keys: Arc<routes::Keys>,
    /// The answered approvals `GET /v1/sessions/{id}` shows, kept per session (issue 48).
    pub(crate) answered: Arc<auth::answered::AnsweredCache>,
}

impl AppState {
    /// Whether new sessions and turns are refused (draining, or handing over to a successor).
    pub(crate) fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
            || self.gateway.is_draining()
            || self.gateway.is_handing_over()
    }

    /// [`ApiError::Moved`] while handing over to a successor (the request goes to it);
    /// [`ApiError::Draining`] once draining.
    pub(crate) fn admit(&self) -> Result<(), ApiError> {
        if self.gateway.is_handing_over() {
            Err(ApiError::Moved)
        } else if self.is_draining() {
            Err(ApiError::Draining)
        } else {
            Ok(())
        }
    }
}

/// A running server.
pub struct ServeHandle {
    state: AppState,
    stop: watch::Sender<bool>,
    /// Turned false to close the listener before the connections are told to shut down.
    accepting: watch::Sender<bool>,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl ServeHandle {
    /// The gateway behind it.
    pub fn gateway(&self) -> &Gateway {
        &self.state.gateway
    }

    /// Starts refusing: `/readyz` answers 503, new sessions and turns 503 (SPEC G2, issue 11
    /// item 4). Running turns go on.
    pub fn begin_drain(&self) {
        self.state.draining.store(true, Ordering::Release);
    }

    /// Drains and stops: refuses new work, shuts the gateway down (running turns get the drain
    /// budget, then are stopped like `/stop`; `gateway:shutdown` with its bounded wait;
    /// session ends), then closes the listener, waiting a bounded time for open connections.
    ///
    /// # Errors
    /// [`HostError`] when the gateway was shut down already.
    pub async fn drain(
        self,
        reason: &str,
        restart_expected_ms: Option<u64>,
    ) -> Result<ShutdownSummary, HostError> {
        self.begin_drain();
        let summary = self
            .state
            .gateway
            .shutdown(reason, restart_expected_ms)
            .await;
        self.stop().await;
        summary
    }

    /// The sessions open here, the ones a hand-over moves (issue 49), for the successor's
    /// [`ServeHandle::adopt`]: each its key, or `key/active` when its conversation went on to
    /// another stored session (`/new`, `/reset`, ...; [`MovingSession`]).
    pub fn session_ids(&self) -> Vec<String> {
        self.state
            .gateway
            .session_ids()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    /// Begins handing over (issue 49), once the successor serves on the same socket: this
    /// server stops accepting (the successor accepts every new connection from here), new
    /// sessions and turns are answered 307 `session-moved` (with `Connection: close`), and once
    /// the opens under way have finished, [`ServeHandle::session_ids`] lists every session
    /// that will move. Call it before listing the sessions for the successor.
    pub async fn begin_hand_over(&self) {
        // With both accepting until the sessions were adopted, a request answered 307 here and
        // sent again on a new connection could be accepted here again, and again: a client
        // gave up after ten redirects under load (tests/serve_replace_load.rs).
        let _ = self.accepting.send(false);
        self.state.gateway.begin_hand_over().await;
    }

    /// Takes over the sessions `ids` a predecessor hands over, each in the background as soon
    /// as the predecessor gives its lease back (waiting at most `wait`); a request for one of
    /// them meanwhile waits for it (issue 49). See [`Gateway::adopt`].
    ///
    /// # Panics
    /// When called outside a tokio runtime (the takeovers run on tasks of the current one).
    pub fn adopt(&self, ids: Vec<String>, wait: Duration) {
        let ids = ids
            .iter()
            .map(|id| MovingSession::from(id.as_str()))
            .collect();
        self.state.gateway.adopt(ids, wait);
    }

    /// Hands every session over to the server that replaces this one and stops (issue 49): the
    /// listener closes at once, if [`ServeHandle::begin_hand_over`] did not close it already
    /// (the successor accepts on its duplicate), and idle kept-alive connections with it; a request still arriving here for new work is answered 307
    /// `session-moved` with `Connection: close`; running turns get the drain budget (their
    /// event streams end normally); a turn waiting for an approval ends its request with 202
    /// `turn-moved` and goes on in the successor; each WebSocket is closed with 1012 once its
    /// session has moved; `gateway:pre-restart` announces `restart_expected_ms` (0 when none);
    /// each session's end hooks run and its lease is given back. See [`Gateway::hand_over`].
    ///
    /// # Errors
    /// [`HostError`] when the gateway was shut down already.
    pub async fn hand_over(
        self,
        restart_expected_ms: Option<u64>,
    ) -> Result<HandoverSummary, HostError> {
        // The listener first; the connections once those accepted just before have read their
        // first request (hyper would close them unread: `accept.rs`).
        let _ = self.accepting.send(false);
        let stop = self.stop.clone();
        let keys = Arc::clone(&self.state.keys);
        // Every keyed request's answer stored while the sessions are still here, so a retry on
        // the successor finds it (or finds the key free), never a claim of a process gone.
        let settled = async move {
            if !keys.settled(KEYS_SETTLE_WAIT).await {
                tracing::warn!(
                    "keyed requests still unsettled {KEYS_SETTLE_WAIT:?} into the hand-over: \
                     their retries on the successor are answered request-interrupted"
                );
            }
        };
        let (summary, ()) = tokio::join!(
            self.state
                .gateway
                .hand_over_after("replaced", restart_expected_ms, settled),
            async move {
                tokio::time::sleep(accept::FIRST_REQUEST_GRACE).await;
                let _ = stop.send(true);
            }
        );
        self.closed().await;
        summary
    }

    /// Closes the listener without draining the gateway (bounded).
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        self.closed().await;
    }

    /// Waits (bounded) for the connections still open once the listener was told to close.
    async fn closed(self) {
        let mut served = self.served;
        if tokio::time::timeout(CLOSE_CONNECTIONS_WAIT, &mut served)
            .await
            .is_err()
        {
            served.abort();
        }
    }
}

/// Binds `config.listen` and serves the API over `gateway` on a task of the current runtime.
/// Returns the bound address (an ephemeral port resolved) and the handle that drains it.
///
/// # Errors
/// [`ServeError`]: a non-loopback address without a token, an unusable workspace root, or an
/// address that cannot be bound.
pub async fn start(
    gateway: Gateway,
    config: ServeConfig,
) -> Result<(SocketAddr, ServeHandle), ServeError> {
    let token: Option<Arc<[u8]>> = match config.token {
        Some(token) if token.trim().is_empty() => return Err(ServeError::EmptyToken),
        Some(token) => Some(Arc::from(token.trim().as_bytes())),
        None => None,
    };
    let keys = match config.keys {
        Some(KeyTable(table)) => Some(
            auth::keys::KeyCache::start(table)
                .await
                .map_err(ServeError::Keys)?,
        ),
        None => None,
    };
    let jwt = match config.jwt {
        Some(settings) => Some(
            auth::jwt::JwtVerifier::start(settings)
                .await
                .map_err(ServeError::Jwks)?,
        ),
        None => None,
    };
    let auth = auth::Authenticator::new(token, keys, jwt);
    // Issue 11 item 3: only loopback may go without credentials.
    if !auth.enforced() && !config.listen.ip().is_loopback() {
        return Err(ServeError::NeedsToken(config.listen));
    }
    let root = WorkspaceRoot::new(&config.workspace_root).map_err(|source| ServeError::Root {
        path: config.workspace_root.display().to_string(),
        source,
    })?;
    crate::metrics::label_tenants(config.tenants.named.keys().map(String::as_str));
    let state = AppState {
        gateway,
        root: Arc::new(root),
        auth: Arc::new(auth),
        limiter: Arc::new(auth::limits::Limiter::new(Arc::new(config.tenants.clone()))),
        tenants: Arc::new(config.tenants),
        draining: Arc::new(AtomicBool::new(false)),
        metrics: install_recorder(),
        plugins: Arc::new(config.plugins),
        body_limit: config.body_limit,
        keys: Arc::new(routes::Keys::new(
            config.idempotency_ttl,
            config.idempotency_keys,
        )),
        answered: Arc::default(),
    };
    if let Some(wait) = config.predecessor_wait {
        state.gateway.expect_predecessor(wait);
    }
    let bind_error = |source| ServeError::Bind {
        addr: config.listen,
        source,
    };
    let socket = match &config.listener {
        Some(listener) => Arc::clone(listener),
        None => Arc::new(std::net::TcpListener::bind(config.listen).map_err(bind_error)?),
    };
    let addr = socket.local_addr().map_err(bind_error)?;
    let app = routes::router(state.clone(), config.request_timeout);
    let (stop, stopped) = watch::channel(false);
    let (accepting, accepting_rx) = watch::channel(true);
    let others = if config.serve_on_shards {
        other_shards(&state.gateway)
    } else {
        Vec::new()
    };
    let served = accept::serve_everywhere(&socket, others, app, &accepting_rx, &stopped)
        .map_err(bind_error)?;
    metrics::spawn_upkeep(
        state.metrics.clone(),
        state.gateway.clone(),
        state.plugins.clone(),
        stop.subscribe(),
    );
    tracing::info!(%addr, "hookline serve listening");
    Ok((
        addr,
        ServeHandle {
            state,
            stop,
            accepting,
            served,
        },
    ))
}

/// The arbiters of the gateway's pipeline shards other than the current thread's: each accepts
/// connections too, and sessions made there run there (`accept.rs`, issue 47).
fn other_shards(gateway: &Gateway) -> Vec<actix_rt::ArbiterHandle> {
    let pipeline = gateway.pipeline();
    let here = pipeline.shard_here();
    (0..pipeline.shards())
        .filter(|&index| Some(index) != here)
        .filter_map(|index| pipeline.shard_arbiter(index))
        .collect()
}
