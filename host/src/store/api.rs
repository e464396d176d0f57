//! The session store interface (issue 14 item 1): what a gateway needs from a store, whatever
//! keeps the bytes. Two backends implement it: [`FileStore`](super::FileStore) (the embedded
//! default) and [`PgStore`](super::PgStore) (PostgreSQL, shared by several nodes).
//!
//! A session is written through one [`SessionWriter`] at a time, which holds the session's
//! lease: an advisory file lock for the file store, a lease row with an expiry and a fencing
//! token for PostgreSQL. Every write is durable before it returns, and appends of many sessions
//! arriving together are committed together (group commit, issue 11 item 5).

use std::collections::hash_map::RandomState;
use std::collections::VecDeque;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use hookline_messages::model::{UsageByModel, UsageTotals};
use hookline_messages::prompt::PromptMode;
use hookline_messages::record::{ApprovalRecord, ArchiveEntry, Decider, Record};
use hookline_messages::session::{ApprovalMode, SessionId, SessionInfo};
use serde::{Deserialize, Deserializer, Serialize};

use super::keys::{Claimed, IdempotencyKey, KeyClaim, KeyOutcome};
use super::StoreError;

/// What a new session starts with; the store allocates its id (unique in the store, across
/// processes and nodes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewSession {
    /// The workspace root directory, as the host resolved it.
    pub workspace_root: String,
    /// The session's approval mode.
    pub approval_mode: ApprovalMode,
    /// The model the session asks for (`/model`, `"model"` at open), if one was chosen.
    pub model: Option<String>,
    /// The session's default turn mode (`/mode`), if one was chosen.
    pub mode: Option<PromptMode>,
    /// Who opened it (`hookline serve` with principals, issue 48); none when nobody was named.
    pub owner: Option<SessionOwner>,
}

/// Who a session belongs to (issue 48, docs/serve.md "Auth"): the tenant and the principal that
/// opened it. Stored with the session's facts, so every node and a restart know it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionOwner {
    /// The tenant.
    pub tenant: String,
    /// The principal: an API key's id, `jwt:<subject>`, or `token` (the `--token-file` admin).
    pub principal: String,
}

/// What a session is, beyond its records: the facts a resume restores (issue 26), on any node.
/// Stored as JSON with the same keys as [`SessionInfo`] plus the optional ones, so facts written
/// before `model` and `mode` existed still read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionFacts {
    /// The workspace root directory, as the host resolved it.
    pub workspace_root: String,
    /// The session's id.
    pub session_id: SessionId,
    /// The approval mode as last set (at open or by `/approvals`). A stored value this version
    /// cannot read, or none at all, reads as [`ApprovalMode::STRICTEST`]: a policy is never
    /// relaxed by what nobody set.
    #[serde(default = "strictest", deserialize_with = "approval_mode_or_strictest")]
    pub approval_mode: ApprovalMode,
    /// The model the session asks for, if one was chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The session's default turn mode, if one was chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<PromptMode>,
    /// Who opened it, if anybody was named (issue 48).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<SessionOwner>,
}

impl SessionFacts {
    /// The facts of a session just created as `new` with id `session_id`.
    pub fn new(session_id: SessionId, new: NewSession) -> Self {
        Self {
            workspace_root: new.workspace_root,
            session_id,
            approval_mode: new.approval_mode,
            model: new.model,
            mode: new.mode,
            owner: new.owner,
        }
    }

    /// What session hooks see of the session (SPEC P2.1).
    pub fn info(&self) -> SessionInfo {
        SessionInfo {
            workspace_root: self.workspace_root.clone(),
            session_id: self.session_id.clone(),
            approval_mode: self.approval_mode,
        }
    }
}

fn strictest() -> ApprovalMode {
    ApprovalMode::STRICTEST
}

/// Any string: a name this version does not know is the strictest mode, never an error that
/// would leave the session unreadable and never a looser default.
fn approval_mode_or_strictest<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<ApprovalMode, D::Error> {
    let name = Option::<String>::deserialize(deserializer)?;
    Ok(name
        .as_deref()
        .and_then(ApprovalMode::from_name)
        .unwrap_or(ApprovalMode::STRICTEST))
}

