//! One instance of a core-module guest (docs/wasm.md "A core module"): its store, its exports,
//! and one call through the ABI, with every way it can go wrong turned into a [`SkipReason`].
//! What both kinds of guest share lives here too: the per-plugin [`Limits`], the store's
//! [`State`] (memory cap, log lines), [`Fault`], and how an error or a reply is judged.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hookline_messages::note::SkipReason;
use hookline_messages::protocol::{ReplyBody, RequestId};
use wasmtime::{
    Caller, Engine, Instance, InstancePre, Linker, Memory, ResourceLimiter, Store, Trap, TypedFunc,
};

use super::capability::IMPORT_MODULE;
use super::engine::deadline_ticks;
use super::WasmError;

/// The guest ABI version this host speaks (`hookline_abi`).
pub const ABI_VERSION: i32 = 1;

/// The longest log line a guest may write; the rest is cut off.
const LOG_LINE_CAP: usize = 16 * 1024;

/// What every instance of one plugin shares.
#[derive(Debug)]
pub(crate) struct Limits {
    /// The plugin's name, for its log lines.
    pub(crate) name: Arc<str>,
    /// The most linear memory the guest may have, in bytes.
    pub(crate) memory_bytes: usize,
    /// The longest reply accepted, in bytes.
    pub(crate) reply_cap: usize,
    /// Whether `hookline.log` lines are also echoed to the host's stderr.
    pub(crate) echo: bool,
}

impl Limits {
    pub(crate) fn memory_mb(&self) -> u64 {
        u64::try_from(self.memory_bytes >> 20).unwrap_or(u64::MAX)
    }

    /// One line of the guest's log, to tracing (and stderr when echoed), as an external
    /// plugin's stderr line (external/stderr.rs).
    pub(crate) fn log_line(&self, bytes: &[u8]) {
        let bytes = &bytes[..bytes.len().min(LOG_LINE_CAP)];
        let line = String::from_utf8_lossy(bytes);
        tracing::info!(target: "hookline::plugin", plugin = %self.name, "{line}");
        if self.echo {
            eprintln!("[{}] {line}", self.name);
        }
    }
}

/// A store's data: the limits, whether a memory growth was refused since the call began (a
/// trap after one is an out-of-memory), and the linear memory the instance holds.
pub(crate) struct State {
    limits: Arc<Limits>,
    started: Instant,
    grow_refused: bool,
    memory_bytes: usize,
}

impl State {
    pub(crate) fn new(limits: &Arc<Limits>) -> Self {
        Self {
            limits: limits.clone(),
            started: Instant::now(),
            grow_refused: false,
            memory_bytes: 0,
        }
    }

    /// The linear memory of the instance's memories, in bytes, as they grew.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.memory_bytes
    }

    /// Whether a memory growth was refused since the call (or the start) began.
    pub(crate) fn grow_refused(&self) -> bool {
        self.grow_refused
    }

    /// A call begins: no growth refused yet.
    pub(crate) fn begin_call(&mut self) {
        self.grow_refused = false;
    }

    /// The skip reason of an error out of the guest: its timeout (the epoch deadline), an
    /// out-of-memory (a trap after a refused growth), or the trap itself.
    pub(crate) fn classify(&self, error: &wasmtime::Error, limit: Duration) -> Fault {
        let trap = error.downcast_ref::<Trap>();
        if trap == Some(&Trap::Interrupt) {
            return Fault::answer(SkipReason::timed_out(limit));
        }
        let reason = if self.grow_refused {
            self.out_of_memory()
        } else {
            match trap {
                // wasmtime renders "wasm trap: <what>"; the note already says it trapped.
                Some(trap) => {
                    let text = trap.to_string();
                    let what = text.strip_prefix("wasm trap: ").unwrap_or(&text);
                    SkipReason::Trapped(what.to_owned())
                }
                None => SkipReason::Trapped(format!("{error:#}")),
            }
        };
        Fault {
            reason,
            crashed: true,
        }
    }

    /// Why a hello did not come: its deadline, else the fault as a phrase.
    pub(crate) fn hello_error(&self, error: &wasmtime::Error, limit: Duration) -> WasmError {
        match self.classify(error, limit).reason {
            SkipReason::TimedOut { .. } => WasmError::NoHello(limit),
            reason => WasmError::BadHello(reason.to_string()),
        }
    }

    pub(crate) fn out_of_memory(&self) -> SkipReason {
        SkipReason::OutOfMemory {
            limit_mb: self.limits.memory_mb(),
        }
    }

    /// A guest's answer to request `id`, judged as an external plugin's line is: within the
    /// reply cap, a reply of the protocol (as `decode` reads one), to this request.
    pub(crate) fn judge<R>(
        &self,
        id: RequestId,
        reply: &[u8],
        decode: impl FnOnce(&[u8]) -> Option<(RequestId, R)>,
    ) -> Result<R, Fault> {
        let cap = self.limits.reply_cap;
        if reply.len() > cap {
            return Err(Fault::answer(SkipReason::LineTooLong {
                limit: u64::try_from(cap).unwrap_or(u64::MAX),
            }));
        }
        match decode(reply) {
            Some((answered, body)) if answered == id => Ok(body),
            Some(_) => Err(Fault::answer(SkipReason::UnknownReplyId)),
            None => Err(Fault::answer(SkipReason::NotProtocol)),
        }
    }

    /// [`State::judge`] with the reply decoded as a [`ReplyBody`].
    pub(crate) fn reply(&self, id: RequestId, reply: &[u8]) -> Result<ReplyBody, Fault> {
        self.judge(id, reply, crate::external::decode_reply)
    }
}

