//! WebAssembly plugins (issue 36, docs/wasm.md): a plugin directory whose manifest names a
//! `.wasm` entry is loaded into the host's own process with wasmtime, sandboxed.
//!
//! [`WasmPlugin`] registers its hooks on the pipeline's fast path ([`PluginRegistration::on`]):
//! each call encodes the value once (the protocol's JSON, as for an external plugin), runs the
//! guest inline in the plugin actor and decodes the reply; the rules and notes of every hook
//! apply unchanged, as do per-plugin metrics, traces and replay. Underneath:
//! - instances come from a small pool: a call takes an idle instance (or makes one from the
//!   pre-instantiated module, a few microseconds) and puts it back after, so calls for sessions
//!   on different arbiters never wait for each other;
//! - the hook's timeout is an epoch deadline inside the guest ([`engine`]): an infinite loop is
//!   stopped at the timeout and skipped with the timeout note;
//! - memory is capped per instance (`wasm.memory_mb`); a trap, an out-of-memory or a malformed
//!   answer skips the call with its note and drops the instance (the next call gets a fresh
//!   one); traps counted like crashes disable the plugin after 3 in 5 minutes;
//! - a guest reaches nothing but its own memory and the imports its capabilities grant
//!   ([`capability`]);
//! - compiled modules are cached on disk by content hash ([`engine::module`]).
//!
//! Core modules (the ABI of docs/wasm.md) run inline on the calling arbiter; components (the WIT
//! world of docs/wasm/hookline-plugin.wit, with WASI 0.2 granted per capability) run on a thread
//! of their own ([`worker`]) and are called through the pipeline's async path.

mod capability;
mod component;
mod engine;
mod guest;
mod hooks;
mod log_stream;
mod worker;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use hookline_actors::plugin::{Timeouts, DEFAULT_HOOK_TIMEOUT};
use hookline_messages::hook::{HookKind, HookSet};
use hookline_messages::note::{DurationText, SkipReason};
use hookline_messages::protocol::{
    Hello, HookRequestRef, HostMessage, PluginMessage, ReplyBody, RequestId, PROTOCOL_VERSION,
};
use hookline_messages::session::SessionId;
use wasmtime::InstancePre;

use crate::external::{
    decode_typed, RestartPolicy, TypedReply, DEFAULT_HELLO_TIMEOUT, DEFAULT_LINE_CAP,
};

pub use capability::{Capability, IMPORT_MODULE};
pub use component::GUEST_INTERFACE;
pub use engine::{default_cache_dir, Compiled, TICK};
pub use guest::ABI_VERSION;
pub use worker::{MAX_WORKERS, QUEUE_BOUND};

use component::{ComponentGuest, Grants};
use guest::{Fault, Guest, Limits, State};
use worker::Worker;

/// The memory cap when the manifest names none, in MiB.
pub const DEFAULT_MEMORY_MB: u64 = 64;

/// The largest memory cap a manifest may name, in MiB (a 32-bit guest's whole address space).
pub const MAX_MEMORY_MB: u64 = 4096;

/// Idle instances kept per plugin; more are made when more calls run at once, and dropped after.
const IDLE_INSTANCES: usize = 8;

/// How to load and run one WebAssembly plugin.
#[derive(Clone, Debug)]
pub struct WasmConfig {
    /// The plugin's name (notes use it).
    pub name: String,
    /// The `.wasm` file.
    pub module: PathBuf,
    /// What the guest may reach (docs/wasm.md); nothing by default.
    pub capabilities: Vec<Capability>,
    /// The most linear memory one instance may have, in MiB.
    pub memory_mb: u64,
    /// Per-hook timeouts, enforced inside the guest.
    pub timeouts: Timeouts,
    /// The timeout of one gateway event delivery.
    pub event_timeout: Duration,
    /// How long `hookline_hello` may run.
    pub hello_timeout: Duration,
    /// The longest reply accepted, in bytes (as an external plugin's line cap).
    pub line_cap: usize,
    /// When traps disable the plugin (`max_crashes` within `window`; the back-offs are unused:
    /// a fresh instance is made at once).
    pub restart: RestartPolicy,
    /// Guard hooks marked fail-closed.
    pub fail_closed: HookSet,
    /// Also write each `hookline.log` line to the host's stderr, as `[<plugin>] <line>`.
    pub echo_stderr: bool,
    /// Where compiled modules are cached ([`default_cache_dir`]); `None`: compiled every load.
    pub cache_dir: Option<PathBuf>,
}

