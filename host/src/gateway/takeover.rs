//! A request for a session this node does not have open (issue 40 item 2): when the store says
//! its holder is gone (known dead, or its lease expired), the session is resumed here at once,
//! with the same checks as `/resume`, and the request is answered as if the session had always
//! been here; when its holder runs, the request is refused naming it (`StoreError::Leased`).
//!
//! Requests for one session that arrive together take it over once: the first resumes it, the
//! others wait for that and then find it open.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use hookline_messages::session::SessionId;

use super::{Gateway, RequestError, SessionHandle};
use crate::state::HostError;
use crate::store::{Holder, StoreError};

/// The takeovers under way, by session: one lock each.
#[derive(Default)]
pub(super) struct Takeovers(Mutex<HashMap<SessionId, Arc<tokio::sync::Mutex<()>>>>);

impl Takeovers {
    fn lock_for(&self, key: &SessionId) -> Arc<tokio::sync::Mutex<()>> {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.entry(key.clone()).or_default().clone()
    }

    /// Forgets `key`'s lock once nobody else waits on it.
    fn done(&self, key: &SessionId, lock: Arc<tokio::sync::Mutex<()>>) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        // The map's reference and ours: nobody else holds or waits for it.
        if Arc::strong_count(&lock) <= 2 {
            map.remove(key);
        }
    }
}

impl Gateway {
    /// The open session `key`, or the stored session taken over and resumed here when its
    /// holder is gone ([`Holder::Gone`]).
    ///
    /// # Errors
    /// [`RequestError::Unknown`] when it is neither open here nor held by a writer that is gone
    /// (never stored, released, or a store without leases: `/resume` opens those);
    /// [`HostError::Store`] with [`StoreError::Leased`] when a writer that runs holds it;
    /// [`RequestError::Moving`] on a gateway handing its sessions over; as [`Gateway::resume`]
    /// when resuming it fails.
    pub async fn session_or_take_over(
        &self,
        key: &SessionId,
    ) -> Result<SessionHandle, RequestError> {
        self.open_or_take_over(key, Queue::Request).await
    }

    /// [`Gateway::session_or_take_over`], a session moving here opened in `queue`'s turn.
    pub(super) async fn open_or_take_over(
        &self,
        key: &SessionId,
        queue: Queue,
    ) -> Result<SessionHandle, RequestError> {
        if let Some(handle) = self.session(key).filter(|h| !h.has_ended()) {
            return Ok(handle);
        }
        let lock = self.inner.takeovers.lock_for(key);
        let result = {
            let _taking = lock.lock().await;
            self.take_over(key, queue).await
        };
        self.inner.takeovers.done(key, lock);
        result
    }

    async fn take_over(
        &self,
        key: &SessionId,
        queue: Queue,
    ) -> Result<SessionHandle, RequestError> {
        // Another request for it may have taken it over while this one waited.
        if let Some(handle) = self.session(key).filter(|h| !h.has_ended()) {
            return Ok(handle);
        }
        if self.is_handing_over() {
            // Issue 49: a server handing its sessions over takes none; the successor does.
            return Err(RequestError::Moving);
        }
        let store = |e| RequestError::Host(HostError::Store(e));
        let holder = self.session_store().holder(key).await.map_err(store)?;
        if let Some(until) = self.moving_here(key, &holder).await? {
            tracing::info!(session = %key, "waiting for a session that moves here from the server this one replaces");
            return self.resume_when_free(key, until, queue).await;
        }
        match holder {
            // A session that ended here and is not yet forgotten answers as it did before.
            Holder::Unknown if self.session(key).is_some() => self
                .session(key)
                .ok_or_else(|| RequestError::Unknown(key.clone())),
            // Handed over to this server and not taken over yet when the wait for the
            // predecessor ended (a slow takeover under load): it is still this server's to open.
            Holder::Unknown if self.inner.succession.adopted(key).is_some() => {
                self.resume_when_free(key, Instant::now(), queue).await
            }
            Holder::Unknown => Err(RequestError::Unknown(key.clone())),
            Holder::Alive { holder, .. } => Err(store(StoreError::Leased {
                session: key.clone(),
                holder,
            })),
            Holder::Gone => {
                tracing::info!(session = %key, "taking over a session whose holder is gone");
                self.resume(key).await
            }
        }
    }
}