impl ResourceLimiter for State {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // The cap is on the guest's linear memory as a whole, all its memories together.
        let total = self
            .memory_bytes
            .saturating_sub(current)
            .saturating_add(desired);
        let fits = total <= self.limits.memory_bytes;
        self.grow_refused |= !fits;
        if fits {
            self.memory_bytes = total;
        }
        Ok(fits)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }
}

/// The host imports of module `hookline`, all defined; which of them a guest may import is
/// checked at load against its capabilities ([`super::capability::check_import`]).
pub(crate) fn linker(engine: &Engine) -> Result<Linker<State>, WasmError> {
    let mut linker = Linker::new(engine);
    let define = |error: wasmtime::Error| WasmError::Link(error.to_string());
    linker
        .func_wrap(
            IMPORT_MODULE,
            "log",
            |mut caller: Caller<'_, State>, ptr: i32, len: i32| {
                log(&mut caller, ptr, len);
            },
        )
        .map_err(define)?;
    linker
        .func_wrap(
            IMPORT_MODULE,
            "monotonic_ns",
            |caller: Caller<'_, State>| -> i64 {
                i64::try_from(caller.data().started.elapsed().as_nanos()).unwrap_or(i64::MAX)
            },
        )
        .map_err(define)?;
    linker
        .func_wrap(IMPORT_MODULE, "wall_clock_ms", || -> i64 {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |since| {
                    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
                })
        })
        .map_err(define)?;
    Ok(linker)
}

/// `hookline.log(ptr, len)`: one line of the guest's log (a bad pointer logs nothing).
fn log(caller: &mut Caller<'_, State>, ptr: i32, len: i32) {
    let Some(memory) = caller
        .get_export("memory")
        .and_then(wasmtime::Extern::into_memory)
    else {
        return;
    };
    let (Ok(start), Ok(len)) = (usize::try_from(ptr), usize::try_from(len)) else {
        return;
    };
    let data = memory.data(&*caller);
    if let Some(bytes) = start
        .checked_add(len.min(LOG_LINE_CAP))
        .and_then(|end| data.get(start..end))
    {
        caller.data().limits.log_line(bytes);
    }
}

/// One instance and its exports.
pub(crate) struct Guest {
    store: Store<State>,
    instance: Instance,
    memory: Memory,
    alloc: TypedFunc<i32, i32>,
    call: TypedFunc<(i32, i32), i64>,
    /// The request being encoded, reused from call to call.
    line: Vec<u8>,
}

/// Why a call did not give a reply, and whether the instance can be used again.
#[derive(Debug)]
pub(crate) struct Fault {
    /// The skip reason the note gives.
    pub(crate) reason: SkipReason,
    /// A trap or an out-of-memory: counted towards disabling the plugin.
    pub(crate) crashed: bool,
}

impl Fault {
    pub(crate) fn answer(reason: SkipReason) -> Self {
        Self {
            reason,
            crashed: false,
        }
    }

    /// A request that did not encode (as an external plugin's, `Undecodable`).
    pub(crate) fn encode() -> Self {
        Self::answer(SkipReason::Undecodable)
    }
}