/// A session as stored: facts, records, archive, and any torn tail repaired on open. What
/// [`SessionStore::read`] returns (inspection, the archive pages, replay); opening a session for
/// writing returns an [`OpenedSession`], without the archive.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredSession {
    /// The session's facts (the latest written).
    pub facts: SessionFacts,
    /// The stored records, in order (what the next request is built from).
    pub records: Vec<Record>,
    /// The archive, in order.
    pub archive: Vec<ArchiveEntry>,
    /// One English sentence per torn or uncommitted tail cut off when the session was opened
    /// (always empty for PostgreSQL, whose transactions leave no tails).
    pub repaired: Vec<String>,
}

impl StoredSession {
    /// User turns the session has run: the user messages in its archive (compaction folds
    /// records, never the archive, so the count survives it).
    pub fn user_turns(&self) -> u64 {
        count_user_turns(&self.archive)
    }

    /// Token usage over the model calls in its archive.
    pub fn usage(&self) -> UsageTotals {
        self.summary().usage
    }

    /// Token usage per model over the archived model responses that name their model.
    pub fn usage_by_model(&self) -> UsageByModel {
        self.summary().usage_by_model
    }

    /// What an open reads of the archive ([`ArchiveSummary`]), folded over the whole of it.
    pub fn summary(&self) -> ArchiveSummary {
        let mut summary = ArchiveSummary::default();
        for entry in &self.archive {
            summary.add_ref(entry);
        }
        summary
    }
}

/// One page of a session's archive ([`SessionStore::archive_page`]): the entries from an offset,
/// with the archive's length and the user turns before the page (so a page can number its
/// turns without the entries before it).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ArchivePage {
    /// Entries in the whole archive.
    pub total: u64,
    /// User messages before the page's first entry.
    pub turns_before: u64,
    /// The page's entries, in order.
    pub entries: Vec<ArchiveEntry>,
}

impl ArchivePage {
    /// The page of `archive` from `offset` (clamped to its length), at most `limit` entries.
    pub fn of(archive: &[ArchiveEntry], offset: usize, limit: usize) -> Self {
        let offset = offset.min(archive.len());
        Self {
            total: archive.len() as u64,
            turns_before: count_user_turns(&archive[..offset]),
            entries: archive[offset..].iter().take(limit).cloned().collect(),
        }
    }
}

/// The approval an operator answered, when `entry` is one: what `GET /v1/sessions/{id}` lists
/// as `answered` (issue 48: each names who answered). Approvals the policy or a guard decided are
/// not answers.
pub fn operator_answer(entry: ArchiveEntry) -> Option<ApprovalRecord> {
    match entry {
        ArchiveEntry::Approval(record) if record.decided_by == Decider::Operator => Some(record),
        _ => None,
    }
}

/// The last approvals an operator answered ([`operator_answer`]), folded one archive entry at a
/// time in archive order and holding at most `keep` of them
/// ([`SessionStore::answered_approvals`]).
#[derive(Clone, Debug, PartialEq)]
pub struct AnsweredApprovals {
    keep: usize,
    last: VecDeque<ApprovalRecord>,
}

impl AnsweredApprovals {
    /// Keeps the last `keep` answers folded in.
    pub fn new(keep: usize) -> Self {
        Self {
            keep,
            last: VecDeque::with_capacity(keep.min(64)),
        }
    }

    /// The last `keep` answers in `archive`, oldest first.
    pub fn of(archive: impl IntoIterator<Item = ArchiveEntry>, keep: usize) -> Vec<ApprovalRecord> {
        let mut answered = Self::new(keep);
        archive.into_iter().for_each(|entry| answered.add(entry));
        answered.into_vec()
    }

    /// Folds in the archive's next entry.
    pub fn add(&mut self, entry: ArchiveEntry) {
        if self.keep == 0 {
            return;
        }
        if let Some(record) = operator_answer(entry) {
            if self.last.len() == self.keep {
                self.last.pop_front();
            }
            self.last.push_back(record);
        }
    }

