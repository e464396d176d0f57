//! One instance of a component guest (docs/wasm.md "A component"): the world
//! `hookline:plugin/plugin` of `docs/wasm/hookline-plugin.wit` (`hello() -> string`,
//! `call(request) -> string`), with WASI 0.2 linked and granted only what the capabilities say.
//!
//! A component runs on its plugin's worker thread ([`super::worker`]), never on an arbiter:
//! wasmtime-wasi's synchronous bindings drive their own Tokio runtime, which must not be entered
//! from a thread already running one.

use std::sync::Arc;
use std::time::Duration;

use hookline_messages::note::SkipReason;
use hookline_messages::protocol::{ReplyBody, RequestId};
use wasmtime::component::{Component, Func, Instance, InstancePre, Linker, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use super::capability::Capability;
use super::engine::deadline_ticks;
use super::guest::{Fault, Limits, State, START_LIMIT};
use super::log_stream::LogStream;
use super::WasmError;

/// The interface a component exports (docs/wasm/hookline-plugin.wit).
pub const GUEST_INTERFACE: &str = "hookline:plugin/guest@1.0.0";

/// A component store's data: what every guest's store has, and WASI's context.
pub(crate) struct ComponentState {
    core: State,
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for ComponentState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// What a component's WASI context is made of: its capabilities, and the facts they grant.
#[derive(Clone, Debug)]
pub(crate) struct Grants {
    /// What the manifest asks for.
    pub(crate) capabilities: Vec<Capability>,
    /// The environment of `environment` (as an external plugin's).
    pub(crate) env: Vec<(String, String)>,
    /// The plugin's directory (`filesystem`: read-only, at `/`).
    pub(crate) dir: std::path::PathBuf,
}

impl Grants {
    fn has(&self, capability: Capability) -> bool {
        self.capabilities.contains(&capability)
    }

    /// WASI's context: nothing but randomness and monotonic time unless granted.
    fn context(&self, limits: &Arc<Limits>) -> WasiCtx {
        let mut builder = WasiCtxBuilder::new();
        // Calls already run on the plugin's own thread.
        builder.allow_blocking_current_thread(true);
        if self.has(Capability::Stdio) {
            builder.stdout(LogStream::new(limits));
            builder.stderr(LogStream::new(limits));
        }
        if !self.has(Capability::Clock) {
            builder.wall_clock(Epoch);
        }
        if self.has(Capability::Environment) {
            builder.envs(&self.env);
        }
        if self.has(Capability::Filesystem) {
            if let Err(error) = builder.preopened_dir(&self.dir, "/", FsPerms::ReadOnly) {
                tracing::warn!(plugin = %limits.name, %error, "its directory could not be opened");
            }
        }
        if self.has(Capability::Network) {
            builder.inherit_network();
            builder.allow_ip_name_lookup(true);
        }
        builder.build()
    }
}

/// The wall clock of a guest without the `clock` capability: always the Unix epoch.
struct Epoch;

impl wasmtime_wasi::HostWallClock for Epoch {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }

    fn now(&self) -> Duration {
        Duration::ZERO
    }
}

/// The component of `bytes` linked with all of WASI 0.2 and pre-instantiated.
///
/// # Errors
/// An import the host does not provide (an interface outside WASI 0.2).
pub(crate) fn pre_instantiate(
    engine: &Engine,
    component: &Component,
) -> Result<InstancePre<ComponentState>, WasmError> {
    let mut linker = Linker::new(engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
        .map_err(|error| WasmError::Link(format!("{error:#}")))?;
    linker
        .instantiate_pre(component)
        .map_err(|error| WasmError::ComponentImport(format!("{error:#}")))
}

/// One instance of a component and its two functions.
pub(crate) struct ComponentGuest {
    store: Store<ComponentState>,
    hello: Func,
    call: Func,
}

impl ComponentGuest {
    /// A fresh instance from the pre-instantiated component.
    ///
    /// # Errors
    /// A start that traps or needs more memory than the cap, or a component that does not
    /// export the guest interface.
    pub(crate) fn new(
        pre: &InstancePre<ComponentState>,
        limits: &Arc<Limits>,
        grants: &Grants,
    ) -> Result<Self, WasmError> {
        let state = ComponentState {
            core: State::new(limits),
            wasi: grants.context(limits),
            table: ResourceTable::new(),
        };
        let mut store = Store::new(pre.engine(), state);
        store.limiter(|state| &mut state.core);
        store.set_epoch_deadline(deadline_ticks(START_LIMIT));
        let instance = pre.instantiate(&mut store).map_err(|error| {
            if store.data().core.grow_refused() {
                WasmError::MemoryCap(limits.memory_mb())
            } else {
                WasmError::Instantiate(format!("{error:#}"))
            }
        })?;
        let hello = export(&instance, &mut store, HELLO)?;
        let call = export(&instance, &mut store, CALL)?;
        Ok(Self { store, hello, call })
    }

    /// The linear memory this instance holds, in bytes.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.store.data().core.memory_bytes()
    }

    /// The guest's hello JSON, within `limit`.
    ///
    /// # Errors
    /// A trap, a timeout, or a function of another type.
    pub(crate) fn hello(&mut self, limit: Duration) -> Result<Vec<u8>, WasmError> {
        self.store.set_epoch_deadline(deadline_ticks(limit));
        let hello = self
            .hello
            .typed::<(), (String,)>(&self.store)
            .map_err(|_| WasmError::MissingExport(HELLO))?;
        let (text,) = hello
            .call(&mut self.store, ())
            .map_err(|error| self.store.data().core.hello_error(&error, limit))?;
        Ok(text.into_bytes())
    }

    /// Runs one request (`request`, with id `id`) within `limit` and decodes the reply.
    ///
    /// # Errors
    /// Why there is no reply: a [`Fault`] (after which the instance is dropped).
    pub(crate) fn call(
        &mut self,
        id: RequestId,
        request: &[u8],
        limit: Duration,
    ) -> Result<ReplyBody, Fault> {
        let request = std::str::from_utf8(request).map_err(|_| Fault::encode())?;
        let call = self
            .call
            .typed::<(&str,), (String,)>(&self.store)
            .map_err(|_| Fault::answer(SkipReason::NotProtocol))?;
        self.store.data_mut().core.begin_call();
        self.store.set_epoch_deadline(deadline_ticks(limit));
        let (reply,) = call
            .call(&mut self.store, (request,))
            .map_err(|error| self.store.data().core.classify(&error, limit))?;
        self.store.data().core.reply(id, reply.as_bytes())
    }
}

/// The interface's functions, as the load notes name them.
const HELLO: &str = "hookline:plugin/guest@1.0.0#hello";
const CALL: &str = "hookline:plugin/guest@1.0.0#call";

/// Function `export` (`<interface>#<name>`) of the guest interface.
fn export(
    instance: &Instance,
    store: &mut Store<ComponentState>,
    export: &'static str,
) -> Result<Func, WasmError> {
    let name = export.rsplit('#').next().unwrap_or(export);
    let missing = || WasmError::MissingExport(export);
    let interface = instance
        .get_export_index(&mut *store, None, GUEST_INTERFACE)
        .ok_or_else(missing)?;
    let index = instance
        .get_export_index(&mut *store, Some(&interface), name)
        .ok_or_else(missing)?;
    instance.get_func(&mut *store, index).ok_or_else(missing)
}

/// Whether `bytes` are a component rather than a core module: a component's preamble has
/// layer 1 where a core module's has version 1 (docs/wasm.md: "told apart by its header").
pub(crate) fn is_component(bytes: &[u8]) -> bool {
    bytes.get(..4) == Some(b"\0asm") && bytes.get(6..8) == Some(&[1, 0])
}

/// The environment an external plugin gets, for the `environment` capability.
pub(crate) fn plugin_env(name: &str) -> Vec<(String, String)> {
    crate::external::allowed_environment(name)
        .into_iter()
        .filter_map(|(key, value)| Some((key.into_string().ok()?, value.into_string().ok()?)))
        .collect()
}
