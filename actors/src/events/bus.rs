//! The event bus: an actor owning the subscriber table and the note log, and the [`EventBus`]
//! handle producers use.
//!
//! Wait behaviour (SPEC G3.1; `docs/events.md`):
//! - awaited keys: [`EventBus::emit`] returns after every handler has run, with their notes;
//! - queued keys (`message:*`, `session:patch`): put on one bounded queue without waiting; a
//!   worker delivers them in order; a full queue drops the event, counts it, and the next
//!   [`EventBus::take_notes`] carries `Dropped N events ...`;
//! - detached keys (`session:auto-reset`): delivered by a task nobody waits for, at most
//!   `max_detached` at once (beyond that, dropped and counted like a full queue).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use actix::{
    Actor, ActorFutureExt, Addr, AsyncContext, Context, Handler, Message, ResponseFuture,
    WrapFuture,
};
use hookline_messages::event::{
    subscribed_to, AgentBootstrapContext, CustomKey, Event, EventKey, Subscription, Wait,
};
use hookline_messages::note::Note;
use tokio::sync::mpsc;

use super::deliver::{deliver, deliver_queued, Delivery, Subscriber};
use super::log::NoteLog;

/// How many messages may wait in the bus actor's mailbox.
const BUS_MAILBOX_CAPACITY: usize = 4096;

/// The most queued events the worker takes in one wake-up.
const DRAIN_BATCH: usize = 1024;

/// Bounds of one event bus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventBusConfig {
    /// Queued events waiting for delivery (default 1024).
    pub queue_capacity: usize,
    /// Detached deliveries running at once (default 64).
    pub max_detached: usize,
    /// Distinct notes kept between two [`EventBus::take_notes`] (default 1024).
    pub max_notes: usize,
}

impl Default for EventBusConfig {
    fn default() -> Self {
        Self {
            queue_capacity: 1024,
            max_detached: 64,
            max_notes: 1024,
        }
    }
}

/// Why an event could not be emitted.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EventError {
    /// The bus has stopped.
    #[error("the event bus has stopped")]
    Stopped,
    /// `gateway:*` events go through the gateway lifecycle actor, which bounds the caller's wait.
    #[error("'{0}' is emitted by the gateway lifecycle actor")]
    LifecycleEvent(EventKey),
}

/// How [`EventBus::emit`] handled an event.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // Returned once per emit, not stored.
pub enum Emitted {
    /// Every handler ran (awaited keys).
    Delivered(Delivery),
    /// Put on the queue; a worker delivers it.
    Queued,
    /// Started in the background.
    Detached,
    /// Dropped because the queue (or the detached bound) was full; counted and noted.
    Dropped,
}

/// A plugin's subscriptions, as `hooks info` lists them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subscribed {
    /// The plugin's name.
    pub plugin: Arc<str>,
    /// Its subscriptions in the order written; [`Subscription::is_known`] is false for the ones
    /// the gateway never emits.
    pub subscriptions: Arc<[Subscription]>,
}

impl AsRef<[Subscription]> for Subscribed {
    fn as_ref(&self) -> &[Subscription] {
        &self.subscriptions
    }
}

/// The actor behind [`EventBus`].
pub(crate) struct EventBusActor {
    subscribers: Arc<[Subscriber]>,
    log: NoteLog,
    queue: Option<mpsc::Receiver<Arc<Event>>>,
    drops: Arc<Drops>,
    /// Queued and detached events whose notes are not logged yet ([`EventBus::take_notes`]).
    in_flight: Arc<AtomicU64>,
}

/// Drop counters shared by the handle (which drops) and the actor (which notes).
#[derive(Default)]
struct Drops {
    total: AtomicU64,
    unnoted: AtomicU64,
}

impl Drops {
    fn count(&self) {
        self.total.fetch_add(1, Ordering::Relaxed);
        self.unnoted.fetch_add(1, Ordering::Relaxed);
        metrics::counter!("hookline_events_dropped_total").increment(1);
    }
}

impl Actor for EventBusActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(BUS_MAILBOX_CAPACITY);
        let Some(mut queue) = self.queue.take() else {
            return;
        };
        let subscribers = self.subscribers.clone();
        let in_flight = Arc::clone(&self.in_flight);
        let me = ctx.address();
        // The one worker of the queue: deliveries of queued events happen one at a time, in order.
        actix_rt::spawn(async move {
            // Taking what is queued in one wake-up, rather than one event per wake-up, keeps the
            // worker up with producers that share its thread (found by the soak).
            // The events travel as `Arc`s (made by the producer): a pointer moves through the
            // queue and into each handler's run, not the event (hundreds of bytes) each time.
            let mut events = Vec::with_capacity(DRAIN_BATCH);
            while queue.recv_many(&mut events, DRAIN_BATCH).await > 0 {
                let delivered = events.len() as u64;
                let notes = deliver_queued(&subscribers, events.drain(..)).await;
                // Most deliveries have no note: no round trip through the bus's mailbox then.
                if notes.is_empty() {
                    in_flight.fetch_sub(delivered, Ordering::AcqRel);
                } else if me.send(Record(notes, delivered)).await.is_err() {
                    break;
                }
            }
        });
    }
}

