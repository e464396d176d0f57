//! [`Pipeline`]: a cheap, cloneable handle to a started pipeline: its shards (one coordinator and
//! one set of plugin actors per arbiter), what was loaded, and the gateway event bus.
//!
//! Sessions are sharded: by default one shard per core, shard 0 on the arbiter that called
//! [`PipelineBuilder::start`], the others on arbiters the pipeline starts (and stops when the last
//! handle is dropped). A session always maps to the same shard ([`Pipeline::shard_of`]: a hash of
//! its id modulo the shard count, or the shard its creator placed it on with
//! [`Pipeline::place_here`]), so its calls stay in order; a caller that runs a session's work on
//! [`Pipeline::arbiter_for`] that session makes its hook calls without a thread hop.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::ThreadId;
use std::time::Duration;

use actix::dev::SendError;
use actix::{Actor, Addr, Arbiter, ArbiterHandle};
use hookline_messages::event::Subscription;
use hookline_messages::hook::{HookKind, HookSet};
use hookline_messages::note::Note;
use hookline_messages::session::SessionId;

use tokio::sync::{oneshot, Semaphore};

use crate::coordinator::local::admit_in_place;
use crate::coordinator::{
    Admission, Admit, AdmitMany, Admitted, AdmittedCalls, ForgetSession, OpenSession,
    PipelineCoordinator, Step, StopPipeline, DEFAULT_MAX_PENDING, MAX_BATCH,
};
use crate::error::{PipelineError, StartError};
use crate::events::{EventBus, EventBusConfig};
use crate::key::{SessionKey, SessionRef};
use crate::placement::Placements;
use crate::plugin::{Dispatch, PluginActor, PluginRegistration};
use crate::route::{Gather, Job, Outcome, ReplyTo, Slot, Submitted, NO_SLOT};

/// A loaded plugin, as the pipeline reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadedPlugin {
    /// The plugin's name.
    pub name: Arc<str>,
    /// The hooks it implements (ordinary and raw).
    pub implements: HookSet,
    /// Its gateway event subscriptions, as written (SPEC G1.2, G4.1).
    pub subscriptions: Arc<[Subscription]>,
}

/// Builds a [`Pipeline`].
#[derive(Debug)]
pub struct PipelineBuilder {
    plugins: Vec<PluginRegistration>,
    max_pending: usize,
    events: EventBusConfig,
    shards: Option<usize>,
}

impl PipelineBuilder {
    /// Adds a plugin. Plugins run in the order they are added: that is the load order (SPEC P1.1).
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