    /// The answers kept, oldest first.
    pub fn into_vec(self) -> Vec<ApprovalRecord> {
        self.last.into()
    }
}

/// A session opened for writing ([`SessionStore::open`]): its facts, records and any repair, and
/// of its archive only what a conversation needs ([`ArchiveSummary`]). The archive grows with
/// every turn and is never sent to a model (issue 49 item 5: a successor taking 200 sessions
/// over held each whole archive for a moment), so the store folds it entry by entry as it reads
/// it and keeps none of it.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenedSession {
    /// The session's facts (the latest written).
    pub facts: SessionFacts,
    /// The stored records, in order (what the next request is built from).
    pub records: Vec<Record>,
    /// What the conversation needs of the archive.
    pub summary: ArchiveSummary,
    /// One English sentence per torn or uncommitted tail cut off when the session was opened
    /// (always empty for PostgreSQL, whose transactions leave no tails).
    pub repaired: Vec<String>,
}

/// What opening a session needs of its archive, folded one entry at a time in archive order
/// ([`ArchiveSummary::add`]): the entry count (where the next entry goes), the user turns, the
/// usage, and the last turn's entries when it did not finish (all that
/// [`open_turn`](hookline_messages::cut_off::open_turn) reads of an archive). Folding an
/// archive gives what counting the whole of it gives (tests/store_summary.rs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ArchiveSummary {
    /// Entries in the archive.
    pub entries: u64,
    /// User turns run: the user messages in the archive.
    pub user_turns: u64,
    /// Token usage over the archived model responses.
    pub usage: UsageTotals,
    /// The same, per model, over the responses that name their model.
    pub usage_by_model: UsageByModel,
    /// The last turn's entries from its user message on, when no `turn-finished` follows it
    /// (a turn a crash, a lost lease or a replacement cut off); empty otherwise. Held while
    /// folding one turn at a time, so at most one turn's entries.
    pub last_turn: Vec<ArchiveEntry>,
}

impl ArchiveSummary {
    /// Folds in the archive's next entry.
    pub fn add(&mut self, entry: ArchiveEntry) {
        if self.count(&entry) {
            self.last_turn.push(entry);
        }
    }

    /// [`ArchiveSummary::add`] for a borrowed entry (cloned only when the last turn keeps it).
    pub fn add_ref(&mut self, entry: &ArchiveEntry) {
        if self.count(entry) {
            self.last_turn.push(entry.clone());
        }
    }

    /// Counts `entry`; whether the last turn keeps it.
    fn count(&mut self, entry: &ArchiveEntry) -> bool {
        self.entries += 1;
        match entry {
            ArchiveEntry::UserMessage { .. } => {
                self.user_turns += 1;
                // A new turn: the one before it is no longer the last.
                self.last_turn.clear();
                return true;
            }
            ArchiveEntry::TurnFinished { .. } => {
                self.last_turn.clear();
                return false;
            }
            ArchiveEntry::ModelResponse { usage, model, .. } => {
                self.usage.add(usage);
                if let Some(model) = model {
                    self.usage_by_model.add(model, usage);
                }
            }
            _ => {}
        }
        // Only a turn that started (its user message is kept) collects its steps.
        !self.last_turn.is_empty()
    }
}

impl FromIterator<ArchiveEntry> for ArchiveSummary {
    fn from_iter<I: IntoIterator<Item = ArchiveEntry>>(entries: I) -> Self {
        let mut summary = Self::default();
        for entry in entries {
            summary.add(entry);
        }
        summary
    }
}

/// User messages among `archive`'s entries.
pub(crate) fn count_user_turns(archive: &[ArchiveEntry]) -> u64 {
    archive
        .iter()
        .filter(|e| matches!(e, ArchiveEntry::UserMessage { .. }))
        .count() as u64
}

