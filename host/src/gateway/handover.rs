//! Replacing a running server without dropping anything (issue 49): the old gateway hands its
//! sessions over ([`Gateway::hand_over`]), the new one adopts them ([`Gateway::adopt`]) and,
//! while its predecessor runs, waits for a session that is still held there instead of
//! refusing it ([`Gateway::expect_predecessor`], `takeover.rs`).
//!
//! The store's lease is what moves a session: the old gateway keeps it until the session's
//! turn has ended (or its wait for an approval was dropped, left stored as it waits), its end
//! hooks have run and its end is archived; then it gives it back, and the new gateway takes it
//! as a takeover does (a turn that waited for an approval is asked again there, same call id,
//! same deadline). No session has two writers at any moment: the lease is taken only once it
//! is free (docs/storage.md).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use hookline_actors::lifecycle::SharedStateClosed;
use hookline_messages::note::Note;
use hookline_messages::session::SessionId;

use super::session::{Request, SessionHandle};
use super::status::Activity;
use super::takeover::Queue;
use super::Gateway;
use crate::state::HostError;

/// What a gateway knows of the server it replaces, or of its own replacement.
pub(super) struct Succession {
    /// The hand-over has begun: no session opens or moves here any more.
    handing_over: AtomicBool,
    /// Until when a session the predecessor still holds is waited for.
    until: Mutex<Option<Instant>>,
    /// The sessions the predecessor said it hands over: by key, the stored session to resume.
    adopted: Mutex<HashMap<SessionId, SessionId>>,
    /// Places to open a session moving here, for requests and for the background adoption.
    requests: tokio::sync::Semaphore,
    background: tokio::sync::Semaphore,
}

impl Default for Succession {
    fn default() -> Self {
        Self {
            handing_over: AtomicBool::default(),
            until: Mutex::default(),
            adopted: Mutex::default(),
            requests: tokio::sync::Semaphore::new(OPENING_FOR_REQUESTS),
            background: tokio::sync::Semaphore::new(ADOPTING_AT_ONCE),
        }
    }
}

impl Succession {
    /// Whether this gateway is handing its sessions over.
    pub(super) fn is_handing_over(&self) -> bool {
        self.handing_over.load(Ordering::Acquire)
    }

    /// The end of the wait for the predecessor, while it lasts.
    pub(super) fn window(&self) -> Option<Instant> {
        let until = *self.until.lock().unwrap_or_else(PoisonError::into_inner);
        until.filter(|until| *until > Instant::now())
    }

    /// The stored session to resume for `key`, when the predecessor said it hands it over.
    pub(super) fn adopted(&self, key: &SessionId) -> Option<SessionId> {
        self.adopted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned()
    }

    /// A place to open a session moving here, in `queue`'s turn; none when the queue was
    /// closed (never: it is not), so the open goes on unbounded rather than failing.
    pub(super) async fn place(&self, queue: Queue) -> Option<tokio::sync::SemaphorePermit<'_>> {
        let places = match queue {
            Queue::Request => &self.requests,
            Queue::Background => &self.background,
        };
        places.acquire().await.ok()
    }

    /// Forgets that `key` was handed over here: it has been taken over.
    pub(super) fn taken(&self, key: &SessionId) {
        self.adopted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }

    fn wait_until(&self, until: Instant) {
        let mut slot = self.until.lock().unwrap_or_else(PoisonError::into_inner);
        *slot = Some(slot.map_or(until, |old| old.max(until)));
    }
}

/// A session a hand-over moves: the key clients know it by, and the stored session its
/// conversation has active now, which differs after `/new`, `/reset`, `/clear`, `/fork`, `/cd`
/// or `/space`. On the wire (the hand-over's rendezvous) `key`, or `key/active` when they differ
/// (a session id never holds a `/`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MovingSession {
    /// The key requests name it by.
    pub key: SessionId,
    /// The stored session to resume under that key.
    pub active: SessionId,
}

impl std::fmt::Display for MovingSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.key == self.active {
            write!(f, "{}", self.key)
        } else {
            write!(f, "{}/{}", self.key, self.active)
        }
    }
}

impl From<&str> for MovingSession {
    fn from(wire: &str) -> Self {
        let (key, active) = wire.split_once('/').unwrap_or((wire, wire));
        Self {
            key: SessionId::new(key),
            active: SessionId::new(active),
        }
    }
}

/// What a hand-over did.
pub struct HandoverSummary {
    /// The sessions handed over (their leases given back), by key.
    pub moved: Vec<SessionId>,
    /// Turns that waited for an approval: left stored as they wait, to go on in the new server.
    pub detached_turns: usize,
    /// Turns the drain budget ran out on, stopped as a drain stops them.
    pub stopped_turns: usize,
    /// The lifecycle's notes (handlers skipped or still running, session ends that timed out).
    pub notes: Vec<Note>,
    /// Resolves once the shared state (plugin processes, open files and with them the file
    /// store's leases) has closed.
    pub closed: SharedStateClosed,
}

