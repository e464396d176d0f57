//! The coordinator's lanes: one per hook, each with the hook's route through the plugins and the
//! batch open for it, filled while the mailbox drains.

use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

use actix::Message;
use hookline_messages::hook::{Hook, HookKind};

use crate::route::{Job, Route};

/// Tells the coordinator to send hook `H`'s open batch. Sent with `notify`, so it is handled
/// after the messages already in the mailbox: that is what lets a batch fill.
pub(crate) struct Flush<H>(PhantomData<fn() -> H>);

impl<H> Flush<H> {
    pub(crate) fn new() -> Self {
        Self(PhantomData)
    }
}

impl<H: 'static> Message for Flush<H> {
    type Result = ();
}

/// One hook's lane: its route, and the calls waiting for the next batch.
pub(crate) struct Lane<H: Hook> {
    pub(crate) route: Arc<Route<H>>,
    open: Vec<Job<H>>,
    scheduled: bool,
}

impl<H: Hook> Lane<H> {
    /// Adds `job` to the open batch; returns the batch when it reached `max`.
    pub(crate) fn push(&mut self, job: Job<H>, max: usize) -> Option<Vec<Job<H>>> {
        self.open.push(job);
        (self.open.len() >= max).then(|| take_keeping_capacity(&mut self.open))
    }

    /// True when the open batch holds no call.
    pub(crate) fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// Marks the batch as due to flush; false when a flush is already on its way.
    pub(crate) fn schedule(&mut self) -> bool {
        !std::mem::replace(&mut self.scheduled, true)
    }

    /// Takes the open batch, if it holds any call.
    pub(crate) fn take(&mut self) -> Option<Vec<Job<H>>> {
        self.scheduled = false;
        (!self.open.is_empty()).then(|| take_keeping_capacity(&mut self.open))
    }
}

/// One lane per hook, made the first time the hook is called. Each holds a `Lane<H>` for its own
/// `H`, behind `Any` because the hooks' value types differ; the slot of hook `H` is indexed by
/// `H::KIND` and only ever holds `Lane<H>`.
#[derive(Default)]
pub(crate) struct Lanes {
    lanes: [Option<Box<dyn Any>>; HookKind::ALL.len()],
}

impl Lanes {
    /// `H`'s lane, made with `route()` the first time. `None` cannot happen (the slot is `H`'s);
    /// callers answer `Stopped` if it ever did rather than panic.
    pub(crate) fn lane<H: Hook>(
        &mut self,
        route: impl FnOnce() -> Route<H>,
    ) -> Option<&mut Lane<H>> {
        let slot = &mut self.lanes[H::KIND as usize];
        if !slot.as_ref().is_some_and(|lane| lane.is::<Lane<H>>()) {
            *slot = Some(Box::new(Lane::<H> {
                route: Arc::new(route()),
                open: Vec::new(),
                scheduled: false,
            }));
        }
        slot.as_mut()?.downcast_mut::<Lane<H>>()
    }
}

/// Takes the batch's calls, leaving room for as many: under steady load the next batch fills
/// without growing its `Vec` step by step.
fn take_keeping_capacity<T>(batch: &mut Vec<T>) -> Vec<T> {
    let room = Vec::with_capacity(batch.len());
    std::mem::replace(batch, room)
}