impl WasmConfig {
    /// A config with the defaults: no capabilities, 64 MiB, the default cache directory.
    pub fn new(name: impl Into<String>, module: impl Into<PathBuf>) -> Self {
        Self {
            name: name.into(),
            module: module.into(),
            capabilities: Vec::new(),
            memory_mb: DEFAULT_MEMORY_MB,
            timeouts: Timeouts::default(),
            event_timeout: DEFAULT_HOOK_TIMEOUT,
            hello_timeout: DEFAULT_HELLO_TIMEOUT,
            line_cap: DEFAULT_LINE_CAP,
            restart: RestartPolicy::default(),
            fail_closed: HookSet::empty(),
            echo_stderr: false,
            cache_dir: default_cache_dir(),
        }
    }
}

/// Why a WebAssembly plugin did not load. Display is a lowercase phrase for the load note, as
/// [`StartError`](crate::external::StartError)'s is.
#[derive(Debug, thiserror::Error)]
pub enum WasmError {
    /// The host has no WebAssembly engine.
    #[error("this host cannot run WebAssembly: {0}")]
    Engine(String),
    /// The `.wasm` file could not be read.
    #[error("its module could not be read: {0}")]
    Read(String),
    /// The bytes are not a valid module.
    #[error("its module is not valid WebAssembly: {0}")]
    Invalid(String),
    /// An import the host does not provide.
    #[error("it imports '{0}', which the host does not provide (docs/wasm.md lists the imports)")]
    ImportNotProvided(String),
    /// A component import outside WASI 0.2 (wasmtime's account of it).
    #[error("it imports what the host does not provide (WASI 0.2 only, docs/wasm.md): {0}")]
    ComponentImport(String),
    /// An import whose capability the manifest does not grant.
    #[error("it imports '{import}', which needs the capability '{capability}' its manifest does not grant")]
    ImportNotGranted {
        /// `module.name`.
        import: String,
        /// The capability it needs.
        capability: Capability,
    },
    /// An export of the ABI is missing or has another type.
    #[error("it does not export '{0}' as the guest ABI says (docs/wasm.md)")]
    MissingExport(&'static str),
    /// `hookline_abi` answered another version.
    #[error("it speaks guest ABI version {0}, but this host speaks version {ABI_VERSION}")]
    Abi(i32),
    /// Its start needs more memory than its cap.
    #[error("it needs more memory than its cap of {0} MiB")]
    MemoryCap(u64),
    /// Its start trapped.
    #[error("it could not be instantiated: {0}")]
    Instantiate(String),
    /// The host's imports could not be linked.
    #[error("the host could not link its imports: {0}")]
    Link(String),
    /// `hookline_hello` ran past its deadline.
    #[error("it did not say hello within {}", DurationText::of(*.0))]
    NoHello(Duration),
    /// The hello was not a valid hello.
    #[error("its hello could not be read: {0}")]
    BadHello(String),
    /// The hello named another protocol version.
    #[error("it speaks protocol version {found}, but this host speaks version {expected}")]
    IncompatibleVersion {
        /// The guest's version.
        found: u32,
        /// The host's version.
        expected: u32,
    },
}

/// Where a plugin's calls run.
enum Runs {
    /// A core module: inline on the caller's thread, on an instance from a small pool.
    Inline {
        pre: InstancePre<State>,
        limits: Arc<Limits>,
        idle: Mutex<Vec<Guest>>,
    },
    /// A component: on its worker thread.
    OnWorker(Worker),
}

/// A loaded WebAssembly plugin. Cheap to share (`Arc`).
pub struct WasmPlugin {
    name: Arc<str>,
    hello: Hello,
    capabilities: Vec<Capability>,
    timeouts: Timeouts,
    event_timeout: Duration,
    fail_closed: HookSet,
    restart: RestartPolicy,
    compiled: Compiled,
    runs: Runs,
    traps: Mutex<VecDeque<Instant>>,
    disabled: AtomicBool,
    /// When it loaded, and when traps disabled it (`GET /v1/plugins`).
    loaded_at: SystemTime,
    disabled_at: OnceLock<SystemTime>,
    next_id: AtomicU64,
}

impl WasmPlugin {
    /// Reads, compiles (or maps from the cache), links and instantiates the module, and reads
    /// its hello. Blocking: a first compile takes a while (the loader runs it off the runtime).
    ///
    /// # Errors
    /// [`WasmError`]: why the plugin is not loaded.
    pub fn load(config: WasmConfig) -> Result<Arc<Self>, WasmError> {
        let engine = engine::engine().map_err(WasmError::Engine)?;
        let bytes =
            std::fs::read(&config.module).map_err(|error| WasmError::Read(error.to_string()))?;
        let name: Arc<str> = config.name.as_str().into();
        let limits = Arc::new(Limits {
            name: name.clone(),
            memory_bytes: usize::try_from(config.memory_mb.min(MAX_MEMORY_MB) << 20)
                .unwrap_or(usize::MAX),
            reply_cap: config.line_cap,
            echo: config.echo_stderr,
        });
        let (runs, hello, compiled) = if component::is_component(&bytes) {
            Self::component(engine, &bytes, &config, limits)?
        } else {
            Self::core(engine, &bytes, &config, limits)?
        };
        Ok(Arc::new(Self {
            name,
            hello,
            capabilities: config.capabilities,
            timeouts: config.timeouts,
            event_timeout: config.event_timeout,
            fail_closed: config.fail_closed,
            restart: config.restart,
            compiled,
            runs,
            traps: Mutex::new(VecDeque::new()),
            disabled: AtomicBool::new(false),
            loaded_at: SystemTime::now(),
            disabled_at: OnceLock::new(),
            next_id: AtomicU64::new(1),
        }))
    }

