//! The requests in flight on one plugin process, matched by id as replies arrive (one reader task
//! completes them; any number of callers wait at once).

use std::collections::{HashMap, HashSet, VecDeque};

use hookline_messages::note::SkipReason;
use hookline_messages::protocol::{ReplyBody, RequestId};
use tokio::sync::oneshot;

/// How many answered and given-up ids are remembered, to tell a repeated or late reply from an
/// unknown one.
const REMEMBERED_IDS: usize = 4096;

/// What a waiting caller receives.
pub(crate) type Answer = Result<ReplyBody, SkipReason>;

/// Where a reply with a given id goes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Matched {
    /// A caller was waiting; it has the reply.
    Delivered,
    /// The caller gave up (timeout) and a cancel was sent: the late reply is dropped.
    Late,
    /// This id was answered already.
    Repeated,
    /// The host never gave this id.
    Unknown,
}

/// Ids in flight, plus a bounded memory of ids answered or given up on.
#[derive(Default)]
pub(crate) struct Pending {
    waiting: HashMap<RequestId, oneshot::Sender<Answer>>,
    answered: Recent,
    given_up: Recent,
    closed: Option<SkipReason>,
}

impl Pending {
    /// Registers a request, unless the process is gone.
    pub(crate) fn register(
        &mut self,
        id: RequestId,
    ) -> Result<oneshot::Receiver<Answer>, SkipReason> {
        if let Some(reason) = &self.closed {
            return Err(reason.clone());
        }
        let (tx, rx) = oneshot::channel();
        self.waiting.insert(id, tx);
        Ok(rx)
    }

    /// Hands a reply to its caller, or says why it has none.
    pub(crate) fn complete(&mut self, id: RequestId, body: ReplyBody) -> Matched {
        if let Some(tx) = self.waiting.remove(&id) {
            self.answered.insert(id);
            // The caller may have just timed out; the reply is then as late as any other.
            return match tx.send(Ok(body)) {
                Ok(()) => Matched::Delivered,
                Err(_) => Matched::Late,
            };
        }
        if self.given_up.contains(id) {
            Matched::Late
        } else if self.answered.contains(id) {
            Matched::Repeated
        } else {
            Matched::Unknown
        }
    }

    /// The caller of `id` stopped waiting. Returns whether it was still in flight (so a cancel
    /// is due).
    pub(crate) fn give_up(&mut self, id: RequestId) -> bool {
        let was_waiting = self.waiting.remove(&id).is_some();
        if was_waiting {
            self.given_up.insert(id);
        }
        was_waiting
    }

    /// Fails every request in flight with `reason`: the stream can no longer be trusted to
    /// answer them.
    pub(crate) fn fail_all(&mut self, reason: &SkipReason) {
        for (id, tx) in self.waiting.drain() {
            self.given_up.insert(id);
            // A caller that already left needs no answer.
            let _ = tx.send(Err(reason.clone()));
        }
    }

    /// Fails every request in flight and refuses new ones: the process is gone.
    pub(crate) fn close(&mut self, reason: SkipReason) {
        self.fail_all(&reason);
        self.closed = Some(reason);
    }

    /// Whether the process is gone.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.is_some()
    }

    /// How many requests are in flight.
    pub(crate) fn in_flight(&self) -> usize {
        self.waiting.len()
    }
}

/// A bounded set of recent ids: the oldest is forgotten first.
#[derive(Default)]
struct Recent {
    order: VecDeque<RequestId>,
    set: HashSet<RequestId>,
}

impl Recent {
    fn insert(&mut self, id: RequestId) {
        if self.set.insert(id) {
            self.order.push_back(id);
        }
        if self.order.len() > REMEMBERED_IDS {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
    }

    fn contains(&self, id: RequestId) -> bool {
        self.set.contains(&id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_matched_late_repeated_or_unknown() {
        let mut pending = Pending::default();
        let _first = pending.register(1);
        let _second = pending.register(2);
        assert_eq!(pending.complete(1, ReplyBody::Keep), Matched::Delivered);
        assert_eq!(pending.complete(1, ReplyBody::Keep), Matched::Repeated);
        assert!(pending.give_up(2));
        assert!(!pending.give_up(2));
        assert_eq!(pending.complete(2, ReplyBody::Keep), Matched::Late);
        assert_eq!(pending.complete(99, ReplyBody::Keep), Matched::Unknown);
        assert_eq!(pending.in_flight(), 0);
    }

    #[test]
    fn a_closed_set_fails_waiters_and_refuses_new_requests() {
        let mut pending = Pending::default();
        let Ok(mut rx) = pending.register(1) else {
            panic!("open")
        };
        pending.close(SkipReason::Exited);
        assert_eq!(rx.try_recv().ok(), Some(Err(SkipReason::Exited)));
        assert_eq!(pending.register(2).err(), Some(SkipReason::Exited));
    }
}
