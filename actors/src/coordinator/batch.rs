//! The coordinator's open batches: one per hook, filled while the mailbox drains.

use std::any::Any;
use std::marker::PhantomData;

use actix::Message;
use hookline_messages::hook::{HookContext, HookKind};
use hookline_messages::session::SessionId;

use super::{Call, ReplyTo};
use crate::plugin::Dispatch;

/// A call admitted into a batch, with where its outcome goes.
pub(crate) struct Pending<H: Dispatch> {
    pub(crate) cx: HookContext,
    pub(crate) context: H::Context,
    pub(crate) value: H::Value,
    pub(crate) reply: ReplyTo<H>,
}

impl<H: Dispatch> Pending<H> {
    pub(crate) fn new(call: Call<H>, reply: ReplyTo<H>) -> Self {
        Self {
            cx: HookContext {
                session_id: call.session,
            },
            context: call.context,
            value: call.value,
            reply,
        }
    }

    pub(crate) fn session(&self) -> &SessionId {
        &self.cx.session_id
    }
}

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

/// One open batch per hook. Each holds a `Vec<Pending<H>>` for its own `H`, behind `Any`
/// because the hooks' value types differ.
#[derive(Default)]
pub(crate) struct Batches {
    open: [Option<Box<dyn Any>>; HookKind::ALL.len()],
    scheduled: [bool; HookKind::ALL.len()],
}

impl Batches {
    /// Adds `call` to its hook's batch. Returns the batch when it reached `max`.
    pub(crate) fn push<H: Dispatch>(
        &mut self,
        call: Pending<H>,
        max: usize,
    ) -> Option<Vec<Pending<H>>> {
        let slot = &mut self.open[H::KIND as usize];
        let batch = slot
            .get_or_insert_with(|| Box::new(Vec::<Pending<H>>::new()))
            .downcast_mut::<Vec<Pending<H>>>()?;
        batch.push(call);
        (batch.len() >= max).then(|| std::mem::take(batch))
    }

    /// Marks `kind`'s batch as due to flush; false when a flush is already on its way.
    pub(crate) fn schedule(&mut self, kind: HookKind) -> bool {
        !std::mem::replace(&mut self.scheduled[kind as usize], true)
    }

    /// Takes `H`'s open batch, if it holds any call.
    pub(crate) fn take<H: Dispatch>(&mut self) -> Option<Vec<Pending<H>>> {
        self.scheduled[H::KIND as usize] = false;
        let batch = self.open[H::KIND as usize]
            .as_mut()?
            .downcast_mut::<Vec<Pending<H>>>()?;
        (!batch.is_empty()).then(|| std::mem::take(batch))
    }
}