    /// Sets the number of shards (arbiters, each with its own coordinator, plugin actors and share
    /// of the sessions). Default: the `HOOKLINE_SHARDS` environment variable if set, else one per
    /// core ([`std::thread::available_parallelism`]); one when the runtime's clock is paused
    /// (tests), so timeouts follow the paused clock.
    #[must_use]
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = Some(shards.clamp(1, MAX_SHARDS));
        self
    }

    /// Bounds the calls admitted at once, per shard (default [`DEFAULT_MAX_PENDING`]).
    #[must_use]
    pub fn max_pending(mut self, max_pending: usize) -> Self {
        self.max_pending = max_pending.max(1);
        self
    }

    /// Bounds the gateway event bus (queue, detached deliveries, notes).
    #[must_use]
    pub fn event_bus(mut self, config: EventBusConfig) -> Self {
        self.events = config;
        self
    }

    /// Starts the shards: shard 0's plugin actors and coordinator on the current arbiter, each
    /// other shard's on an arbiter of its own (stopped when the last [`Pipeline`] handle is
    /// dropped). Every actor of one shard lives on that shard's arbiter: a hop to another thread
    /// costs tens of microseconds, so a call never leaves its shard.
    ///
    /// # Errors
    /// [`StartError::DuplicateName`] when two plugins share a name.
    ///
    /// # Panics
    /// When called outside an actix system (as every `Actor::start` does).
    pub fn start(self) -> Result<Pipeline, StartError> {
        let mut names = HashSet::new();
        for plugin in &self.plugins {
            if !names.insert(plugin.name.clone()) {
                return Err(StartError::DuplicateName(plugin.name.to_string()));
            }
        }
        let count = self.shards.unwrap_or_else(default_shards);
        // One gate per plugin, shared by its actors on every shard.
        let gates: Vec<Option<Arc<Semaphore>>> = self
            .plugins
            .iter()
            .map(|p| p.one_at_a_time.then(|| Arc::new(Semaphore::new(1))))
            .collect();
        let mut owned = Vec::new();
        let mut shards = Vec::with_capacity(count);
        let mut first = Vec::new();
        for index in 0..count {
            let thread = Arc::new(OnceLock::new());
            let arbiter = if index == 0 {
                let _ = thread.set(std::thread::current().id());
                Arbiter::current()
            } else {
                let arbiter = bounded_arbiter();
                let handle = arbiter.handle();
                owned.push(arbiter);
                // The first thing the new arbiter runs, before any work placed on it asks.
                let cell = Arc::clone(&thread);
                handle.spawn_fn(move || {
                    let _ = cell.set(std::thread::current().id());
                });
                handle
            };
            let actors = start_plugin_actors(&self.plugins, &gates, &arbiter, index == 0);
            let steps = steps_of(&self.plugins, &actors);
            let admission = Arc::new(Admission::new(self.max_pending));
            let counted = admission.clone();
            let coordinator = if index == 0 {
                PipelineCoordinator::new(steps, counted).start()
            } else {
                PipelineCoordinator::start_in_arbiter(&arbiter, move |_| {
                    PipelineCoordinator::new(steps, counted)
                })
            };
            if index == 0 {
                first = actors;
            }
            shards.push(Shard {
                coordinator,
                arbiter,
                thread,
                admission,
            });
        }
        let actors: Vec<(PluginRegistration, Addr<PluginActor>)> =
            self.plugins.into_iter().zip(first).collect();
        let mut load_notes: Vec<Note> = actors
            .iter()
            .filter(|(plugin, _)| plugin.has_raw_hooks())
            .map(|(plugin, _)| Note::RawHookRegistered {
                plugin: plugin.name.to_string(),
            })
            .collect();
        load_notes.extend(crate::events::unknown_subscription_notes(&actors));
        // The event bus delivers through shard 0's plugin actors (SPEC G1.3 order is global).
        let events = EventBus::start(crate::events::subscribers(&actors), self.events);
        let plugins = actors
            .iter()
            .map(|(plugin, _)| LoadedPlugin {
                name: plugin.name.clone(),
                implements: plugin.implements(),
                subscriptions: plugin.subscriptions.clone(),
            })
            .collect();
        Ok(Pipeline {
            id: NEXT_PIPELINE.fetch_add(1, Ordering::Relaxed),
            shards: Arc::new(Shards {
                list: shards.into(),
                owned,
            }),
            placements: Arc::default(),
            plugins,
            load_notes: load_notes.into(),
            events,
        })
    }
}

/// Each started pipeline's number, so a [`SessionKey`] is only trusted by its own pipeline.
static NEXT_PIPELINE: AtomicU64 = AtomicU64::new(0);

/// The most shards a pipeline runs.
const MAX_SHARDS: usize = 64;

/// The environment variable that overrides the default shard count (an operator's knob, and an
/// A/B switch for measurements).
pub const SHARDS_ENV: &str = "HOOKLINE_SHARDS";

/// Threads in each further shard arbiter's blocking pool. The sessions placed on a shard run
/// their file store I/O there (`spawn_blocking`); with tokio's default bound (512) a server
/// taking 200 sessions over ran 45 to 110 threads, each with its allocator arena, and its
/// resident memory went with its thread count (issue 49, docs/performance.md). The same bound
/// as `hookline serve`'s own runtime.
const SHARD_BLOCKING_THREADS: usize = 32;