/// Delivers one event now; the reply comes once every handler ran.
struct Dispatch(Event);

impl Message for Dispatch {
    type Result = Delivery;
}

impl Handler<Dispatch> for EventBusActor {
    type Result = ResponseFuture<Delivery>;

    fn handle(&mut self, Dispatch(event): Dispatch, _: &mut Self::Context) -> Self::Result {
        let subscribers = self.subscribers.clone();
        Box::pin(async move { deliver(&subscribers, event).await })
    }
}

/// Delivers one event in the background and logs its notes.
struct Detach(Event, tokio::sync::OwnedSemaphorePermit);

impl Message for Detach {
    type Result = ();
}

impl Handler<Detach> for EventBusActor {
    type Result = ();

    fn handle(&mut self, Detach(event, permit): Detach, ctx: &mut Self::Context) {
        let subscribers = self.subscribers.clone();
        let run = async move {
            let delivery = deliver(&subscribers, event).await;
            drop(permit);
            delivery.notes
        };
        ctx.spawn(run.into_actor(self).map(|notes, this, _| {
            this.log.record(notes);
            this.in_flight.fetch_sub(1, Ordering::AcqRel);
        }));
    }
}

/// Notes from deliveries nobody awaited, and how many events they were.
struct Record(Vec<Note>, u64);

impl Message for Record {
    type Result = ();
}

impl Handler<Record> for EventBusActor {
    type Result = ();

    fn handle(&mut self, Record(notes, delivered): Record, _: &mut Self::Context) {
        self.log.record(notes);
        self.in_flight.fetch_sub(delivered, Ordering::AcqRel);
    }
}

/// Takes the logged notes, with a drop note if events were dropped since the last take.
struct TakeNotes;

impl Message for TakeNotes {
    type Result = Vec<Note>;
}

impl Handler<TakeNotes> for EventBusActor {
    type Result = Vec<Note>;

    fn handle(&mut self, _: TakeNotes, _: &mut Self::Context) -> Vec<Note> {
        let dropped = self.drops.unnoted.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            self.log.record([Note::EventsDropped { count: dropped }]);
        }
        self.log.take()
    }
}

/// A cheap, cloneable handle to a started event bus. Get one from
/// [`Pipeline::events`](crate::Pipeline::events).
#[derive(Clone)]
pub struct EventBus {
    addr: Addr<EventBusActor>,
    queue: mpsc::Sender<Arc<Event>>,
    drops: Arc<Drops>,
    /// Set while the actor's note log holds notes ([`EventBus::take_notes`]).
    noted: Arc<AtomicBool>,
    /// Queued and detached events whose notes are not logged yet.
    in_flight: Arc<AtomicU64>,
    detached: Arc<tokio::sync::Semaphore>,
    subscribed: Arc<[Subscribed]>,
}

impl std::fmt::Debug for EventBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventBus")
            .field("subscribed", &self.subscribed)
            .finish_non_exhaustive()
    }
}

impl EventBus {
    /// Starts a bus over `subscribers` (in load order) on the current arbiter.
    pub(crate) fn start(subscribers: Vec<Subscriber>, config: EventBusConfig) -> Self {
        let (queue, receiver) = mpsc::channel(config.queue_capacity.max(1));
        let drops = Arc::new(Drops::default());
        let subscribed = subscribers
            .iter()
            .map(|s| Subscribed {
                plugin: s.name.clone(),
                subscriptions: s.subscriptions.clone(),
            })
            .collect();
        let log = NoteLog::new(config.max_notes);
        let noted = log.holding();
        let in_flight = Arc::new(AtomicU64::new(0));
        let actor = EventBusActor {
            subscribers: subscribers.into(),
            in_flight: Arc::clone(&in_flight),
            log,
            queue: Some(receiver),
            drops: drops.clone(),
        };
        Self {
            addr: actor.start(),
            queue,
            drops,
            noted,
            in_flight,
            detached: Arc::new(tokio::sync::Semaphore::new(config.max_detached.max(1))),
            subscribed,
        }
    }

    /// Emits `event` the way its key's [`Wait`] rule says.
    ///
    /// # Errors
    /// [`EventError::LifecycleEvent`] for `gateway:*` keys (use the gateway lifecycle actor);
    /// [`EventError::Stopped`] when the bus is gone.
    pub async fn emit(&self, event: Event) -> Result<Emitted, EventError> {
        match event.key().wait() {
            Wait::Awaited => self.dispatch(event).await.map(Emitted::Delivered),
            Wait::Queued => Ok(self.enqueue(event)),
            Wait::Detached => Ok(self.detach(event)),
            Wait::Lifecycle => Err(EventError::LifecycleEvent(event.key())),
        }
    }