/// Whose turn opens a session moving here (issue 49): requests have
/// [`OPENING_FOR_REQUESTS`](super::OPENING_FOR_REQUESTS) places, the background adoption
/// [`ADOPTING_AT_ONCE`](super::ADOPTING_AT_ONCE).
#[derive(Clone, Copy, Debug)]
pub(super) enum Queue {
    /// A request for the session.
    Request,
    /// The successor's adoption of what the predecessor named, in the background.
    Background,
}

/// The longest pause between two tries for a lease that is moving here.
const MOVING_PAUSE: Duration = Duration::from_millis(50);

impl Gateway {
    /// When a predecessor of this server may still hold `key` (issue 49): the end of the wait
    /// for it, if this session is moving here: one the predecessor said it hands over, one it
    /// holds on the file store (the lock of another process), or on PostgreSQL one held under
    /// this node's own name. A holder that is gone is taken over at once, as always.
    async fn moving_here(
        &self,
        key: &SessionId,
        holder: &Holder,
    ) -> Result<Option<Instant>, RequestError> {
        let Some(until) = self.inner.succession.window() else {
            return Ok(None);
        };
        // A session the predecessor named moves here whoever holds it now (its node name may
        // have changed with the replacement).
        let adopted = self.inner.succession.adopted(key).is_some();
        let moving = match holder {
            Holder::Gone => false,
            Holder::Alive { same_node, .. } => *same_node || adopted,
            Holder::Unknown => {
                adopted
                    || self
                        .session_store()
                        .lease_held(key)
                        .await
                        .map_err(|e| RequestError::Host(HostError::Store(e)))?
            }
        };
        Ok(moving.then_some(until))
    }

    /// Resumes `key` as soon as its lease is free, looking again (with a growing pause) while
    /// another writer holds it, until `until`; then the store's `Leased` answers. The look is
    /// the store's cheap one ([`holder`](crate::store::SessionStore::holder), [`lease_held`](crate::store::SessionStore::lease_held)): a resume,
    /// which builds a conversation, is tried only once the lease looks free.
    async fn resume_when_free(
        &self,
        key: &SessionId,
        until: Instant,
        queue: Queue,
    ) -> Result<SessionHandle, RequestError> {
        // After `/new` and the like, the key's conversation had another session active there.
        let id = self
            .inner
            .succession
            .adopted(key)
            .unwrap_or_else(|| key.clone());
        let mut pause = Duration::from_millis(2);
        loop {
            let result = if self.still_held(&id).await? {
                None
            } else {
                // Opening a moving session reads its whole history: a few at a time (issue 49,
                // the successor's memory); requests and the background adoption each have
                // their places, so a request never waits behind the adoption.
                let _place = self.inner.succession.place(queue).await;
                match self.resume_as(key, &id).await {
                    Err(RequestError::Host(HostError::Store(StoreError::Leased { .. }))) => None,
                    result => Some(result),
                }
            };
            if let Some(result) = result {
                if result.is_ok() {
                    // Taken over: from here it is a session of this server like any other.
                    self.inner.succession.taken(key);
                }
                return result;
            }
            if Instant::now() + pause >= until {
                let _place = self.inner.succession.place(queue).await;
                return self.resume_as(key, &id).await;
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(MOVING_PAUSE);
        }
    }

    /// Resumes the stored session `id` known by `key` (the same but after `/new` and the like).
    async fn resume_as(
        &self,
        key: &SessionId,
        id: &SessionId,
    ) -> Result<SessionHandle, RequestError> {
        if key == id {
            return self.resume(key).await;
        }
        if let Some(handle) = self.session(key).filter(|h| !h.has_ended()) {
            return Ok(handle);
        }
        self.forget_ended(key);
        self.start_session(
            super::OpenSession::default(),
            Some(id.clone()),
            Some(key.clone()),
        )
        .await
    }

    /// Whether another writer holds `key` now, as far as the store tells without taking it.
    pub(super) async fn still_held(&self, key: &SessionId) -> Result<bool, RequestError> {
        let store = |e| RequestError::Host(HostError::Store(e));
        Ok(
            match self.session_store().holder(key).await.map_err(store)? {
                Holder::Alive { .. } => true,
                Holder::Gone => false,
                Holder::Unknown => self.session_store().lease_held(key).await.map_err(store)?,
            },
        )
    }
}