    /// A core module: compiled (or read from the cache), its imports checked against its
    /// capabilities, pre-instantiated; the hello's instance is the pool's first.
    fn core(
        engine: &wasmtime::Engine,
        bytes: &[u8],
        config: &WasmConfig,
        limits: Arc<Limits>,
    ) -> Result<(Runs, Hello, Compiled), WasmError> {
        let (module, compiled) =
            engine::compile::<wasmtime::Module>(engine, bytes, config.cache_dir.as_deref())
                .map_err(WasmError::Invalid)?;
        for import in module.imports() {
            capability::check_import(import.module(), import.name(), &config.capabilities)
                .map_err(|refusal| match refusal {
                    capability::ImportRefusal::NotProvided(import) => {
                        WasmError::ImportNotProvided(import)
                    }
                    capability::ImportRefusal::NotGranted { import, capability } => {
                        WasmError::ImportNotGranted { import, capability }
                    }
                })?;
        }
        let pre = guest::linker(engine)?
            .instantiate_pre(&module)
            .map_err(|error| WasmError::Link(format!("{error:#}")))?;
        let mut first = Guest::new(&pre, &limits)?;
        let hello = read_hello(&first.hello(config.hello_timeout)?)?;
        let runs = Runs::Inline {
            pre,
            limits,
            idle: Mutex::new(vec![first]),
        };
        Ok((runs, hello, compiled))
    }