/// Who holds a stored session ([`SessionStore::holder`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Holder {
    /// Not stored, released, held by this store, or a store that cannot tell.
    Unknown,
    /// Held by a writer known dead (its liveness lock is gone) or whose lease expired: it may be
    /// taken over now.
    Gone,
    /// Held by another writer that runs.
    Alive {
        /// Its name and how long its lease lasts, as [`StoreError::Leased`] says it.
        holder: String,
        /// Whether it runs under this store's own node name: a predecessor of this process on
        /// the same node, whose sessions move here when it is replaced (issue 49).
        same_node: bool,
    },
}

/// A store of sessions. Cheap to share (`Arc<dyn SessionStore>`); every method may be called
/// from many tasks at once.
#[async_trait]
pub trait SessionStore: Send + Sync + 'static {
    /// Allocates an id, writes the facts and `records`, and returns the writer (which holds the
    /// session's lease).
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot write.
    async fn create(
        &self,
        new: NewSession,
        records: &[Record],
    ) -> Result<(SessionFacts, Box<dyn SessionWriter>), StoreError>;

    /// Opens a stored session for writing: takes its lease (at once when it was released or has
    /// expired, else [`StoreError::Leased`]); `None` when the store does not know the id. The
    /// archive is folded into an [`ArchiveSummary`] as it is read, never held whole.
    ///
    /// # Errors
    /// [`StoreError::Leased`] when another writer holds the session; other [`StoreError`]s when
    /// the store cannot read or repair it.
    async fn open(
        &self,
        id: &SessionId,
    ) -> Result<Option<(OpenedSession, Box<dyn SessionWriter>)>, StoreError>;

    /// Reads a stored session without taking it (inspection, API reads). Never modifies the
    /// store: a torn tail is left for the writer's open to repair, and is not returned.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot be read.
    async fn read(&self, id: &SessionId) -> Result<Option<StoredSession>, StoreError>;

    /// One page of a stored session's archive, without taking it (`GET
    /// /v1/sessions/{id}/archive`): from entry `offset`, at most `limit` entries; `None` when
    /// the store does not know the id. The default reads the whole session
    /// ([`SessionStore::read`]); the file store keeps only the page as it reads the archive (an
    /// archive only grows, and a client pages through a long one).
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot be read.
    async fn archive_page(
        &self,
        id: &SessionId,
        offset: usize,
        limit: usize,
    ) -> Result<Option<ArchivePage>, StoreError> {
        Ok(self
            .read(id)
            .await?
            .map(|stored| ArchivePage::of(&stored.archive, offset, limit)))
    }

    /// The last `keep` approvals an operator answered in a stored session ([`operator_answer`]),
    /// oldest first, without taking it (`GET /v1/sessions/{id}`'s `answered`); `None` when the
    /// store does not know the id. The default reads the whole session ([`SessionStore::read`]);
    /// the file store folds the archive keeping only those ([`AnsweredApprovals`]), PostgreSQL
    /// fetches only those rows, newest first, until it has `keep`.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot be read.
    async fn answered_approvals(
        &self,
        id: &SessionId,
        keep: usize,
    ) -> Result<Option<Vec<ApprovalRecord>>, StoreError> {
        Ok(self
            .read(id)
            .await?
            .map(|stored| AnsweredApprovals::of(stored.archive, keep)))
    }

    /// Every stored session id, sorted.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot be listed.
    async fn sessions(&self) -> Result<Vec<SessionId>, StoreError>;

    /// Whether the store answers now (`/readyz`): a round trip to the database for PostgreSQL.
    /// The default says yes: a local store's directory is checked by its caller.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot be reached.
    async fn ping(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Who holds session `id` as far as the store can tell (issue 40 item 2): a node's request
    /// for a session it does not have open takes it over at once when its holder is gone, and
    /// answers `session-leased` naming a holder that runs. The default knows nothing
    /// ([`Holder::Unknown`]: a local store's sessions are opened with `/resume` only).
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot be read.
    async fn holder(&self, id: &SessionId) -> Result<Holder, StoreError> {
        let _ = id;
        Ok(Holder::Unknown)
    }

    /// Whether another writer holds the lease of session `id` now, for a store whose
    /// [`SessionStore::holder`] cannot tell (issue 49: the file store tries its lock without
    /// waiting and gives it back at once). The default: no.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot be read.
    async fn lease_held(&self, id: &SessionId) -> Result<bool, StoreError> {
        let _ = id;
        Ok(false)
    }

    /// Claims an idempotency key of session `id` (issue 22 item 3, [`keys`](super::keys)):
    /// atomically, [`Claimed::New`] (the key is now `claim.owner`'s, running) when the session
    /// has no entry for it or only an expired one, else [`Claimed::Existing`] with the entry.
    /// A new claim forgets expired entries, and the oldest finished ones past
    /// `claim.max_keys`. Called by the node that holds the session; not fenced (a stale node's
    /// request fails on its first write, and then forgets its claim).
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot read or write the key (nothing is claimed).
    async fn claim_key(&self, id: &SessionId, claim: &KeyClaim) -> Result<Claimed, StoreError>;

    /// Settles a key `owner` claimed and still runs: stores the answer (`Some`) or forgets the
    /// key (`None`, a request refused before it ran, so a retry runs it). Returns whether the
    /// entry was `owner`'s; an entry another claim took (after it expired) is left alone.
    ///
    /// # Errors
    /// [`StoreError`] when the store cannot write it.
    async fn settle_key(
        &self,
        id: &SessionId,
        key: &IdempotencyKey,
        owner: &str,
        outcome: Option<&KeyOutcome>,
    ) -> Result<bool, StoreError>;
}

