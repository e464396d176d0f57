//! The coordinator's open batches: one per hook, filled while the mailbox drains.

use std::any::Any;
use std::marker::PhantomData;

use actix::Message;
use hookline_messages::hook::HookKind;

use super::Job;
use crate::plugin::Dispatch;

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

/// One open batch per hook. Each holds a `Vec<Job<H>>` for its own `H`, behind `Any` because
/// the hooks' value types differ; the slot of hook `H` only ever holds `Vec<Job<H>>` (it is
/// indexed by `H::KIND`), so the downcast cannot fail.
#[derive(Default)]
pub(crate) struct Batches {
    open: [Option<Box<dyn Any>>; HookKind::ALL.len()],
    scheduled: [bool; HookKind::ALL.len()],
}

impl Batches {
    fn batch<H: Dispatch>(&mut self) -> Option<&mut Vec<Job<H>>> {
        self.open[H::KIND as usize]
            .get_or_insert_with(|| Box::new(Vec::<Job<H>>::new()))
            .downcast_mut::<Vec<Job<H>>>()
    }

    /// Adds `job` to its hook's batch. Returns the batch when it reached `max`; hands `job` back
    /// if the slot held another type (it cannot: the slot is indexed by `H::KIND`).
    #[allow(clippy::result_large_err)] // the job is handed back, as a failed send does
    pub(crate) fn push<H: Dispatch>(
        &mut self,
        job: Job<H>,
        max: usize,
    ) -> Result<Option<Vec<Job<H>>>, Job<H>> {
        let Some(batch) = self.batch::<H>() else {
            return Err(job);
        };
        batch.push(job);
        Ok((batch.len() >= max).then(|| take_keeping_capacity(batch)))
    }

    /// Marks `kind`'s batch as due to flush; false when a flush is already on its way.
    pub(crate) fn schedule(&mut self, kind: HookKind) -> bool {
        !std::mem::replace(&mut self.scheduled[kind as usize], true)
    }

    /// Takes `H`'s open batch, if it holds any call.
    pub(crate) fn take<H: Dispatch>(&mut self) -> Option<Vec<Job<H>>> {
        self.scheduled[H::KIND as usize] = false;
        let batch = self.batch::<H>()?;
        (!batch.is_empty()).then(|| take_keeping_capacity(batch))
    }
}

/// Takes the batch's calls, leaving room for as many: under steady load the next batch fills
/// without growing its `Vec` step by step.
fn take_keeping_capacity<T>(batch: &mut Vec<T>) -> Vec<T> {
    let room = Vec::with_capacity(batch.len());
    std::mem::replace(batch, room)
}