    /// A component: compiled (or read from the cache), linked with WASI 0.2, pre-instantiated;
    /// the hello's instance goes to its worker thread.
    fn component(
        engine: &wasmtime::Engine,
        bytes: &[u8],
        config: &WasmConfig,
        limits: Arc<Limits>,
    ) -> Result<(Runs, Hello, Compiled), WasmError> {
        let (component, compiled) = engine::compile::<wasmtime::component::Component>(
            engine,
            bytes,
            config.cache_dir.as_deref(),
        )
        .map_err(WasmError::Invalid)?;
        let pre = component::pre_instantiate(engine, &component)?;
        let grants = Grants {
            capabilities: config.capabilities.clone(),
            env: component::plugin_env(&config.name),
            dir: config
                .module
                .parent()
                .map(std::path::Path::to_path_buf)
                .unwrap_or_default(),
        };
        let mut first = ComponentGuest::new(&pre, &limits, &grants)?;
        let hello = read_hello(&first.hello(config.hello_timeout)?)?;
        let runs = Runs::OnWorker(Worker::start(pre, limits, grants, first)?);
        Ok((runs, hello, compiled))
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the guest said in its hello.
    pub fn hello(&self) -> &Hello {
        &self.hello
    }

    /// The capabilities granted to it.
    pub fn capabilities(&self) -> &[Capability] {
        &self.capabilities
    }

    /// Whether this load read the compiled module from the cache or compiled it.
    pub fn compiled(&self) -> Compiled {
        self.compiled
    }

    /// Whether the plugin was disabled after trapping too often.
    pub fn is_disabled(&self) -> bool {
        self.disabled.load(Ordering::Acquire)
    }

    /// Where the plugin is now (`GET /v1/plugins`): `loaded`, or `suspended` once traps
    /// disabled it (it has no process to restart or exit).
    pub fn live(&self) -> crate::loading::LiveStatus {
        match self.disabled_at.get() {
            Some(since) if self.is_disabled() => crate::loading::LiveStatus {
                state: crate::loading::LiveState::Suspended,
                reason: Some(crate::loading::StateReason::TrappedTooOften {
                    failures: self.restart.max_crashes,
                    window: self.restart.window,
                }),
                since: *since,
            },
            _ => crate::loading::LiveStatus::loaded(self.loaded_at),
        }
    }

    /// The guard hooks it fails closed on (its manifest's `fail_closed`).
    pub fn fail_closed(&self) -> HookSet {
        self.fail_closed
    }

    /// The linear memory its idle instances hold now, in bytes (what a loaded plugin costs
    /// beyond its compiled code).
    pub fn idle_memory_bytes(&self) -> usize {
        match &self.runs {
            Runs::Inline { idle, .. } => lock(idle).iter().map(Guest::memory_bytes).sum(),
            Runs::OnWorker(worker) => worker.memory_bytes(),
        }
    }

    /// Whether it is a component (its calls run on its own thread) rather than a core module.
    pub fn is_component(&self) -> bool {
        matches!(self.runs, Runs::OnWorker(_))
    }

    /// Every hook the plugin implements (ordinary and raw).
    pub fn implements(&self) -> HookSet {
        self.hello
            .hooks
            .ordinary_only()
            .union(self.hello.raw_hooks.raw_only())
    }

    /// Runs `hook` on `value` for `session` within `limit` on a core module's guest: the value
    /// encoded once into the request, the guest run inline. (A component's hooks go through
    /// [`WasmPlugin::call_hook_queued`].)
    ///
    /// # Errors
    /// Why the call is skipped: a timeout, a trap, an out-of-memory, a malformed answer, a
    /// disabled plugin.
    pub fn call_hook<T: serde::Serialize + ?Sized>(
        &self,
        hook: HookKind,
        session: &SessionId,
        value: &T,
        limit: Duration,
    ) -> Result<ReplyBody, SkipReason> {
        let traceparent = crate::trace::traceparent();
        self.exchange(
            limit,
            hook_request(hook, session, value, traceparent.as_deref()),
        )
    }

    /// As [`WasmPlugin::call_hook`], with a replacement decoded straight into `R` (no
    /// `serde_json::Value` in between; `IgnoredAny` skips it unread): the fast path of a core
    /// module's hooks.
    ///
    /// # Errors
    /// As [`WasmPlugin::call_hook`].
    pub(crate) fn call_hook_typed<T, R>(
        &self,
        hook: HookKind,
        session: &SessionId,
        value: &T,
        limit: Duration,
    ) -> Result<TypedReply<R>, SkipReason>
    where
        T: serde::Serialize + ?Sized,
        R: serde::de::DeserializeOwned,
    {
        let traceparent = crate::trace::traceparent();
        self.exchange_with(
            limit,
            hook_request(hook, session, value, traceparent.as_deref()),
            decode_typed::<R>,
        )
    }

    /// As [`WasmPlugin::call_hook`], for either kind: the request is encoded now and the
    /// returned future runs it (inline for a core module, on its thread for a component).
    ///
    /// # Errors
    /// As [`WasmPlugin::call_hook`]; a component's full queue is [`SkipReason::Unavailable`].
    pub fn call_hook_queued<T: serde::Serialize + ?Sized>(
        self: &Arc<Self>,
        hook: HookKind,
        session: &SessionId,
        value: &T,
        limit: Duration,
    ) -> impl std::future::Future<Output = Result<ReplyBody, SkipReason>> + Send + 'static {
        let traceparent = crate::trace::traceparent();
        let encoded = self.encode(hook_request(hook, session, value, traceparent.as_deref()));
        let plugin = self.clone();
        async move {
            let (id, request) = encoded?;
            plugin.run_request(id, request, limit).await
        }
    }

