//! `hookline serve [--listen 127.0.0.1:7878] [--plugins DIR] [--order NAMES] [--workspace-root DIR]
//! [--store DIR|postgres://...] [--migrate] [--node NAME] [--lease-ttl-ms MS] [--token-file FILE]
//! [--max-sessions N] [--approval-timeout-ms MS] [--drain-budget-ms MS] [--restart-expected-ms MS]
//! [--idempotency-ttl DURATION] [--idempotency-keys N] [--handover-socket PATH] [--replace
//! [--check] [--allow-skipped-plugins]] [-v]`:
//! many live sessions in one process over HTTP and WebSocket (issue 11, docs/serve.md); with a
//! PostgreSQL store, one node of several (issue 14, docs/deploy.md).
//!
//! Plugins load as `hookline run` loads them, without its fallback: a server runs only the
//! plugins it finds (none, said once at start, when it finds none), and the bundled demo
//! plugins only when `--demo-plugins` asks for them (issue 34 item 7). The model comes from the provider flags `run` and `chat` share, or the `[[model]]`s of
//! `--config FILE` (issue 21: each session picks one by name), else the offline
//! [`EchoProvider`]. The config file's `[serve]`, `[limits]` and `[timeouts]` set what the flags
//! of the same names set; a flag given wins. Sessions run on their pipeline shard's arbiter (one
//! per core), or are spread over `--arbiters N` arbiters of their own.
//!
//! SIGTERM or SIGINT drains (SPEC G2): `/readyz` turns 503, new sessions and turns are refused
//! with 503, running turns get the drain budget and are then stopped like `/stop`,
//! `gateway:shutdown` runs with its 5 s wait, session ends within their 2 s budget, plugin
//! processes shut down, and the process exits 0. A second signal exits at once with status 1;
//! every record acknowledged so far is already on disk (the store syncs each append).
//!
//! Replacement (issue 49, docs/serve.md "Replacing a running server"): every server answers on a
//! rendezvous socket (`serve_listen::rendezvous_path`). `--replace` starts a successor that
//! takes the running server's listening socket over it, serves, says `ready`, and adopts the
//! sessions the old one had open while the old one hands over and exits; SIGHUP makes the
//! running server start that successor itself. A successor that cannot start says why and exits
//! non-zero; the old one goes on. Under systemd, `READY=1`, `RELOADING=1` and `MAINPID=` are
//! sent, and a socket passed by socket activation is served.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;

use super::config::{Config, ConfigError};
use super::plugin_dirs::PluginDirs;
use super::provider::{ModelSetupError, ProviderArgs};
use super::run::plugin_builder;
use super::serve_listen::{listening_socket, rendezvous_path, Origin};
use super::serve_replace;
use super::serve_running::{signals, take_over, Running};
use super::serve_store::{parse_store, StoreArgs, StoreSetupError};
use hookline_host::demo::example_plugins;
use hookline_host::gateway::GatewayLimits;
use hookline_host::handover::{HandoverError, Predecessor};
use hookline_host::loading::LoadNote;
use hookline_host::provider::EchoProvider;
use hookline_server::{install_recorder, start, PluginsView, ServeConfig, DEFAULT_BODY_LIMIT};

/// The address served unless `--listen` or the config file says otherwise.
const DEFAULT_LISTEN: &str = "127.0.0.1:7878";

