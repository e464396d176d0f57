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
//! Core modules (the ABI of docs/wasm.md) load; a component is refused at load with a note that
//! says so.

mod capability;
mod engine;
mod guest;
mod hooks;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use hookline_actors::plugin::{Timeouts, DEFAULT_HOOK_TIMEOUT};
use hookline_messages::hook::{HookKind, HookSet};
use hookline_messages::note::{DurationText, SkipReason};
use hookline_messages::protocol::{
    Hello, HookRequestRef, HostMessage, PluginMessage, ReplyBody, RequestId, PROTOCOL_VERSION,
};
use hookline_messages::session::SessionId;
use wasmtime::InstancePre;

use crate::external::{RestartPolicy, DEFAULT_HELLO_TIMEOUT, DEFAULT_LINE_CAP};

pub use capability::{Capability, IMPORT_MODULE};
pub use engine::{default_cache_dir, Compiled, TICK};
pub use guest::ABI_VERSION;

use guest::{Guest, Limits, State};

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
    /// The file is a component (a core module is what this host loads).
    #[error(
        "its module is a WebAssembly component, which this host does not load yet (build a core \
         module with the guest ABI of docs/wasm.md)"
    )]
    Component,
    /// The bytes are not a valid module.
    #[error("its module is not valid WebAssembly: {0}")]
    Invalid(String),
    /// An import the host does not provide.
    #[error("it imports '{0}', which the host does not provide (docs/wasm.md lists the imports)")]
    ImportNotProvided(String),
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
    pre: InstancePre<State>,
    limits: Arc<Limits>,
    idle: Mutex<Vec<Guest>>,
    traps: Mutex<VecDeque<Instant>>,
    disabled: AtomicBool,
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
        // A component's preamble has layer 1 where a core module's has version 1
        // (docs/wasm.md: "told apart by its header").
        if bytes.get(..4) == Some(b"\0asm") && bytes.get(6..8) == Some(&[1, 0]) {
            return Err(WasmError::Component);
        }
        let (module, compiled) = engine::module(engine, &bytes, config.cache_dir.as_deref())
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
        let name: Arc<str> = config.name.as_str().into();
        let limits = Arc::new(Limits {
            name: name.clone(),
            memory_bytes: usize::try_from(config.memory_mb.min(MAX_MEMORY_MB) << 20)
                .unwrap_or(usize::MAX),
            reply_cap: config.line_cap,
            echo: config.echo_stderr,
        });
        // The hello's instance serves the first call.
        let mut first = Guest::new(&pre, &limits)?;
        let hello = read_hello(&first.hello(config.hello_timeout)?)?;
        Ok(Arc::new(Self {
            name,
            hello,
            capabilities: config.capabilities,
            timeouts: config.timeouts,
            event_timeout: config.event_timeout,
            fail_closed: config.fail_closed,
            restart: config.restart,
            compiled,
            pre,
            limits,
            idle: Mutex::new(vec![first]),
            traps: Mutex::new(VecDeque::new()),
            disabled: AtomicBool::new(false),
            next_id: AtomicU64::new(1),
        }))
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

    /// The linear memory its idle instances hold now, in bytes (what a loaded plugin costs
    /// beyond its compiled code).
    pub fn idle_memory_bytes(&self) -> usize {
        lock(&self.idle).iter().map(Guest::memory_bytes).sum()
    }

    /// Every hook the plugin implements (ordinary and raw).
    pub fn implements(&self) -> HookSet {
        self.hello
            .hooks
            .ordinary_only()
            .union(self.hello.raw_hooks.raw_only())
    }

    /// Runs `hook` on `value` for `session` within `limit`: the value encoded once into the
    /// request, the guest run inline.
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
        self.exchange(limit, |id, line| {
            let request = HookRequestRef {
                id,
                hook,
                session: session.as_str(),
                value,
                traceparent: traceparent.as_deref(),
            };
            serde_json::to_writer(line, &request).is_ok()
        })
    }

    /// Runs one tool or event request, as [`WasmPlugin::call_hook`] runs a hook.
    ///
    /// # Errors
    /// As [`WasmPlugin::call_hook`].
    pub fn request(
        &self,
        limit: Duration,
        build: impl FnOnce(RequestId) -> HostMessage,
    ) -> Result<ReplyBody, SkipReason> {
        let traceparent = crate::trace::traceparent();
        self.exchange(limit, |id, line| {
            serde_json::to_writer(line, &build(id).with_traceparent(traceparent)).is_ok()
        })
    }

    /// One request through one instance: `encode(id, line)` writes the request (`false`: it
    /// does not encode).
    fn exchange(
        &self,
        limit: Duration,
        encode: impl FnOnce(RequestId, &mut Vec<u8>) -> bool,
    ) -> Result<ReplyBody, SkipReason> {
        if self.is_disabled() {
            return Err(self.restart.disabled_reason());
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut guest = self.take()?;
        let reply = guest.with_request_buffer(|guest, line| {
            if !encode(id, line) {
                return Err(guest::Fault::encode());
            }
            guest.call(id, line, limit)
        });
        match reply {
            Ok(body) => {
                self.park(guest);
                Ok(body)
            }
            Err(fault) => {
                // The instance may be anywhere in its work: never used again.
                drop(guest);
                if fault.crashed {
                    self.count_trap();
                }
                Err(fault.reason)
            }
        }
    }

    /// An idle instance, or a fresh one.
    fn take(&self) -> Result<Guest, SkipReason> {
        if let Some(guest) = lock(&self.idle).pop() {
            return Ok(guest);
        }
        Guest::new(&self.pre, &self.limits).map_err(|error| {
            tracing::warn!(plugin = %self.name, %error, "a fresh instance could not be made");
            SkipReason::Unavailable
        })
    }

    /// Puts an instance back for the next call, keeping at most [`IDLE_INSTANCES`].
    fn park(&self, guest: Guest) {
        let mut idle = lock(&self.idle);
        if idle.len() < IDLE_INSTANCES {
            idle.push(guest);
        }
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
            self.disabled.store(true, Ordering::Release);
            lock(&self.idle).clear();
            tracing::warn!(plugin = %self.name, "disabled after trapping {} times", traps.len());
        }
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