/// A shard's arbiter: actix's current-thread runtime, with a bounded blocking pool.
fn bounded_arbiter() -> Arbiter {
    Arbiter::try_with_tokio_rt(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .max_blocking_threads(SHARD_BLOCKING_THREADS)
            .build()
    })
    // Not built: actix's default, as before (which fails the same way, loudly).
    .unwrap_or_else(|_| Arbiter::new())
}

/// `HOOKLINE_SHARDS` if set to a number; else one shard per core; one when the runtime's clock
/// is paused.
fn default_shards() -> usize {
    if let Some(shards) = std::env::var(SHARDS_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
    {
        return shards.clamp(1, MAX_SHARDS);
    }
    if clock_paused() {
        return 1;
    }
    std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(MAX_SHARDS)
}

/// Whether tokio's clock is paused on this runtime (tests with paused time): a paused clock
/// does not move while real time passes. Timeouts of calls on other arbiters would run on their
/// own, unpaused clocks, so such a pipeline keeps every session on the current arbiter.
fn clock_paused() -> bool {
    let before = tokio::time::Instant::now();
    let spin = std::time::Instant::now();
    while spin.elapsed() < Duration::from_micros(5) {
        std::hint::spin_loop();
    }
    tokio::time::Instant::now() == before
}

/// Starts one actor per plugin on `arbiter` (on the current one for the first shard), in
/// load order. They are started from the last to the first, so each is given, per hook it
/// implements, the actor of the next plugin that implements it too (a batch's next hop).
fn start_plugin_actors(
    plugins: &[PluginRegistration],
    gates: &[Option<Arc<Semaphore>>],
    arbiter: &ArbiterHandle,
    current: bool,
) -> Vec<Addr<PluginActor>> {
    let mut next: [Option<Addr<PluginActor>>; HookKind::ALL.len()] = std::array::from_fn(|_| None);
    let mut actors: Vec<Addr<PluginActor>> = plugins
        .iter()
        .zip(gates)
        .rev()
        .map(|(plugin, gate)| {
            let mut actor = PluginActor::with_gate(plugin, gate.clone());
            actor.next = next.clone();
            let addr = if current {
                actor.start()
            } else {
                PluginActor::start_in_arbiter(arbiter, move |_| actor)
            };
            for kind in plugin.implements().iter() {
                next[kind as usize] = Some(addr.clone());
            }
            addr
        })
        .collect();
    actors.reverse();
    actors
}

/// For each hook, the actors of the plugins that implement it, in load order.
fn steps_of(
    plugins: &[PluginRegistration],
    actors: &[Addr<PluginActor>],
) -> [Arc<[Step]>; HookKind::ALL.len()] {
    std::array::from_fn(|index| {
        let kind = HookKind::ALL[index];
        plugins
            .iter()
            .zip(actors)
            .filter(|(plugin, _)| plugin.implements().contains(kind))
            .map(|(plugin, addr)| Step {
                // A copy of the name per shard: each shard's threads count references on their own.
                name: Arc::from(&*plugin.name),
                addr: addr.clone(),
            })
            .collect()
    })
}

/// One shard: its coordinator and the arbiter it and its plugin actors run on.
#[derive(Debug)]
struct Shard {
    coordinator: Addr<PipelineCoordinator>,
    arbiter: ArbiterHandle,
    /// The arbiter's thread, once it has run its first closure ([`Pipeline::shard_here`]).
    thread: Arc<OnceLock<ThreadId>>,
    /// Calls admitted to the shard, counted by the caller before it sends.
    admission: Arc<Admission>,
}

/// The shards, and the arbiters the pipeline started (stopped when the last handle goes).
#[derive(Debug)]
struct Shards {
    list: Box<[Shard]>,
    owned: Vec<Arbiter>,
}

impl Drop for Shards {
    fn drop(&mut self) {
        for arbiter in &self.owned {
            // An arbiter that already stopped (system shutdown) is the goal either way.
            let _ = arbiter.stop();
        }
    }
}

/// The shard of `session` among `count`: FNV-1a of its id, modulo `count`. Stable for the life
/// of the process (and across processes: it depends on the id's bytes only).
fn shard_index(session: &SessionId, count: usize) -> usize {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in session.as_str().bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (hash % count.max(1) as u64) as usize
}

/// A started pipeline: its shards and what was loaded.
///
/// Cloning is cheap; every clone talks to the same shards. An actix program may also hold
/// [`Pipeline::coordinator_for`] a session and send [`Call`](crate::Call) messages itself.
#[derive(Clone, Debug)]
pub struct Pipeline {
    id: u64,
    shards: Arc<Shards>,
    placements: Arc<Placements>,
    plugins: Arc<[LoadedPlugin]>,
    load_notes: Arc<[Note]>,
    events: EventBus,
}

impl Pipeline {
    /// A builder with no plugins.
    pub fn builder() -> PipelineBuilder {
        PipelineBuilder {
            plugins: Vec::new(),
            max_pending: DEFAULT_MAX_PENDING,
            events: EventBusConfig::default(),
            shards: None,
        }
    }

    /// Runs hook `H` on `value` for `session`, for hooks whose rule needs no context.
    ///
    /// # Errors
    /// [`PipelineError`] when the pipeline is stopped or overloaded. Failing plugins are not
    /// errors: they are skipped, and their notes are in the [`Outcome`].
    pub async fn call<H>(
        &self,
        session: impl SessionRef,
        value: H::Value,
    ) -> Result<Outcome<H::Value>, PipelineError>
    where
        H: Dispatch<Context = ()>,
    {
        self.call_with::<H>(session, (), value).await
    }

    /// Runs hook `H` on `value` for `session`, with the facts its rule needs.
    ///
    /// The call is counted in its shard's admission bound, then goes to the session's shard with
    /// one message that carries its own reply channel. A call beyond the bound is refused at once
    /// with [`PipelineError::Overloaded`], before any message is sent: a backlog is shed at the
    /// door, never parked in the callers.
    ///
    /// # Errors
    /// As [`Pipeline::call`].
    pub async fn call_with<H: Dispatch>(
        &self,
        session: impl SessionRef,
        context: H::Context,
        value: H::Value,
    ) -> Result<Outcome<H::Value>, PipelineError> {
        self.submit_with::<H>(session, context, value).await
    }

    /// Admits and sends one call of hook `H` now, and returns its answer to await later: what
    /// [`Pipeline::call`] does, split at the point where the call has left the caller. A driver
    /// that issues calls on a schedule (an open loop, a server's accept loop) admits or sheds each
    /// call at the moment it is due, whether or not it awaits the answers yet.
    pub fn submit<H>(&self, session: impl SessionRef, value: H::Value) -> Submitted<H::Value>
    where
        H: Dispatch<Context = ()>,
    {
        self.submit_with::<H>(session, (), value)
    }

    /// [`Pipeline::submit`] with the facts the hook's rule needs.
    pub fn submit_with<H: Dispatch>(
        &self,
        session: impl SessionRef,
        context: H::Context,
        value: H::Value,
    ) -> Submitted<H::Value> {
        let (index, slot) = self.place(&session);
        let shard = &self.shards.list[index];
        if !shard.coordinator.connected() {
            return Submitted::refused(PipelineError::Stopped);
        }
        if !shard.admission.try_admit() {
            return Submitted::refused(PipelineError::Overloaded);
        }
        let (reply, answer) = oneshot::channel();
        let job = Job::<H>::new(
            session.into_session_id(),
            slot,
            context,
            value,
            ReplyTo::One(reply),
        );
        // On the shard's arbiter, a lone call whose session is free is admitted right here and
        // sent to the first plugin actor: no hop through the coordinator (issue 23 item 4).
        let job = match admit_in_place(&shard.admission, job) {
            Ok(()) => return Submitted::sent(answer),
            Err(job) => job,
        };
        shard.admission.sent();
        let admit = Admit(job);
        match shard.coordinator.try_send(admit) {
            Ok(()) => Submitted::sent(answer),
            // Admitted calls are bounded by the count above, not by the mailbox: its capacity is
            // raised to the bound when the coordinator starts, and a call that finds it full
            // before then (actix's default of 16) goes in anyway rather than wait or be shed.
            Err(SendError::Full(admit)) => {
                shard.coordinator.do_send(admit);
                Submitted::sent(answer)
            }
            Err(SendError::Closed(_)) => {
                shard.admission.received();
                shard.admission.release();
                Submitted::refused(PipelineError::Stopped)
            }
        }
    }

    /// Runs hook `H` once per `(session, value)` of `calls` (hooks whose rule needs no context),
    /// answering the whole batch at once, in the order given.
    ///
    /// For callers that hold many sessions' calls at once (a gateway serving many sessions, a
    /// soak, a benchmark): the calls go to their shards in one message per shard, travel the
    /// plugins in the shards' batches like any call, and the caller is woken once, when the last
    /// is answered, instead of once per call. Every rule, note, timeout and guard is the single
    /// call's; two calls of one session run one after the other, in the order given.
    ///
    /// Each call has its own result: [`PipelineError::Overloaded`] for a call beyond its shard's
    /// bound, [`PipelineError::Stopped`] when its shard has stopped.
    pub async fn call_many<H>(
        &self,
        calls: impl IntoIterator<Item = (impl SessionRef, H::Value)>,
    ) -> Vec<Result<Outcome<H::Value>, PipelineError>>
    where
        H: Dispatch<Context = ()>,
    {
        self.call_many_with::<H>(calls.into_iter().map(|(s, v)| (s, (), v)))
            .await
    }

    /// [`Pipeline::call_many`] with the facts each call's rule needs.
    pub async fn call_many_with<H: Dispatch>(
        &self,
        calls: impl IntoIterator<Item = (impl SessionRef, H::Context, H::Value)>,
    ) -> Vec<Result<Outcome<H::Value>, PipelineError>> {
        let calls: Vec<_> = calls.into_iter().collect();
        if calls.is_empty() {
            return Vec::new();
        }
        let count = calls.len();
        let (gather, all) = Gather::<H>::new(count);
        // Per shard, the calls in batches of at most `MAX_BATCH`: each goes through the plugins
        // as it is built here (the coordinator marks its sessions running in place).
        let mut by_shard: Vec<Vec<Vec<Job<H>>>> = (0..self.shards()).map(|_| Vec::new()).collect();
        for (index, (session, context, value)) in calls.into_iter().enumerate() {
            let reply = ReplyTo::Many(Slot::new(&gather, index));
            let (shard, slot) = self.place(&session);
            if !self.shards.list[shard].admission.try_admit() {
                reply.send(Err(PipelineError::Overloaded));
                continue;
            }
            let batches = &mut by_shard[shard];
            // Room for a whole batch (or the calls left): its jobs are never moved to grow it.
            if batches.last().is_none_or(|batch| batch.len() >= MAX_BATCH) {
                batches.push(Vec::with_capacity(MAX_BATCH.min(count - index)));
            }
            if let Some(batch) = batches.last_mut() {
                // Built where it goes (`Job::new` is inline): no copy of the job per call.
                batch.push(Job::new(
                    session.into_session_id(),
                    slot,
                    context,
                    value,
                    reply,
                ));
            }
        }
        drop(gather);
        for (shard, batches) in self.shards.list.iter().zip(by_shard) {
            if batches.is_empty() {
                continue;
            }
            shard.admission.sent();
            match shard.coordinator.try_send(AdmitMany(batches)) {
                Ok(()) => {}
                // Bounded by the admission count, not the mailbox (as in `submit_with`).
                Err(SendError::Full(admit)) => shard.coordinator.do_send(admit),
                Err(SendError::Closed(AdmitMany(batches))) => {
                    shard.admission.received();
                    for job in batches.into_iter().flatten() {
                        shard.admission.release();
                        job.reply.send(Err(PipelineError::Stopped));
                    }
                }
            }
        }
        all.await
            .unwrap_or_else(|_| (0..count).map(|_| Err(PipelineError::Stopped)).collect())
    }

    /// Opens `session` on its shard: gives it a slot in the shard's dense session table and
    /// returns a [`SessionKey`] that carries the shard and the slot. Calls made with the key go
    /// to the shard and are admitted without hashing the id (with a plain [`SessionId`] each call
    /// hashes it twice: for its shard and in the shard's table). The key holds a copy of the id
    /// made on the shard's thread: each call counts a reference to the id in and out, and with an
    /// allocator that keeps each thread's small allocations apart (mimalloc in hookline's
    /// binaries) that copy shares no cache line with other shards' ids (an id made elsewhere may,
    /// and then those counts move the line between cores at every call).
    /// Opening is optional: a session first seen in a call gets its slot then.
    ///
    /// # Errors
    /// [`PipelineError::Stopped`] when the session's shard is gone.
    pub async fn open_session(&self, session: &SessionId) -> Result<SessionKey, PipelineError> {
        let shard = self.shard_of(session);
        // The key carries the shard's own copy of the id (see `OpenSession`).
        let (slot, id) = self.shards.list[shard]
            .coordinator
            .send(OpenSession(session.clone()))
            .await
            .map_err(|_| PipelineError::Stopped)?;
        let shard = u32::try_from(shard).unwrap_or(u32::MAX);
        Ok(SessionKey::new(id, self.id, shard, slot))
    }

    /// The shard and the slot hint of a call for `session`: a key of this pipeline's own, or the
    /// id's hash and no hint.
    fn place(&self, session: &impl SessionRef) -> (usize, u32) {
        match session.placed() {
            Some((pipeline, shard, slot))
                if pipeline == self.id && (shard as usize) < self.shards() =>
            {
                (shard as usize, slot)
            }
            _ => (self.shard_of(session.session_id()), NO_SLOT),
        }
    }

    /// How many shards the pipeline runs (arbiters, each with its own coordinator and plugin
    /// actors).
    pub fn shards(&self) -> usize {
        self.shards.list.len()
    }

    /// The shard `session` maps to: the one it was placed on ([`Pipeline::place_here`]) while
    /// the pipeline knows it, else FNV-1a of the session id's bytes modulo
    /// [`Pipeline::shards`]. Every call of a session goes to this shard.
    pub fn shard_of(&self, session: &SessionId) -> usize {
        self.placements
            .get(session)
            .unwrap_or_else(|| shard_index(session, self.shards()))
    }

    /// The shard whose arbiter runs the calling thread, if any.
    pub fn shard_here(&self) -> Option<usize> {
        let here = std::thread::current().id();
        self.shards
            .list
            .iter()
            .position(|shard| shard.thread.get() == Some(&here))
    }

    /// Places `session` on the shard whose arbiter runs the calling thread, when it is one, and
    /// returns that shard: from now on every call of the session, and [`Pipeline::shard_of`],
    /// [`Pipeline::arbiter_for`] and [`Pipeline::coordinator_for`] of it, go there, until
    /// [`Pipeline::forget_session`]. A server that serves requests on every shard's thread places
    /// each session it creates where its request arrived, so its requests, turns and hook calls
    /// make no thread hop (issue 47), whatever its id.
    ///
    /// Place a session before its first call (a session the pipeline already placed stays where
    /// it is). Off a shard's thread, or with one shard, nothing is placed and the id's hash
    /// decides, as it does for every session not placed.
    pub fn place_here(&self, session: &SessionId) -> Option<usize> {
        if self.shards() == 1 {
            return None;
        }
        let here = self.shard_here()?;
        Some(self.placements.place(session, here))
    }

    /// The arbiter of `session`'s shard. Work spawned there (a session's turn) makes its hook
    /// calls without a thread hop; work elsewhere still works, with one hop each way.
    pub fn arbiter_for(&self, session: &SessionId) -> ArbiterHandle {
        self.shards.list[self.shard_of(session)].arbiter.clone()
    }

    /// The arbiter of shard `index` (`None` beyond [`Pipeline::shards`]).
    pub fn shard_arbiter(&self, index: usize) -> Option<ArbiterHandle> {
        self.shards.list.get(index).map(|s| s.arbiter.clone())
    }

    /// The coordinator of `session`'s shard, for actix programs that send
    /// [`Call`](crate::Call) themselves (send a session's calls only to its own shard's
    /// coordinator: per-session order is kept per shard). Send one session's calls one way: a
    /// [`Pipeline::call`] made on the shard's arbiter may be admitted in place before a `Call` of
    /// the same session still waiting in the coordinator's mailbox.
    pub fn coordinator_for(&self, session: &SessionId) -> &Addr<PipelineCoordinator> {
        &self.shards.list[self.shard_of(session)].coordinator
    }

    /// Drops what the coordinator keeps for `session` once its calls finish, and where it was
    /// placed ([`Pipeline::place_here`]).
    ///
    /// # Errors
    /// [`PipelineError::Stopped`] when the coordinator is gone.
    pub async fn forget_session(&self, session: &SessionId) -> Result<(), PipelineError> {
        let forgotten = self
            .coordinator_for(session)
            .send(ForgetSession(session.clone()))
            .await
            .map_err(|_| PipelineError::Stopped);
        // After the shard forgot it: a call still on its way there found it where it was.
        self.placements.forget(session);
        forgotten
    }

    /// How many calls the shards have admitted now, their `max_pending` bounds, and the sessions
    /// their tables hold, summed.
    ///
    /// # Errors
    /// [`PipelineError::Stopped`] when a coordinator is gone.
    pub async fn admitted(&self) -> Result<Admitted, PipelineError> {
        let mut sum = Admitted {
            calls: 0,
            bound: 0,
            sessions: 0,
        };
        for shard in self.shards.list.iter() {
            let one = shard
                .coordinator
                .send(AdmittedCalls)
                .await
                .map_err(|_| PipelineError::Stopped)?;
            sum.calls += one.calls;
            sum.bound += one.bound;
            sum.sessions += one.sessions;
        }
        Ok(sum)
    }

    /// Stops every shard's coordinator; later calls fail with [`PipelineError::Stopped`].
    pub async fn stop(&self) {
        for shard in self.shards.list.iter() {
            // Already stopped is the goal either way.
            let _ = shard.coordinator.send(StopPipeline).await;
        }
    }

    /// Shard 0's coordinator. Prefer [`Pipeline::coordinator_for`]: a session's calls must all go
    /// to its own shard.
    pub fn coordinator(&self) -> &Addr<PipelineCoordinator> {
        &self.shards.list[0].coordinator
    }

    /// The loaded plugins, in load order.
    pub fn plugins(&self) -> &[LoadedPlugin] {
        &self.plugins
    }

    /// Whether any loaded plugin implements `kind` (a call of it reaches a plugin).
    pub fn implements(&self, kind: HookKind) -> bool {
        self.plugins.iter().any(|p| p.implements.contains(kind))
    }

    /// Notes recorded at load: `Plugin '<name>' registered a raw hook.` for each plugin with raw
    /// hooks, in load order (SPEC R0.2), then `Plugin '<name>' subscribes to '<key>', which the
    /// gateway never emits.` for each unknown event subscription (SPEC G4.1).
    pub fn load_notes(&self) -> &[Note] {
        &self.load_notes
    }

    /// The gateway event bus over this pipeline's plugin actors (SPEC G).
    pub fn events(&self) -> &EventBus {
        &self.events
    }
}