    /// Runs one tool or event request, as [`WasmPlugin::call_hook_queued`] runs a hook.
    ///
    /// # Errors
    /// As [`WasmPlugin::call_hook_queued`].
    pub async fn request(
        &self,
        limit: Duration,
        build: impl FnOnce(RequestId) -> HostMessage,
    ) -> Result<ReplyBody, SkipReason> {
        let traceparent = crate::trace::traceparent();
        let encode = |id, line: &mut Vec<u8>| {
            serde_json::to_writer(line, &build(id).with_traceparent(traceparent)).is_ok()
        };
        if matches!(self.runs, Runs::Inline { .. }) {
            return self.exchange(limit, encode);
        }
        let (id, request) = self.encode(encode)?;
        self.run_request(id, request, limit).await
    }

    /// A fresh id and its request, encoded; a disabled plugin is refused first.
    fn encode(
        &self,
        encode: impl FnOnce(RequestId, &mut Vec<u8>) -> bool,
    ) -> Result<(RequestId, Vec<u8>), SkipReason> {
        if self.is_disabled() {
            return Err(self.restart.disabled_reason());
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut line = Vec::with_capacity(256);
        if encode(id, &mut line) {
            Ok((id, line))
        } else {
            Err(SkipReason::Undecodable)
        }
    }

    /// Runs an encoded request where the plugin's calls run.
    async fn run_request(
        &self,
        id: RequestId,
        request: Vec<u8>,
        limit: Duration,
    ) -> Result<ReplyBody, SkipReason> {
        let result = match &self.runs {
            Runs::Inline { .. } => self.inline(|guest| guest.call(id, &request, limit)),
            Runs::OnWorker(worker) => worker.call(id, request, limit).await,
        };
        self.settle(result)
    }

    /// One request through one core instance, inline: `encode(id, line)` writes the request
    /// (`false`: it does not encode) into the instance's own buffer.
    fn exchange(
        &self,
        limit: Duration,
        encode: impl FnOnce(RequestId, &mut Vec<u8>) -> bool,
    ) -> Result<ReplyBody, SkipReason> {
        self.exchange_with(limit, encode, crate::external::decode_reply)
    }

    /// [`WasmPlugin::exchange`] with the reply read by `decode`.
    fn exchange_with<R>(
        &self,
        limit: Duration,
        encode: impl FnOnce(RequestId, &mut Vec<u8>) -> bool,
        decode: impl FnOnce(&[u8]) -> Option<(RequestId, R)>,
    ) -> Result<R, SkipReason> {
        if self.is_disabled() {
            return Err(self.restart.disabled_reason());
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let result = self.inline(|guest| {
            guest.with_request_buffer(|guest, line| {
                if !encode(id, line) {
                    return Err(Fault::encode());
                }
                guest.call_with(id, line, limit, decode)
            })
        });
        self.settle(result)
    }

    /// Runs `call` on an idle core instance (or a fresh one), parked again after a reply and
    /// dropped after a fault.
    fn inline<R>(&self, call: impl FnOnce(&mut Guest) -> Result<R, Fault>) -> Result<R, Fault> {
        let Runs::Inline { pre, limits, idle } = &self.runs else {
            return Err(Fault::answer(SkipReason::Unavailable));
        };
        let mut guest = match lock(idle).pop() {
            Some(guest) => guest,
            None => Guest::new(pre, limits).map_err(|error| {
                tracing::warn!(plugin = %self.name, %error, "a fresh instance could not be made");
                Fault::answer(SkipReason::Unavailable)
            })?,
        };
        let result = call(&mut guest);
        if result.is_ok() {
            // After a fault the instance may be anywhere in its work: never used again.
            let mut idle = lock(idle);
            if idle.len() < IDLE_INSTANCES {
                idle.push(guest);
            }
        }
        result
    }

    /// A call's outcome: a trap or an out-of-memory counts towards disabling the plugin.
    fn settle<R>(&self, result: Result<R, Fault>) -> Result<R, SkipReason> {
        result.map_err(|fault| {
            if fault.crashed {
                self.count_trap();
            }
            fault.reason
        })
    }

    /// Counts a trap; at `max_crashes` within `window` the plugin is disabled (docs/wasm.md:
    /// as an external plugin that crashes that often).
    fn count_trap(&self) {
        let now = Instant::now();
        let mut traps = lock(&self.traps);
        traps.push_back(now);
        while traps
            .front()
            .is_some_and(|at| now.duration_since(*at) > self.restart.window)
        {
            traps.pop_front();
        }
        if traps.len() >= usize::try_from(self.restart.max_crashes).unwrap_or(usize::MAX) {
            let _ = self.disabled_at.set(SystemTime::now());
            self.disabled.store(true, Ordering::Release);
            if let Runs::Inline { idle, .. } = &self.runs {
                lock(idle).clear();
            }
            tracing::warn!(plugin = %self.name, "disabled after trapping {} times", traps.len());
        }
    }
}

/// Writes the request of `hook` on `value` for `session`, with id `id`, into `line` (`false`: the
/// value does not encode): the value is encoded once, straight into the request.
fn hook_request<'a, T: serde::Serialize + ?Sized>(
    hook: HookKind,
    session: &'a SessionId,
    value: &'a T,
    traceparent: Option<&'a str>,
) -> impl FnOnce(RequestId, &mut Vec<u8>) -> bool + 'a {
    move |id, line| {
        let request = HookRequestRef {
            id,
            hook,
            session: session.as_str(),
            value,
            traceparent,
        };
        serde_json::to_writer(line, &request).is_ok()
    }
}

/// A lock that outlives a panic elsewhere (the data are plain instances and instants).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The guest's hello: the protocol's hello message, of a version this host speaks.
fn read_hello(bytes: &[u8]) -> Result<Hello, WasmError> {
    match serde_json::from_slice::<PluginMessage>(bytes) {
        Ok(PluginMessage::Hello(hello)) if hello.is_compatible() => Ok(hello),
        Ok(PluginMessage::Hello(hello)) => Err(WasmError::IncompatibleVersion {
            found: hello.protocol,
            expected: PROTOCOL_VERSION,
        }),
        Ok(_) => Err(WasmError::BadHello("it is a reply, not a hello".to_owned())),
        Err(error) => Err(WasmError::BadHello(error.to_string())),
    }
}

impl std::fmt::Debug for WasmPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WasmPlugin")
            .field("name", &self.name)
            .field("implements", &self.implements())
            .field("capabilities", &self.capabilities)
            .field("disabled", &self.is_disabled())
            .finish_non_exhaustive()
    }
}