/// The one writer of one session. Dropping it without [`SessionWriter::release`] frees the
/// lease too for the file store (the lock goes with the file handle); a PostgreSQL lease then
/// stays until it expires, so drain should release.
#[async_trait]
pub trait SessionWriter: Send + 'static {
    /// The session this writer writes.
    fn session_id(&self) -> &SessionId;

    /// Appends records and archive entries atomically (both or neither); returns only after
    /// they are durable (synced / committed). Many sessions' appends arriving together are
    /// committed together (group commit).
    ///
    /// # Errors
    /// [`StoreError::LeaseLost`] when another writer took the session over (nothing written);
    /// other [`StoreError`]s when the write failed (nothing of it is kept).
    async fn append(
        &mut self,
        records: &[Record],
        archive: &[ArchiveEntry],
    ) -> Result<(), StoreError>;

    /// Replaces every stored record (compaction) atomically, with `archive` appended in the same
    /// commit.
    ///
    /// # Errors
    /// As [`SessionWriter::append`]; on an error the old records stay.
    async fn replace_records(
        &mut self,
        records: &[Record],
        archive: &[ArchiveEntry],
    ) -> Result<(), StoreError>;

    /// Updates the session's facts (`/approvals`, `/model`, `/mode`). The id in `facts` must be
    /// this writer's session.
    ///
    /// # Errors
    /// As [`SessionWriter::append`].
    async fn set_facts(&mut self, facts: &SessionFacts) -> Result<(), StoreError>;

    /// Gives the lease up (drain); the writer is gone after.
    ///
    /// # Errors
    /// [`StoreError`] when the release could not be written (the lease then expires by itself).
    async fn release(self: Box<Self>) -> Result<(), StoreError>;
}

/// A fresh session id: `s` and 16 hex digits from the time, the process and a per-process
/// counter, mixed by a randomly keyed hasher. Safe as a file name (`validate_session_id`). The
/// backends claim it atomically (a new directory, a primary key) and try again on a clash.
pub fn fresh_session_id() -> SessionId {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut hasher = RandomState::new().build_hasher();
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(nanos);
    hasher.write_u32(std::process::id());
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    SessionId::from(format!("s{:016x}", hasher.finish()))
}

/// How many fresh ids a backend tries before giving up ([`StoreError::NoFreeId`]).
pub const ID_TRIES: u32 = 16;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::validate_session_id;

    #[test]
    fn fresh_ids_are_file_names_and_distinct() {
        let ids: std::collections::HashSet<_> = (0..1000).map(|_| fresh_session_id()).collect();
        assert_eq!(ids.len(), 1000);
        for id in ids {
            assert_eq!(validate_session_id(id.as_str()), Ok(()));
        }
    }
}