    /// Delivers `event` to every subscriber now and waits for all of them (each bounded by its
    /// event timeout, except as [`Delivery::still_running`] says). Ignores the key's wait rule:
    /// producers use [`EventBus::emit`].
    ///
    /// # Errors
    /// [`EventError::Stopped`] when the bus is gone.
    pub async fn dispatch(&self, event: Event) -> Result<Delivery, EventError> {
        self.addr
            .send(Dispatch(event))
            .await
            .map_err(|_| EventError::Stopped)
    }

    /// Puts `event` on the bounded queue without waiting (SPEC G3.1). A full queue drops it.
    /// An event no plugin subscribes to is delivered to nobody at once (issue 47: the worker's
    /// thread was woken for each turn's `message:*` events with no handler for them).
    pub fn enqueue(&self, event: Event) -> Emitted {
        if !self.reaches_anyone(&event) {
            return Emitted::Queued;
        }
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        match self.queue.try_send(Arc::new(event)) {
            Ok(()) => Emitted::Queued,
            Err(_full_or_closed) => {
                self.in_flight.fetch_sub(1, Ordering::AcqRel);
                self.drops.count();
                Emitted::Dropped
            }
        }
    }

    /// Whether a plugin subscribes to `event`'s key (SPEC G1.3's order is not empty).
    fn reaches_anyone(&self, event: &Event) -> bool {
        subscribed_to(&self.subscribed, &event.key())
    }

    /// Starts delivering `event` in the background; nobody waits for it.
    /// As with [`EventBus::enqueue`], an event no plugin subscribes to is delivered to nobody at
    /// once.
    pub fn detach(&self, event: Event) -> Emitted {
        if !self.reaches_anyone(&event) {
            return Emitted::Detached;
        }
        let Ok(permit) = self.detached.clone().try_acquire_owned() else {
            self.drops.count();
            return Emitted::Dropped;
        };
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        match self.addr.try_send(Detach(event, permit)) {
            Ok(()) => Emitted::Detached,
            Err(_full_or_closed) => {
                self.in_flight.fetch_sub(1, Ordering::AcqRel);
                self.drops.count();
                Emitted::Dropped
            }
        }
    }

    /// Emits a custom key (SPEC G4.2): the only way an unknown subscription ever fires. The
    /// producer waits for every handler.
    ///
    /// # Errors
    /// [`EventError::Stopped`] when the bus is gone.
    pub async fn emit_custom(
        &self,
        key: CustomKey,
        context: serde_json::Value,
    ) -> Result<Delivery, EventError> {
        self.dispatch(Event::Custom { key, context }).await
    }

    /// Runs `agent:bootstrap` (SPEC G5.4): each handler sees the previous replacement of
    /// `bootstrapFiles`. Returns the context after the last handler, and the skip notes. The host
    /// still applies [`finalize_bootstrap_files`](hookline_messages::event::finalize_bootstrap_files).
    ///
    /// # Errors
    /// [`EventError::Stopped`] when the bus is gone.
    pub async fn bootstrap(
        &self,
        context: AgentBootstrapContext,
    ) -> Result<(AgentBootstrapContext, Vec<Note>), EventError> {
        let delivery = self
            .dispatch(Event::AgentBootstrap(context.clone()))
            .await?;
        match delivery.event {
            Event::AgentBootstrap(after) => Ok((after, delivery.notes)),
            _ => Ok((context, delivery.notes)),
        }
    }

    /// The notes of deliveries nobody awaited since the last call, each once, followed by
    /// `Dropped N events ...` when events were dropped meanwhile.
    pub async fn take_notes(&self) -> Vec<Note> {
        // No delivery under way, nothing logged, nothing dropped: nothing to take, and no
        // round trip to the bus's thread (issue 47: one per turn, from every other shard).
        if self.in_flight.load(Ordering::Acquire) == 0
            && !self.noted.load(Ordering::Acquire)
            && self.drops.unnoted.load(Ordering::Relaxed) == 0
        {
            return Vec::new();
        }
        self.addr.send(TakeNotes).await.unwrap_or_default()
    }

    /// Events dropped since the bus started.
    pub fn dropped_total(&self) -> u64 {
        self.drops.total.load(Ordering::Relaxed)
    }

    /// Events waiting on the queue now (never more than its capacity).
    pub fn queued(&self) -> usize {
        self.queue.max_capacity() - self.queue.capacity()
    }

    /// The queue's bound.
    pub fn queue_capacity(&self) -> usize {
        self.queue.max_capacity()
    }

    /// Every plugin with an event handler and its subscriptions, in load order.
    pub fn subscribed(&self) -> &[Subscribed] {
        &self.subscribed
    }
}
