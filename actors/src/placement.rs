//! Where sessions were placed by their creator rather than by their id's hash
//! ([`Pipeline::place_here`](crate::Pipeline::place_here)).
//!
//! A server that serves every shard's thread opens a session on the thread its request arrived
//! on, so its requests, turns and hook calls make no thread hop (issue 47). The session keeps
//! the id its store gives it (`s1`, `s2`, ... one after another); the shard it was opened on is
//! written here, and every way of naming the session by id ([`Pipeline::shard_of`] and all that
//! use it) finds it here until the pipeline forgets the session. A session named only by id
//! after that (a resume, a replay) goes to its id's hash, as any other.
//!
//! [`Pipeline::shard_of`]: crate::Pipeline::shard_of

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::RwLock;

use hookline_messages::session::SessionId;

/// The sessions placed on a shard of their creator's choosing, while the pipeline knows them.
#[derive(Debug, Default)]
pub(crate) struct Placements {
    /// How many sessions `shards` holds: a pipeline that places none (an in-process host, the
    /// bench) looks a session up without taking the lock.
    count: AtomicUsize,
    shards: RwLock<HashMap<SessionId, usize>>,
}

impl Placements {
    /// The shard `session` was placed on, if it was.
    pub(crate) fn get(&self, session: &SessionId) -> Option<usize> {
        if self.count.load(Ordering::Acquire) == 0 {
            return None;
        }
        // A poisoned lock held a map whose entries are each whole: reading it is sound.
        let shards = self
            .shards
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        shards.get(session).copied()
    }

    /// Places `session` on `shard`, unless the pipeline already knows it elsewhere (a session's
    /// calls must all go to one shard): returns the shard it is on.
    pub(crate) fn place(&self, session: &SessionId, shard: usize) -> usize {
        let mut shards = self
            .shards
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let placed = *shards.entry(session.clone()).or_insert(shard);
        self.count.store(shards.len(), Ordering::Release);
        placed
    }

    /// Forgets where `session` was placed.
    pub(crate) fn forget(&self, session: &SessionId) {
        if self.count.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut shards = self
            .shards
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        shards.remove(session);
        self.count.store(shards.len(), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_stays_where_it_was_first_placed_until_forgotten() {
        let placements = Placements::default();
        let s1 = SessionId::new("s1");
        assert_eq!(placements.get(&s1), None);
        assert_eq!(placements.place(&s1, 1), 1);
        // Placed again elsewhere while known: it stays where its calls already go.
        assert_eq!(placements.place(&s1, 0), 1);
        assert_eq!(placements.get(&s1), Some(1));
        assert_eq!(placements.get(&SessionId::new("s2")), None);
        placements.forget(&s1);
        assert_eq!(placements.get(&s1), None);
        assert_eq!(placements.place(&s1, 0), 0);
    }
}
