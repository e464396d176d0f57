//! Where a call's outcome goes: its own oneshot (a lone call, [`Pipeline::call`]), or its slot in
//! a batch's [`Gather`] ([`Pipeline::call_many`]), which answers the whole batch at once when its
//! last call is done: one wake-up for the caller per batch instead of one per call.
//!
//! [`Pipeline::call`]: crate::Pipeline::call
//! [`Pipeline::call_many`]: crate::Pipeline::call_many

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context as TaskContext, Poll};

use tokio::sync::oneshot;

use super::Outcome;
use crate::error::PipelineError;

/// One call's result.
pub(crate) type CallAnswer<V> = Result<Outcome<V>, PipelineError>;

/// Where one call's outcome goes.
pub(crate) enum ReplyTo<V> {
    /// The call's own channel.
    One(oneshot::Sender<CallAnswer<V>>),
    /// A slot of a batch.
    Many(Slot<V>),
}

impl<V> ReplyTo<V> {
    /// Answers the call. A caller that stopped waiting is fine: the call still counted.
    pub(crate) fn send(self, answer: CallAnswer<V>) {
        match self {
            Self::One(sender) => {
                let _ = sender.send(answer);
            }
            Self::Many(mut slot) => slot.fill(answer),
        }
    }
}

/// The answers of one batch of calls, in the order the caller gave them.
pub(crate) struct Gather<V> {
    state: Mutex<Gathering<V>>,
}

struct Gathering<V> {
    /// One answer per call, in the caller's order; `Stopped` until the call's answer arrives.
    answers: Vec<CallAnswer<V>>,
    left: usize,
    done: Option<oneshot::Sender<Vec<CallAnswer<V>>>>,
}

impl<V> Gathering<V> {
    /// Puts call `index`'s answer in its place; sends them all when it was the last.
    fn put(&mut self, index: usize, answer: CallAnswer<V>) {
        if let Some(place) = self.answers.get_mut(index) {
            *place = answer;
        }
        self.left = self.left.saturating_sub(1);
        if self.left == 0 {
            if let Some(done) = self.done.take() {
                let _ = done.send(std::mem::take(&mut self.answers));
            }
        }
    }
}

impl<V> Gather<V> {
    /// A gather of `count` answers, and where the caller receives them all (`count` > 0).
    pub(crate) fn new(count: usize) -> (Arc<Self>, oneshot::Receiver<Vec<CallAnswer<V>>>) {
        let (done, all) = oneshot::channel();
        let state = Gathering {
            answers: (0..count).map(|_| Err(PipelineError::Stopped)).collect(),
            left: count,
            done: Some(done),
        };
        let gather = Arc::new(Self {
            state: Mutex::new(state),
        });
        (gather, all)
    }

    fn lock(&self) -> MutexGuard<'_, Gathering<V>> {
        // A panic never happens under this lock; a poisoned one still holds good answers.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One call's place in a [`Gather`]. Dropped unanswered (its shard stopped with the call in
/// it), it answers [`PipelineError::Stopped`], so the batch is always answered.
pub(crate) struct Slot<V> {
    gather: Option<Arc<Gather<V>>>,
    index: usize,
}

impl<V> Slot<V> {
    pub(crate) fn new(gather: &Arc<Gather<V>>, index: usize) -> Self {
        Self {
            gather: Some(gather.clone()),
            index,
        }
    }

    fn fill(&mut self, answer: CallAnswer<V>) {
        if let Some(gather) = self.gather.take() {
            gather.lock().put(self.index, answer);
        }
    }

