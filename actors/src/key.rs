//! [`SessionKey`]: a session opened on a pipeline ([`Pipeline::open_session`]), carrying its
//! shard and its slot in the shard's dense session table, so its calls go to the shard and are
//! admitted without hashing the session id (issue 23). [`SessionRef`] is what the call methods
//! take: a plain [`SessionId`] (found by hashing, as before) or a key.
//!
//! [`Pipeline::open_session`]: crate::Pipeline::open_session

use hookline_messages::session::SessionId;

/// A session opened on one pipeline: its id, its shard and its slot there. Calls made with it
/// skip the shard hash and the session table's hash; a key whose slot was freed
/// ([`Pipeline::forget_session`](crate::Pipeline::forget_session)) or that belongs to another
/// pipeline still works, found by its id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionKey {
    id: SessionId,
    pipeline: u64,
    shard: u32,
    slot: u32,
}

impl SessionKey {
    pub(crate) fn new(id: SessionId, pipeline: u64, shard: u32, slot: u32) -> Self {
        Self {
            id,
            pipeline,
            shard,
            slot,
        }
    }

    /// The session's id.
    pub fn id(&self) -> &SessionId {
        &self.id
    }
}

/// Where a call goes, as the call methods of [`Pipeline`](crate::Pipeline) take it: a session id,
/// or a [`SessionKey`] (no hashing), by value or by reference.
pub trait SessionRef {
    /// The session's id.
    fn session_id(&self) -> &SessionId;
    /// The session's id, owned (moved when given by value).
    fn into_session_id(self) -> SessionId;
    /// A key's pipeline, shard and slot.
    #[doc(hidden)]
    fn placed(&self) -> Option<(u64, u32, u32)> {
        None
    }
}

impl SessionRef for SessionId {
    fn session_id(&self) -> &SessionId {
        self
    }

    fn into_session_id(self) -> SessionId {
        self
    }
}

impl SessionRef for SessionKey {
    fn session_id(&self) -> &SessionId {
        &self.id
    }

    fn into_session_id(self) -> SessionId {
        self.id
    }

    fn placed(&self) -> Option<(u64, u32, u32)> {
        Some((self.pipeline, self.shard, self.slot))
    }
}

impl<T: SessionRef + Clone> SessionRef for &T {
    fn session_id(&self) -> &SessionId {
        (**self).session_id()
    }

    fn into_session_id(self) -> SessionId {
        self.session_id().clone()
    }

    fn placed(&self) -> Option<(u64, u32, u32)> {
        (**self).placed()
    }
}
