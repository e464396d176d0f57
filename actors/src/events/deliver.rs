//! One event's delivery: every matching handler in the order of SPEC G1.3, one after another.

use std::sync::Arc;

use actix::Addr;
use hookline_messages::event::{dispatch_order, Event, Subscription};
use hookline_messages::note::{Note, SkipReason};
use tokio::task::JoinHandle;

use super::invoke::{EventCall, InvokeEvent, InvokeEvents};
use super::EventReply;
use crate::plugin::PluginActor;

/// A plugin with an event handler, as the bus knows it (in load order).
#[derive(Clone)]
pub(crate) struct Subscriber {
    pub(crate) name: Arc<str>,
    pub(crate) addr: Addr<PluginActor>,
    pub(crate) subscriptions: Arc<[Subscription]>,
}

impl AsRef<[Subscription]> for Subscriber {
    fn as_ref(&self) -> &[Subscription] {
        &self.subscriptions
    }
}

/// What one delivery did.
#[derive(Debug)]
pub struct Delivery {
    /// The event after the handlers: for `agent:bootstrap`, with the last accepted
    /// `bootstrapFiles` replacement; otherwise as emitted.
    pub event: Event,
    /// A note for each skipped handler call, in call order.
    pub notes: Vec<Note>,
    /// How many handler calls were made (a plugin subscribed twice counts twice).
    pub calls: usize,
    /// Handlers that timed out without being cancelled (only for `gateway:shutdown` and
    /// `gateway:pre-restart`, SPEC G2.2); each finishes when the handler really ends.
    pub still_running: Vec<JoinHandle<()>>,
}

impl Delivery {
    /// Waits until every handler of this delivery has really finished (SPEC G2.3). Unbounded:
    /// call it only where the spec accepts waiting for a handler that may never end.
    pub async fn handlers_finished(self) {
        for task in self.still_running {
            // A handler task that panicked has finished too.
            let _ = task.await;
        }
    }
}

/// Delivers `event` to `subscribers` (in load order), one call after another.
pub(crate) async fn deliver(subscribers: &[Subscriber], event: Event) -> Delivery {
    let key = event.key();
    let mut event = Arc::new(event);
    let (mut notes, mut still_running, mut calls) = (Vec::new(), Vec::new(), 0);
    for index in dispatch_order(subscribers, &key) {
        let subscriber = &subscribers[index];
        let invoke = InvokeEvent {
            event: event.clone(),
        };
        let call = subscriber
            .addr
            .send(invoke)
            .await
            .unwrap_or_else(|_mailbox| EventCall::unavailable());
        calls += 1;
        still_running.extend(call.still_running);
        match call.result {
            Ok(EventReply::Done) => {}
            Ok(EventReply::ReplaceBootstrapFiles(files)) => {
                replace_bootstrap_files(&mut event, files);
            }
            Err(reason) => notes.push(Note::EventHandlerSkipped {
                plugin: subscriber.name.to_string(),
                event: key.clone(),
                reason,
            }),
        }
    }
    Delivery {
        event: Arc::unwrap_or_clone(event),
        notes,
        calls,
        still_running,
    }
}

/// Delivers queued events (SPEC G3.1: `message:*`, `session:patch`; read-only contexts), in
/// batches, and returns the notes of skipped handler calls.
///
/// Consecutive events whose handlers are the same, in the same order (a flood of
/// `message:received`, typically), form one run; the run goes to its handlers one after another,
/// each handler getting all of the run's events in one message. So each event still meets its
/// handlers in the order of SPEC G1.3, one after another, and each handler still sees the events
/// in the order they were queued.
pub(crate) async fn deliver_queued(
    subscribers: &[Subscriber],
    events: impl IntoIterator<Item = Arc<Event>>,
) -> Vec<Note> {
    let mut notes = Vec::new();
    let mut events = events.into_iter().peekable();
    while let Some(first) = events.next() {
        let key = first.key();
        let order = dispatch_order(subscribers, &key);
        let mut run = vec![first];
        // A flood is mostly one key: compare keys first, and work an order out only for another.
        let same_handlers =
            |e: &Arc<Event>| e.key() == key || dispatch_order(subscribers, &e.key()) == order;
        while let Some(next) = events.next_if(same_handlers) {
            run.push(next);
        }
        for index in order {
            let subscriber = &subscribers[index];
            let batch = InvokeEvents {
                events: run.clone(),
            };
            // A closed mailbox answers nothing: each event then reads as `Unavailable`.
            let mut calls = subscriber
                .addr
                .send(batch)
                .await
                .unwrap_or_default()
                .into_iter();
            for event in &run {
                let reason = match calls.next().map(|c| c.result) {
                    Some(Ok(_)) => continue,
                    Some(Err(reason)) => reason,
                    None => SkipReason::Unavailable,
                };
                notes.push(Note::EventHandlerSkipped {
                    plugin: subscriber.name.to_string(),
                    event: event.key(),
                    reason,
                });
            }
        }
    }
    notes
}

/// SPEC G5.4: each handler sees the previous replacement. Other events are read-only.
fn replace_bootstrap_files(
    event: &mut Arc<Event>,
    files: Vec<hookline_messages::event::BootstrapFile>,
) {
    if let Event::AgentBootstrap(cx) = Arc::make_mut(event) {
        cx.bootstrap_files = files;
    }
}