/// How a session left this gateway.
#[derive(Default)]
struct Left {
    detached: bool,
    stopped: bool,
}

impl Gateway {
    /// The sessions open here, by key: the ones a hand-over moves.
    pub fn session_ids(&self) -> Vec<MovingSession> {
        let mut ids: Vec<MovingSession> = self
            .table()
            .iter()
            .filter(|(_, handle)| !handle.has_ended())
            .map(|(key, handle)| MovingSession {
                key: key.clone(),
                active: handle.status().session_id.unwrap_or_else(|| key.clone()),
            })
            .collect();
        ids.sort_by(|a, b| a.key.cmp(&b.key));
        ids
    }

    /// Says a predecessor may still hold sessions for up to `wait` from now: until then, a
    /// request for a session it holds (on the file store any other process's lock, on
    /// PostgreSQL a lease under this node's name) waits for the lease and takes the session
    /// over, instead of being refused.
    pub fn expect_predecessor(&self, wait: Duration) {
        self.inner.succession.wait_until(Instant::now() + wait);
    }

    /// Takes over the sessions `ids` the predecessor hands over, each in the background as soon
    /// as its lease is free (at most `wait` from now), at most [`ADOPTING_AT_ONCE`] opening at
    /// a time: a turn that waited for an approval asks it again here (same call id and
    /// deadline), so it shows in the session's approvals. A request for one of them meanwhile
    /// waits for its lease, then opens it in a place of the requests' own (as many), never
    /// behind the background queue.
    ///
    /// # Panics
    /// When called outside a tokio runtime (the takeovers run on tasks of the current one).
    pub fn adopt(&self, ids: Vec<MovingSession>, wait: Duration) {
        self.expect_predecessor(wait);
        self.inner
            .succession
            .adopted
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(ids.iter().map(|m| (m.key.clone(), m.active.clone())));
        let until = Instant::now() + wait;
        for MovingSession { key, active } in ids {
            let gateway = self.clone();
            tokio::spawn(async move {
                // The wait for the lease costs nothing but a look now and then: only the open
                // itself takes a place (`Succession::place`), so a session still held by the
                // predecessor does not keep a free one waiting.
                gateway.until_free(&key, &active, until).await;
                if let Err(error) = gateway.open_or_take_over(&key, Queue::Background).await {
                    tracing::warn!(session = %key, %error, "could not take over a handed-over session");
                }
            });
        }
    }

    /// Begins a hand-over without moving anything yet (issue 49): from here new sessions are
    /// refused ([`RequestError::Moving`](super::RequestError::Moving)) and so are turns, and once
    /// every open already under way has finished (bounded by the drain budget), the sessions
    /// open here are the ones [`Gateway::session_ids`] lists: none opens after that list is
    /// sent to the successor, so none is given back unknown to it.
    pub async fn begin_hand_over(&self) {
        self.inner
            .succession
            .handing_over
            .store(true, Ordering::Release);
        self.openings_done(self.inner.limits.drain_budget).await;
    }

    /// Whether a hand-over has begun (new sessions are refused with [`RequestError::Moving`](super::RequestError::Moving)).
    pub fn is_handing_over(&self) -> bool {
        self.inner.succession.is_handing_over()
    }

    /// Hands every session over to the server that replaces this one (issue 49): new sessions
    /// and turns are refused ([`RequestError::Moving`](super::RequestError::Moving)); each
    /// session's running turn gets the drain budget (then is stopped as a drain stops it); a
    /// turn waiting for an approval is dropped where it waits, left stored for the successor
    /// to ask again, and its caller told so ([`HostError::TurnMoved`]); then, as a shutdown,
    /// `gateway:shutdown` and `gateway:pre-restart` (`restartExpectedMs`: the one given, 0
    /// when none: the successor already runs) run, every session's end hooks (SPEC P3.11),
    /// and the leases are given back when the shared state closes.
    ///
    /// # Errors
    /// [`HostError::Gateway`] when the gateway was shut down already.
    pub async fn hand_over(
        &self,
        reason: impl Into<String>,
        restart_expected_ms: Option<u64>,
    ) -> Result<HandoverSummary, HostError> {
        self.hand_over_after(reason, restart_expected_ms, std::future::ready(()))
            .await
    }