    /// Whether this slot (still unanswered) belongs to `gather`.
    fn is_in(&self, gather: &Arc<Gather<V>>) -> bool {
        self.gather.as_ref().is_some_and(|g| Arc::ptr_eq(g, gather))
    }
}

impl<V> Drop for Slot<V> {
    fn drop(&mut self) {
        self.fill(Err(PipelineError::Stopped));
    }
}

/// Answers many calls: each in turn, except that a run of calls of one [`Gather`] (the usual
/// shape of a batch from [`Pipeline::call_many`](crate::Pipeline::call_many)) takes its lock
/// once for the whole run.
pub(crate) fn send_all<V>(answers: impl IntoIterator<Item = (ReplyTo<V>, CallAnswer<V>)>) {
    let mut answers = answers.into_iter().peekable();
    while let Some((reply, answer)) = answers.next() {
        let mut slot = match reply {
            ReplyTo::Many(slot) => slot,
            one => {
                one.send(answer);
                continue;
            }
        };
        let Some(gather) = slot.gather.take() else {
            continue;
        };
        let mut state = gather.lock();
        state.put(slot.index, answer);
        while let Some((ReplyTo::Many(mut next), answer)) =
            answers.next_if(|(reply, _)| matches!(reply, ReplyTo::Many(s) if s.is_in(&gather)))
        {
            next.gather = None;
            state.put(next.index, answer);
        }
    }
}

/// A call that has left its caller: refused at once, or sent with its answer to come
/// ([`Pipeline::submit`](crate::Pipeline::submit)). Await it for the call's result.
#[must_use = "a submitted call's answer is only seen by awaiting it"]
pub struct Submitted<V> {
    state: Submission<V>,
}

enum Submission<V> {
    Refused(Option<PipelineError>),
    Sent(oneshot::Receiver<CallAnswer<V>>),
}

impl<V> Submitted<V> {
    pub(crate) fn refused(error: PipelineError) -> Self {
        Self {
            state: Submission::Refused(Some(error)),
        }
    }

    pub(crate) fn sent(answer: oneshot::Receiver<CallAnswer<V>>) -> Self {
        Self {
            state: Submission::Sent(answer),
        }
    }
}

impl<V> Future for Submitted<V> {
    type Output = CallAnswer<V>;

    fn poll(self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().state {
            Submission::Refused(error) => {
                Poll::Ready(Err(error.take().unwrap_or(PipelineError::Stopped)))
            }
            // A reply channel dropped unanswered: the shard stopped with the call in it.
            Submission::Sent(answer) => Pin::new(answer)
                .poll(cx)
                .map(|answer| answer.unwrap_or(Err(PipelineError::Stopped))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_answered_once_in_order_and_a_dropped_slot_answers_stopped() {
        let (gather, mut all) = Gather::<u8>::new(3);
        let (a, b, c) = (
            Slot::new(&gather, 0),
            Slot::new(&gather, 1),
            Slot::new(&gather, 2),
        );
        ReplyTo::Many(c).send(Err(PipelineError::Overloaded));
        assert!(all.try_recv().is_err(), "not before the last answer");
        drop(a);
        ReplyTo::Many(b).send(Err(PipelineError::Overloaded));
        let answers = all.try_recv().unwrap_or_default();
        assert_eq!(
            answers,
            [
                Err(PipelineError::Stopped),
                Err(PipelineError::Overloaded),
                Err(PipelineError::Overloaded)
            ]
        );
    }

    #[test]
    fn answers_sent_together_fill_each_gather_in_order_and_the_lone_calls_too() {
        let (first, mut first_all) = Gather::<u8>::new(2);
        let (second, mut second_all) = Gather::<u8>::new(1);
        let (one, mut lone) = oneshot::channel();
        send_all([
            (
                ReplyTo::Many(Slot::new(&first, 1)),
                Err(PipelineError::Overloaded),
            ),
            (ReplyTo::One(one), Err(PipelineError::Overloaded)),
            (
                ReplyTo::Many(Slot::new(&second, 0)),
                Err(PipelineError::Stopped),
            ),
            (
                ReplyTo::Many(Slot::new(&first, 0)),
                Err(PipelineError::Overloaded),
            ),
        ]);
        assert_eq!(
            first_all.try_recv().ok(),
            Some(vec![
                Err(PipelineError::Overloaded),
                Err(PipelineError::Overloaded)
            ])
        );
        assert_eq!(
            second_all.try_recv().ok(),
            Some(vec![Err(PipelineError::Stopped)])
        );
        assert_eq!(lone.try_recv().ok(), Some(Err(PipelineError::Overloaded)));
    }
}