/// Arguments of `hookline serve`. Settings the config file may also give are `Option`s here: a
/// flag given wins over the file, the file over the default.
#[derive(Debug, Args)]
pub(crate) struct ServeArgs {
    /// The address to listen on (default 127.0.0.1:7878). Without --token-file only loopback
    /// addresses are allowed.
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// The user plugins directory (default `$HOOKLINE_HOME/plugins` or `~/.hookline/plugins`).
    /// With no plugin found, the server runs none.
    #[arg(long, value_name = "DIR")]
    plugins: Option<PathBuf>,
    /// Plugin names to load first, in this order (comma-separated); the rest follow by name. A
    /// name no plugin directory has is a note at start, and refuses a replacement.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    order: Vec<String>,
    /// Also run the bundled demo plugins and their `word_count` tool (for trying the server;
    /// never needed in production).
    #[arg(long)]
    demo_plugins: bool,
    /// The directory every session's workspace lies in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    workspace_root: Option<PathBuf>,
    /// The session store and, for PostgreSQL, this node's leases.
    #[command(flatten)]
    store: StoreArgs,
    /// A file holding the bearer token every route but /healthz needs.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Sessions open at once (default 10000); one more is refused with 503.
    #[arg(long)]
    max_sessions: Option<usize>,
    /// How long an operator approval waits before the call is denied, in milliseconds (default
    /// 60000).
    #[arg(long)]
    approval_timeout_ms: Option<u64>,
    /// How long running turns get to finish at shutdown, in milliseconds (default 10000).
    #[arg(long)]
    drain_budget_ms: Option<u64>,
    /// Announce a restart this many milliseconds away at shutdown (`gateway:pre-restart`).
    #[arg(long, value_name = "MS")]
    restart_expected_ms: Option<u64>,
    /// The cap on a request body, in bytes (default 262144).
    #[arg(long)]
    body_limit: Option<usize>,
    /// The bound on one request (a JSON turn waiting for approvals), in milliseconds (default
    /// 120000).
    #[arg(long)]
    request_timeout_ms: Option<u64>,
    /// Arbiters (threads) of their own that sessions are spread over (default: none, each
    /// session runs on its pipeline shard's arbiter, one per core).
    #[arg(long)]
    arbiters: Option<usize>,
    /// How long an Idempotency-Key is remembered after its request (`24h`, `90m`, `30s`;
    /// default 24h).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    idempotency_ttl: Option<Duration>,
    /// The most Idempotency-Keys one session keeps; past it the oldest finished are forgotten
    /// (default 256).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    idempotency_keys: Option<u64>,
    /// Store each turn in one append at its end instead of step by step (for measuring what
    /// durable steps cost; a crash then loses a running turn whole).
    #[arg(long)]
    commit_per_turn: bool,
    /// The rendezvous socket a successor finds this server on (default: `hookline-serve.sock`
    /// in the file store's directory; with PostgreSQL, `hookline-serve-NODE.sock` in
    /// `$XDG_RUNTIME_DIR` or the temporary directory).
    #[arg(long, value_name = "PATH")]
    handover_socket: Option<PathBuf>,
    /// Replace the server answering on the rendezvous: take its listening socket, serve, then
    /// let it hand its sessions over and exit. Fails, leaving it serving, when this one cannot
    /// start (a plugin directory that would be skipped counts, unless --allow-skipped-plugins).
    #[arg(long)]
    replace: bool,
    /// With --replace: only say whether a successor would start (config, store, plugins, the
    /// rendezvous), without starting one; exit 0 if it would, 1 if not.
    #[arg(long, requires = "replace")]
    check: bool,
    /// With --replace: start even when a plugin directory is skipped (a fresh start skips it
    /// with a note; a successor refuses, not to swap a working plugin for a broken one).
    #[arg(long, requires = "replace")]
    allow_skipped_plugins: bool,
    /// Show what each plugin writes to its stderr (its log) on this stderr, each line prefixed
    /// with `[<plugin>] ` (as `run`, `chat` and `hooks` do).
    #[arg(long, short = 'v')]
    verbose: bool,
    /// The model: `--provider openai|anthropic ...` or `--config FILE` (as `run` and `chat`).
    #[command(flatten)]
    provider: ProviderArgs,
}

/// What serve runs with: each setting from its flag, else the config file, else the default.
struct Settings {
    listen: SocketAddr,
    plugins: Option<PathBuf>,
    token_file: Option<PathBuf>,
    max_sessions: usize,
    approval_timeout_ms: u64,
    drain_budget_ms: u64,
    body_limit: usize,
    request_timeout_ms: u64,
    arbiters: Option<usize>,
    idempotency_ttl: Duration,
    idempotency_keys: usize,
}

