//! The approvals answered in a session, as `GET /v1/sessions/{id}` shows them (`answered`, with
//! who answered: issue 48). They come from the session's archive as stored, through
//! [`SessionStore::answered_approvals`](hookline_host::store::SessionStore::answered_approvals),
//! which never holds the archive: the file store folds it frame by frame keeping the last
//! [`MAX_ANSWERED`], PostgreSQL fetches only those rows (issue 49 follow-ups). The read holds
//! little but still goes over the archive (the file store decodes every frame, PostgreSQL filters
//! every row of the session), so the cache stays as it was: the list is kept per session and read
//! again only when the session's status moved (a turn, a record, an approval asked or answered)
//! or after [`FRESH_FOR`], not on every call: a dashboard polling a long session costs the store
//! one read a second at most.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use hookline_host::gateway::{Activity, Gateway, SessionStatus};
use hookline_messages::record::ApprovalRecord;
use hookline_messages::session::SessionId;

/// The most answered approvals shown.
pub(crate) const MAX_ANSWERED: usize = 50;

/// How long a kept list is shown without reading the archive again, however still the status.
const FRESH_FOR: Duration = Duration::from_secs(1);

/// The most sessions whose lists are kept (the map is emptied past it).
const MAX_KEPT: usize = 4096;

/// What the status said when a list was read: a change reads it again.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Moment {
    records: usize,
    turns: u64,
    activity: Activity,
    last_activity_ms: u64,
}

impl Moment {
    fn of(status: &SessionStatus) -> Self {
        Self {
            records: status.records,
            turns: status.turns,
            activity: status.activity,
            last_activity_ms: status.last_activity_ms,
        }
    }
}

struct Kept {
    moment: Moment,
    read_at: Instant,
    answered: Arc<[ApprovalRecord]>,
}

/// The kept lists, by the stored session's id.
#[derive(Default)]
pub(crate) struct AnsweredCache {
    kept: Mutex<HashMap<SessionId, Kept>>,
}

impl AnsweredCache {
    /// The last approvals an operator answered in the session of `status` (none when the store
    /// does not answer within `wait`).
    pub(crate) async fn of(
        &self,
        gateway: &Gateway,
        status: &SessionStatus,
        wait: Duration,
    ) -> Arc<[ApprovalRecord]> {
        let id = status.session_id.as_ref().unwrap_or(&status.key);
        let moment = Moment::of(status);
        if let Some(kept) = self.lock().get(id) {
            if kept.moment == moment && kept.read_at.elapsed() < FRESH_FOR {
                return kept.answered.clone();
            }
        }
        let store = gateway.session_store();
        let read = tokio::time::timeout(wait, store.answered_approvals(id, MAX_ANSWERED)).await;
        let Ok(Ok(Some(answered))) = read else {
            return Arc::from(Vec::new());
        };
        let answered: Arc<[ApprovalRecord]> = answered.into();
        let mut kept = self.lock();
        if kept.len() >= MAX_KEPT {
            kept.clear();
        }
        kept.insert(
            id.clone(),
            Kept {
                moment,
                read_at: Instant::now(),
                answered: answered.clone(),
            },
        );
        answered
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Kept>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