    /// [`Gateway::hand_over`], which awaits `settled` once every session's turns are out and
    /// before any session ends (and gives its lease back): what the caller still has to store
    /// with the sessions, such as the answers of its keyed requests, is stored while this
    /// process still holds them. `settled` is polled only once the hand-over has begun (new
    /// sessions and turns refused), and should be bounded.
    ///
    /// # Errors
    /// As [`Gateway::hand_over`].
    pub async fn hand_over_after(
        &self,
        reason: impl Into<String>,
        restart_expected_ms: Option<u64>,
        settled: impl std::future::Future<Output = ()>,
    ) -> Result<HandoverSummary, HostError> {
        self.inner
            .succession
            .handing_over
            .store(true, Ordering::Release);
        let budget = self.inner.limits.drain_budget;
        let mut handles = self.open_handles(&[]);
        let mut left = futures::future::join_all(handles.iter().map(|h| move_out(h, budget))).await;
        // A session whose open had begun before the hand-over joins the table after it: it
        // moves too, once every such open has finished (bounded by the budget).
        self.openings_done(budget).await;
        let late = self.open_handles(&handles);
        left.extend(futures::future::join_all(late.iter().map(|h| move_out(h, budget))).await);
        handles.extend(late);
        // The leases are still here: what the caller settles now is stored with the sessions,
        // so the successor reads it when it takes them (a keyed request's answer, issue 49).
        settled.await;
        let detached_turns = left.iter().filter(|l| l.detached).count();
        let stopped_turns = left.iter().filter(|l| l.stopped).count();
        let moved = handles.iter().map(|h| h.key().clone()).collect();
        let summary = self
            .end_sessions(
                reason.into(),
                Some(restart_expected_ms.unwrap_or(0)),
                handles,
                stopped_turns,
            )
            .await?;
        Ok(HandoverSummary {
            moved,
            detached_turns,
            stopped_turns,
            notes: summary.notes,
            closed: summary.closed,
        })
    }
}

impl Gateway {
    /// Waits until the session `key` is open here (a request took it over) or its stored
    /// session `id` looks free of another writer, at most until `until`.
    async fn until_free(&self, key: &SessionId, id: &SessionId, until: Instant) {
        let mut pause = Duration::from_millis(2);
        while Instant::now() < until {
            if self.session(key).is_some() || !matches!(self.still_held(id).await, Ok(true)) {
                return;
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(FREE_PAUSE);
        }
    }

    /// The open sessions' handles, but those in `known`.
    fn open_handles(&self, known: &[SessionHandle]) -> Vec<SessionHandle> {
        let known: HashSet<&SessionId> = known.iter().map(SessionHandle::key).collect();
        self.table()
            .values()
            .filter(|handle| !handle.has_ended() && !known.contains(handle.key()))
            .cloned()
            .collect()
    }

    /// Waits until no session is being opened, at most `budget`.
    async fn openings_done(&self, budget: Duration) {
        let until = tokio::time::Instant::now() + budget;
        while self.inner.opening.load(Ordering::Acquire) > 0 && tokio::time::Instant::now() < until
        {
            // An open ends within its own bounded steps; nothing signals it, so look again soon.
            tokio::time::sleep(OPENING_PAUSE).await;
        }
    }
}

/// How many handed-over sessions a successor opens at once in the background adoption (requests
/// have [`OPENING_FOR_REQUESTS`] places of their own, so a request never waits behind it):
/// opening a stored session reads and decodes its whole history, and 200 opened at once held
/// seven times the memory of the server that ran them (issue 49, docs/serve.md).
pub const ADOPTING_AT_ONCE: usize = 4;

/// How many sessions moving here a successor opens at once for the requests that wait for
/// them: more than the background's, since each open holds up a client.
pub const OPENING_FOR_REQUESTS: usize = 16;

/// The longest pause between two looks at a handed-over session's lease.
const FREE_PAUSE: Duration = Duration::from_millis(50);

/// How often a hand-over looks whether the sessions being opened have been.
const OPENING_PAUSE: Duration = Duration::from_millis(5);

/// Moves one session out: refuses its new requests, lets the ones queued run, drops a turn
/// that waits for an approval (left stored), and stops a turn still running past `budget`.
async fn move_out(handle: &SessionHandle, budget: Duration) -> Left {
    handle.start_moving();
    let barrier = handle.barrier();
    tokio::pin!(barrier);
    let mut status = handle.watch_status();
    let mut left = Left::default();
    let mut deadline = tokio::time::Instant::now() + budget;
    loop {
        if status.borrow_and_update().activity == Activity::Approval && handle.detach_waiting_turn()
        {
            left.detached = true;
        }
        tokio::select! {
            () = &mut barrier => return left,
            changed = status.changed() => {
                if changed.is_err() {
                    return left;
                }
            }
            () = tokio::time::sleep_until(deadline) => {
                if left.stopped {
                    return left;
                }
                left.stopped = true;
                handle.stop_turn();
                let millis = u64::try_from(budget.as_millis()).unwrap_or(u64::MAX);
                let _ = handle.send(Request::Note(Note::TurnStoppedByDrain { millis }));
                deadline = tokio::time::Instant::now() + budget;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_moving_session_round_trips_its_wire_form() {
        for (key, active, wire) in [("s1", "s1", "s1"), ("s1", "s7", "s1/s7")] {
            let moving = MovingSession {
                key: SessionId::new(key),
                active: SessionId::new(active),
            };
            assert_eq!(moving.to_string(), wire);
            assert_eq!(MovingSession::from(wire), moving);
        }
    }
}