impl Settings {
    fn new(args: &ServeArgs, config: Option<&Config>) -> Result<Self, ServeCliError> {
        let serve = config.map(|c| c.serve.clone()).unwrap_or_default();
        let limits = config.map(|c| c.limits.clone()).unwrap_or_default();
        let timeouts = config.map(|c| c.timeouts.clone()).unwrap_or_default();
        let default_listen: SocketAddr = DEFAULT_LISTEN
            .parse()
            .map_err(|_| ServeCliError::Options("the default address is not one".into()))?;
        Ok(Self {
            listen: args.listen.or(serve.listen).unwrap_or(default_listen),
            plugins: args.plugins.clone().or(serve.plugins),
            token_file: args.token_file.clone().or(serve.token_file),
            max_sessions: args.max_sessions.or(limits.max_sessions).unwrap_or(10_000),
            approval_timeout_ms: args
                .approval_timeout_ms
                .or(timeouts.approval_ms)
                .unwrap_or(60_000),
            drain_budget_ms: args
                .drain_budget_ms
                .or(timeouts.drain_budget_ms)
                .unwrap_or(10_000),
            body_limit: args
                .body_limit
                .or(limits.body_limit)
                .unwrap_or(DEFAULT_BODY_LIMIT),
            request_timeout_ms: args
                .request_timeout_ms
                .or(timeouts.request_ms)
                .unwrap_or(120_000),
            arbiters: args.arbiters.or(serve.arbiters),
            idempotency_ttl: args
                .idempotency_ttl
                .or(timeouts.idempotency_ttl_ms.map(Duration::from_millis))
                .unwrap_or(hookline_server::DEFAULT_IDEMPOTENCY_TTL),
            idempotency_keys: match args.idempotency_keys.or(limits.idempotency_keys) {
                None => hookline_server::DEFAULT_IDEMPOTENCY_KEYS,
                Some(0) => {
                    return Err(ServeCliError::Options(
                        "limits.idempotency_keys must be at least 1".into(),
                    ))
                }
                Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
            },
        })
    }
}

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ServeCliError {
    #[error("'{}' is not a directory", .0.display())]
    NotADirectory(PathBuf),
    #[error("cannot read the token file {path}: {source}")]
    Token {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Host(#[from] hookline_host::state::HostError),
    #[error(transparent)]
    Serve(#[from] hookline_server::ServeError),
    #[error("cannot read the current directory: {0}")]
    Cwd(std::io::Error),
    #[error("cannot watch for signals: {0}")]
    Signals(std::io::Error),
    #[error("{0}")]
    Options(String),
    #[error(transparent)]
    Store(#[from] StoreSetupError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Model(#[from] ModelSetupError),
    #[error("cannot listen: {0}")]
    Listen(std::io::Error),
    #[error("no server to replace: {0}")]
    Handover(#[from] HandoverError),
    #[error("{0} (a successor refuses a plugin directory a fresh start would skip; --allow-skipped-plugins starts anyway)")]
    SkippedPlugins(String),
}

/// How a served run ended.
pub(crate) enum Ended {
    /// Drained on SIGTERM or SIGINT.
    Drained,
    /// Handed over to a successor.
    HandedOver,
    /// `--replace --check`: a successor would start.
    Checked,
}

/// The server's runtime: actix's current-thread runtime with a bounded blocking pool. The file
/// store's I/O runs on that pool; with tokio's default (up to 512 threads) a successor taking
/// 200 sessions over (a look at each lease every few milliseconds) ran 150 to 300 threads, and
/// its resident memory went with their allocator heaps (issue 49, docs/serve.md), as the soak's
/// did (`soak.rs`).
fn serve_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(SERVE_BLOCKING_THREADS)
        .build()
}

/// Threads in the server runtime's blocking pool.
const SERVE_BLOCKING_THREADS: usize = 32;

/// Runs the command.
pub(crate) fn run(args: &ServeArgs) -> ExitCode {
    // The recorder goes in before any actor starts: the pipeline binds its metrics at start.
    install_recorder();
    let runtime = match serve_runtime() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("hookline serve: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let system = actix::System::with_tokio_rt(move || runtime);
    match system.block_on(serve(args)) {
        Ok(Ended::Checked) => {
            println!("hookline serve: a successor would start");
            ExitCode::SUCCESS
        }
        Ok(Ended::Drained | Ended::HandedOver) => ExitCode::SUCCESS,
        Err(error) if args.check => {
            eprintln!("hookline serve: a successor would not start: {error}");
            ExitCode::from(1)
        }
        Err(error) => {
            eprintln!("hookline serve: {error}");
            ExitCode::from(2)
        }
    }
}

/// A successor finds the server it replaces before anything else can fail, so that every
/// failure after is told to it (the old server says it on its stderr and goes on).
async fn serve(args: &ServeArgs) -> Result<Ended, ServeCliError> {
    let config = args.provider.config();
    let mut predecessor = match args.replace {
        true => Some(find_predecessor(
            args,
            config.as_ref().ok().and_then(Option::as_ref),
        )?),
        false => None,
    };
    let result = match config {
        Ok(config) => serve_with(args, config, &mut predecessor).await,
        Err(error) => Err(error.into()),
    };
    if let (Err(error), Some(old)) = (&result, predecessor.as_mut()) {
        let check = if args.check { "(--check) " } else { "" };
        let _ = old.failed(&format!("{check}{error}"));
    }
    result
}

/// Connects to the server this one replaces (`--replace`).
fn find_predecessor(
    args: &ServeArgs,
    config: Option<&Config>,
) -> Result<Predecessor, ServeCliError> {
    let store = store_args(args, config)?;
    if store.is_postgres() && store.node_name().is_none() && args.handover_socket.is_none() {
        return Err(ServeCliError::Options(
            "with a PostgreSQL store, --replace needs the node's --node NAME or its --handover-socket PATH".into(),
        ));
    }
    let root = workspace_root(args, config)?;
    let path = rendezvous_path(
        args.handover_socket.as_deref(),
        &store,
        &root,
        store.node_name(),
    );
    Ok(serve_replace::connect(&path)?)
}

/// The store options: the flags, else the config file's `[serve] store`.
fn store_args(args: &ServeArgs, config: Option<&Config>) -> Result<StoreArgs, ServeCliError> {
    let store_from_file = config
        .and_then(|c| c.serve.store.as_deref())
        .map(parse_store)
        .transpose()
        .map_err(|why| ServeCliError::Options(format!("the config file's [serve] store: {why}")))?;
    Ok(args.store.or_store(store_from_file))
}

/// The workspace root: the flag, else the config file's, else the current directory.
fn workspace_root(args: &ServeArgs, config: Option<&Config>) -> Result<PathBuf, ServeCliError> {
    match args
        .workspace_root
        .clone()
        .or_else(|| config.and_then(|c| c.serve.workspace_root.clone()))
    {
        Some(dir) => Ok(dir),
        None => std::env::current_dir().map_err(ServeCliError::Cwd),
    }
}

async fn serve_with(
    args: &ServeArgs,
    config: Option<Config>,
    predecessor: &mut Option<Predecessor>,
) -> Result<Ended, ServeCliError> {
    let started = Instant::now();
    let settings = Settings::new(args, config.as_ref())?;
    let root = workspace_root(args, config.as_ref())?;
    for dir in [Some(&root), settings.plugins.as_ref()]
        .into_iter()
        .flatten()
    {
        if !dir.is_dir() {
            return Err(ServeCliError::NotADirectory(dir.clone()));
        }
    }
    let token = match &settings.token_file {
        Some(file) => {
            Some(
                std::fs::read_to_string(file).map_err(|source| ServeCliError::Token {
                    path: file.display().to_string(),
                    source,
                })?,
            )
        }
        None => None,
    };
    let terminate = signals()?;
    // The database first: a bad URL or an unreachable database ends the start before any
    // plugin process is spawned.
    let mut store = store_args(args, config.as_ref())?;
    if let Some(old) = predecessor.as_ref() {
        // The predecessor's node name: the PostgreSQL leases it holds are ones moving here.
        store = store.or_node(old.offer().node.clone());
    }
    let pg = store.connect_pg().await?;
    if let (Some(dir), true) = (store.store_dir(), args.check) {
        hookline_host::store::Store::open(dir)
            .map_err(|error| ServeCliError::Options(format!("cannot open the store: {error}")))?;
    }
    // Issue 48: a bad `[jwt]` or a JWKS that cannot be read ends the start here too, before any
    // plugin process is spawned (the server reads the JWKS again when it starts).
    let jwt = match config.as_ref().and_then(|c| c.jwt.as_ref()) {
        Some(section) => Some(section.settings().map_err(ServeCliError::Options)?),
        None => None,
    };
    if let Some(settings) = &jwt {
        hookline_server::check_jwks(settings).await?;
    }
    let sessions = pg
        .clone()
        .map(|store| Arc::new(store) as Arc<dyn hookline_host::store::SessionStore>);
    // The same load options as `run` and `hooks` (one place builds them).
    let dirs = PluginDirs {
        user_dir: settings.plugins.clone(),
        workspace: Some(root.clone()),
        order: args.order.clone(),
        trust_file: None,
        verbose: args.verbose,
    };
    let options = dirs.load_options().map_err(ServeCliError::Options)?;
    let report = hookline_host::loading::load(&options).await;
    // Each directory skipped, and why, said at start (issue 46 item 2): an operator reads it
    // here, not only in `GET /v1/plugins`.
    let skipped: Vec<String> = report
        .notes
        .iter()
        .filter(|note| {
            matches!(
                note,
                LoadNote::Skipped { .. } | LoadNote::PinnedMissing { .. }
            )
        })
        .map(ToString::to_string)
        .collect();
    for note in &skipped {
        eprintln!("hookline serve: {note}");
    }
    // A successor is stricter than a fresh start (issue 49 item 3): it would replace a working
    // plugin with nothing, silently.
    if args.replace && !args.allow_skipped_plugins && !skipped.is_empty() {
        plugin_builder(report, None, args.demo_plugins)
            .shutdown_plugins()
            .await;
        return Err(ServeCliError::SkippedPlugins(skipped.join("; ")));
    }
    // The loaded plugins stay in the view: `/v1/plugins`, `/readyz` and the metrics read their
    // state at each request.
    let mut view = PluginsView::new(&report.statuses, report.plugins.clone());
    view.load_notes = report.notes.iter().map(ToString::to_string).collect();
    if args.demo_plugins {
        view.in_process = example_plugins()
            .iter()
            .map(|p| p.name().to_string())
            .collect();
    } else if report.statuses.is_empty() {
        // Said once, on stderr: an operator's server never runs demo code it did not ask for.
        eprintln!(
            "hookline serve: no plugin found in {}; serving with no plugins (--demo-plugins runs the bundled demo plugins)",
            searched(&options)
        );
    }
    let builder = plugin_builder(report, None, args.demo_plugins);
    // One code path with `run` and `chat`: flags, else the config file's models, else echo.
    let model = match builder
        .tool_registry()
        .map_err(ServeCliError::from)
        .and_then(|(tools, _)| Ok(args.provider.build(config.as_ref(), &tools)?))
    {
        Ok(model) => model.unwrap_or_else(|| Arc::new(EchoProvider::new())),
        Err(error) => {
            builder.shutdown_plugins().await;
            return Err(error);
        }
    };
    if args.check {
        builder.shutdown_plugins().await;
        if let Some(old) = predecessor.as_mut() {
            old.checked()?;
        }
        return Ok(Ended::Checked);
    }
    let mut builder = builder
        .provider(model)
        .durable_steps(!args.commit_per_turn)
        .workspace(&root)
        .workspace_fence(&root)
        .spaces_root(&root);
    if let Some(store) = store.store_dir() {
        builder = builder.store(store);
    }
    if let Some(sessions) = sessions {
        builder = builder.session_store(sessions);
    }
    // Without `--arbiters`, each session runs on its pipeline shard's arbiter (one per core), so
    // its hook calls make no thread hop: a session on arbiters of its own paid two hops per hook
    // call, even to a hook no plugin implements (issue 47).
    let threads = settings.arbiters.map_or(0, |threads| threads.max(1));
    let arbiters: Vec<actix::Arbiter> = (0..threads).map(|_| actix::Arbiter::new()).collect();
    let limits = GatewayLimits {
        max_sessions: settings.max_sessions,
        approval_timeout: Duration::from_millis(settings.approval_timeout_ms),
        drain_budget: Duration::from_millis(settings.drain_budget_ms),
        arbiters: arbiters.iter().map(actix::Arbiter::handle).collect(),
        ..GatewayLimits::default()
    };
    let gateway = builder.start_gateway(limits)?;
    view.load_notes.extend(
        gateway
            .pipeline()
            .load_notes()
            .iter()
            .map(ToString::to_string),
    );
    let tenants = config.as_ref().map(Config::tenants).unwrap_or_default();
    // Issue 48: the API keys live with the sessions (`hookline keys`).
    let keys: Arc<dyn hookline_host::store::ApiKeyTable> = match pg {
        Some(pg) => Arc::new(pg),
        None => Arc::new(hookline_host::store::FileApiKeys::new(
            gateway.store().root(),
        )),
    };
    let handed_over = predecessor
        .as_mut()
        .map(Predecessor::take_listeners)
        .unwrap_or_default();
    let (socket, origin) = match listening_socket(settings.listen, handed_over) {
        Ok(bound) => bound,
        Err(error) => {
            let _ = gateway.shutdown("could not listen", None).await;
            return Err(ServeCliError::Listen(error));
        }
    };
    let socket = Arc::new(socket);
    let listen = socket.local_addr().map_err(ServeCliError::Listen)?;
    let node = store
        .is_postgres()
        .then(|| store.pg_options().map(|o| o.node))
        .transpose()?;
    let config = ServeConfig {
        listen,
        listener: Some(socket.clone()),
        token,
        keys: Some(hookline_server::KeyTable(keys)),
        tenants,
        jwt,
        body_limit: settings.body_limit,
        request_timeout: Duration::from_millis(settings.request_timeout_ms),
        plugins: view,
        idempotency_ttl: settings.idempotency_ttl,
        idempotency_keys: settings.idempotency_keys,
        predecessor_wait: predecessor
            .as_ref()
            .map(|old| serve_replace::predecessor_wait(old.offer())),
        ..ServeConfig::new(&root)
    };
    let (addr, handle) = match start(gateway.clone(), config).await {
        Ok(started) => started,
        Err(error) => {
            let _ = gateway.shutdown("could not listen", None).await;
            return Err(error.into());
        }
    };
    // Tests and scripts read the bound address (an ephemeral port) from this line.
    let _ = writeln!(
        std::io::stdout().lock(),
        "hookline serve: listening on http://{addr}"
    );
    match origin {
        Origin::Bound => {}
        Origin::Activated => eprintln!("hookline serve: serving the socket systemd passed"),
        Origin::HandedOver => eprintln!("hookline serve: serving the socket handed over"),
    }
    let path = rendezvous_path(
        args.handover_socket.as_deref(),
        &store,
        &root,
        node.as_deref(),
    );
    let rendezvous = take_over(&handle, predecessor, &path, started).await;
    let running = Running {
        offer: (node, settings.drain_budget_ms),
        socket,
        restart_expected_ms: args.restart_expected_ms,
        rendezvous,
    };
    let ended = running.serve(handle, terminate).await?;
    for arbiter in arbiters {
        arbiter.stop();
    }
    Ok(ended)
}

/// The plugin directories `options` searches, for the start line that says none held a plugin.
fn searched(options: &hookline_host::loading::LoadOptions) -> String {
    let dirs: Vec<String> = [&options.user_dir, &options.workspace_dir]
        .into_iter()
        .flatten()
        .map(|dir| dir.display().to_string())
        .collect();
    if dirs.is_empty() {
        "no plugin directory".to_owned()
    } else {
        dirs.join(" or ")
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::path::Path;

    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }

    fn settings(flags: &[&str], config: &str) -> Result<Settings, ServeCliError> {
        let args = Cli::try_parse_from(std::iter::once("serve").chain(flags.iter().copied()))
            .unwrap()
            .serve;
        let config = Config::parse(Path::new("/etc/hl/hookline.toml"), config, &|_| false).unwrap();
        Settings::new(&args, Some(&config))
    }

    #[test]
    fn idempotency_settings_come_from_the_flag_else_the_config_else_the_default() {
        let default = settings(&[], "").unwrap();
        assert_eq!(
            (default.idempotency_keys, default.idempotency_ttl),
            (
                hookline_server::DEFAULT_IDEMPOTENCY_KEYS,
                hookline_server::DEFAULT_IDEMPOTENCY_TTL
            )
        );
        let file = "[limits]\nidempotency_keys = 8\n[timeouts]\nidempotency_ttl_ms = 5000\n";
        let configured = settings(&[], file).unwrap();
        assert_eq!(
            (configured.idempotency_keys, configured.idempotency_ttl),
            (8, Duration::from_secs(5))
        );
        let flagged = settings(
            &["--idempotency-keys", "3", "--idempotency-ttl", "1m"],
            file,
        )
        .unwrap();
        assert_eq!(
            (flagged.idempotency_keys, flagged.idempotency_ttl),
            (3, Duration::from_secs(60))
        );
        let zero = settings(&[], "[limits]\nidempotency_keys = 0\n")
            .err()
            .unwrap();
        assert_eq!(
            zero.to_string(),
            "limits.idempotency_keys must be at least 1"
        );
    }
}