impl Guest {
    /// A fresh instance from the pre-instantiated module, its ABI version checked.
    ///
    /// # Errors
    /// A missing or mistyped export, another ABI version, or a start that traps or needs more
    /// memory than the cap.
    pub(crate) fn new(pre: &InstancePre<State>, limits: &Arc<Limits>) -> Result<Self, WasmError> {
        let mut store = Store::new(pre.module().engine(), State::new(limits));
        store.limiter(|state| state);
        store.set_epoch_deadline(deadline_ticks(START_LIMIT));
        let instance = pre.instantiate(&mut store).map_err(|error| {
            if store.data().grow_refused {
                WasmError::MemoryCap(limits.memory_mb())
            } else {
                WasmError::Instantiate(format!("{error:#}"))
            }
        })?;
        let memory = instance
            .get_memory(&mut store, "memory")
            .ok_or(WasmError::MissingExport("memory"))?;
        let alloc = instance
            .get_typed_func(&mut store, "hookline_alloc")
            .map_err(|_| WasmError::MissingExport("hookline_alloc"))?;
        let call = instance
            .get_typed_func(&mut store, "hookline_call")
            .map_err(|_| WasmError::MissingExport("hookline_call"))?;
        let abi: TypedFunc<(), i32> = instance
            .get_typed_func(&mut store, "hookline_abi")
            .map_err(|_| WasmError::MissingExport("hookline_abi"))?;
        let version = abi
            .call(&mut store, ())
            .map_err(|error| WasmError::Instantiate(format!("{error:#}")))?;
        if version != ABI_VERSION {
            return Err(WasmError::Abi(version));
        }
        Ok(Self {
            store,
            instance,
            memory,
            alloc,
            call,
            line: Vec::new(),
        })
    }

    /// Runs `f` with this guest and its request buffer, emptied first and kept after.
    pub(crate) fn with_request_buffer<R>(
        &mut self,
        f: impl FnOnce(&mut Self, &mut Vec<u8>) -> R,
    ) -> R {
        let mut line = std::mem::take(&mut self.line);
        line.clear();
        let result = f(self, &mut line);
        self.line = line;
        result
    }

    /// The bytes of linear memory this instance holds.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.memory.data_size(&self.store)
    }

    /// The guest's hello JSON (`hookline_hello`), within `limit`.
    ///
    /// # Errors
    /// A missing export, a trap, a timeout, or a hello outside the guest's memory.
    pub(crate) fn hello(&mut self, limit: Duration) -> Result<Vec<u8>, WasmError> {
        let hello: TypedFunc<(), i64> = self
            .instance
            .get_typed_func(&mut self.store, "hookline_hello")
            .map_err(|_| WasmError::MissingExport("hookline_hello"))?;
        self.store.set_epoch_deadline(deadline_ticks(limit));
        let packed = hello
            .call(&mut self.store, ())
            .map_err(|error| self.store.data().hello_error(&error, limit))?;
        self.unpack(packed)
            .map(<[u8]>::to_vec)
            .ok_or_else(|| WasmError::BadHello("it points outside the guest's memory".into()))
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
        self.call_with(id, request, limit, crate::external::decode_reply)
    }

    /// [`Guest::call`] with the reply read by `decode` (a typed decoder, say).
    ///
    /// # Errors
    /// As [`Guest::call`].
    pub(crate) fn call_with<R>(
        &mut self,
        id: RequestId,
        request: &[u8],
        limit: Duration,
        decode: impl FnOnce(&[u8]) -> Option<(RequestId, R)>,
    ) -> Result<R, Fault> {
        self.store.data_mut().begin_call();
        self.store.set_epoch_deadline(deadline_ticks(limit));
        let len = i32::try_from(request.len()).map_err(|_| {
            Fault::answer(SkipReason::LineTooLong {
                limit: i32::MAX as u64,
            })
        })?;
        let ptr = self
            .alloc
            .call(&mut self.store, len)
            .map_err(|error| self.store.data().classify(&error, limit))?;
        if ptr == 0 {
            // docs/wasm.md: `hookline_alloc` answers 0 when the guest has no room.
            return Err(Fault {
                reason: self.store.data().out_of_memory(),
                crashed: true,
            });
        }
        let at = usize::try_from(ptr).unwrap_or(usize::MAX);
        self.memory
            .write(&mut self.store, at, request)
            .map_err(|_| Fault::answer(SkipReason::NotProtocol))?;
        let packed = self
            .call
            .call(&mut self.store, (ptr, len))
            .map_err(|error| self.store.data().classify(&error, limit))?;
        let reply = self
            .unpack(packed)
            .ok_or(Fault::answer(SkipReason::NotProtocol))?;
        self.store.data().judge(id, reply, decode)
    }

    /// The bytes a packed `ptr << 32 | len` names, if they lie inside the guest's memory (both
    /// halves read unsigned).
    fn unpack(&self, packed: i64) -> Option<&[u8]> {
        let packed = packed as u64;
        let ptr = usize::try_from(packed >> 32).ok()?;
        let len = usize::try_from(packed & 0xffff_ffff).ok()?;
        self.memory
            .data(&self.store)
            .get(ptr..ptr.checked_add(len)?)
    }
}

/// How long a guest's start (its data, its `start` function, `hookline_abi`) may run.
pub(crate) const START_LIMIT: Duration = Duration::from_secs(5);
