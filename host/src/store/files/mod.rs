//! [`FileStore`]: the embedded default [`SessionStore`] (issue 14 item 1, issue 11 item 5).
//!
//! Layout and frames are those of `docs/storage.md`: `sessions/<id>/` holds `meta.log` (the
//! facts), `records.log` and `archive.log`. Beside them:
//! - `commit.log`, frames of [`CommitPoint`]s: after every append the lengths of `records.log`
//!   and `archive.log` and a copy of the frames it wrote to them ([`journal`], issue 47), none of
//!   them synced: the batch's one frame in the store journal ([`store_journal`],
//!   `<root>/journal/`) redoes each `commit.log` frame, and is the one `fdatasync` of the batch.
//!   A checkpoint (release, a journal past [`JOURNAL_BOUND`], open, the store journal's
//!   truncation) syncs the data files and replaces `commit.log` by one plain point of the next
//!   generation, which makes the session's store-journal entries stale. Opening trusts the last plain point both logs reach and re-applies every
//!   intact journal frame after it over whatever the unsynced data files hold, so an
//!   acknowledged append survives a crash whole and an unacknowledged one is wholly absent.
//! - `lock`, held with `flock(LOCK_EX)` by the session's one writer: the file store's lease. Two
//!   processes (or two stores in one process) never write one session; a dead process's lock
//!   goes with it.
//! - `keys.log`, the session's idempotency keys ([`keys`]), written by the committer with the
//!   session's appends.
//!
//! An idle open session holds one file descriptor, its `lock`: each commit opens the data files
//! it writes and closes them once they are synced (see [`SessionFiles`]).
//!
//! Group commit: every append goes to one committer thread per store, which takes every append
//! queued (up to [`MAX_BATCH`]), writes their frames, appends one frame to the store journal and
//! syncs it: one `fdatasync` per batch, whatever the number of sessions. Files that still need
//! their own sync (a keyed append's `keys.log`, an append too large for a journal frame) are
//! synced beside it from a few sync threads (started once, kept for the store's life). Each
//! append is acknowledged only after the store-journal frame naming it is synced, so the crash
//! guarantees are those of a single append.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use async_trait::async_trait;
use hookline_messages::record::{ApprovalRecord, ArchiveEntry, Record};
use hookline_messages::session::SessionId;
use rustix::fs::{flock, FlockOperation};
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

use super::api::{
    ArchivePage, NewSession, OpenedSession, SessionFacts, SessionStore, SessionWriter,
    StoredSession, ID_TRIES,
};
use super::keys::{Claimed, IdempotencyKey, KeyClaim, KeyOutcome};
use super::log::{
    encode_records, remove_stale_rewrite, rewrite_path, scan, sync_dir, write_new_file, Scan,
};
use super::{validate_session_id, StoreError, TornReason, TornTail};

const SESSIONS: &str = "sessions";
const RECORDS: &str = "records.log";
const ARCHIVE: &str = "archive.log";
const META: &str = "meta.log";
const COMMITS: &str = "commit.log";
const LOCK: &str = "lock";

/// The most appends one group commit takes.
pub const MAX_BATCH: usize = 1024;
/// Stripes of [`Inner::key_locks`].
const KEY_LOCKS: usize = 16;
/// Commit points kept before `commit.log` is rewritten to one point on open.
const MAX_COMMIT_POINTS: usize = 4096;

/// How a [`FileStore`] commits.
#[derive(Clone, Debug)]
pub struct FileStoreOptions {
    /// Commit many sessions' appends together (default). Off: one append at a time, each with
    /// its own syncs (for comparison).
    pub group_commit: bool,
    /// Do every write on the caller's thread, each append synced before it returns (no
    /// committer thread, no blocking pool). For one conversation, where there is nothing to
    /// group (`Host`, the CLI), and for tests on paused time, where a wait on another thread
    /// would let the clock jump. Off by default.
    pub inline: bool,
    /// Appends waiting for the committer at most; callers wait beyond it (default 4096).
    pub queue: usize,
    /// Threads that issue one batch's syncs concurrently (default 16).
    pub sync_threads: usize,
    /// Copy each append's frames into its `commit.log` frame and sync `commit.log` alone
    /// (default, issue 47). Off: plain commit points, each append syncing all three files (the
    /// format before the journal, for comparison; recovery reads both).
    pub journal: bool,
    /// The store journal's size past which every session with entries in it is checkpointed
    /// and the journal truncated (default [`STORE_JOURNAL_BOUND`], 32 MiB).
    pub store_journal_bound: u64,
}

impl Default for FileStoreOptions {
    fn default() -> Self {
        Self {
            group_commit: true,
            inline: false,
            queue: 4096,
            sync_threads: 16,
            journal: true,
            store_journal_bound: STORE_JOURNAL_BOUND,
        }
    }
}

/// Counters of a store's committer, for tests and benches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommitStats {
    /// Appends committed (acknowledged as durable).
    pub appends: u64,
    /// Commits (batches) made: one sync round for files, one transaction for PostgreSQL.
    pub commits: u64,
}

/// The length of `records.log` and `archive.log` after a committed append; a journal frame
/// when it carries a copy of the append's frames ([`journal`]), a plain point otherwise.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct CommitPoint {
    records: u64,
    archive: u64,
    /// Set by a compaction: `records.log.rewrite` of this length and CRC-32C is the new
    /// `records.log` (renamed on open when a crash came before the rename).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replace: Option<Rewrite>,
    /// Set when the append carried idempotency keys (a claim riding with the records): the
    /// number of the last `keys.log` frame it wrote. The point is committed only when
    /// `keys.log` holds that frame, so records never outlive the claim of the request that
    /// stored them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    keys: Option<u64>,
    /// Issue 47: the append's frames, so that only `commit.log` is synced before it is
    /// acknowledged; the data files are synced by the next checkpoint. Absent in a plain point
    /// (a creation's, a checkpoint's, a compaction's, or any point of an older version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    journal: Option<journal::Journal>,
    /// The generation of `commit.log` (issue 47, the store journal): set in the point that
    /// starts the file (a creation's, a checkpoint's, a compaction's, an open's rewrite), one
    /// more at each atomic replace; absent (0) in a store written before. A store journal's
    /// entry is re-applied only to the generation it was written for ([`store_journal`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    generation: Option<u64>,
}

impl CommitPoint {
    /// A plain point: the data files end at `records` and `archive` (a creation's, a
    /// checkpoint's), with no compaction, keys or journal copy.
    fn plain(records: u64, archive: u64) -> Self {
        Self {
            records,
            archive,
            replace: None,
            keys: None,
            journal: None,
            generation: None,
        }
    }

    /// The plain point that starts a `commit.log` of `generation` (written by an atomic
    /// replace or a creation).
    fn base(records: u64, archive: u64, generation: u64) -> Self {
        Self {
            generation: Some(generation),
            ..Self::plain(records, archive)
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Rewrite {
    len: u64,
    crc: u32,
}

/// The embedded default store: a directory of session directories (see the module docs).
#[derive(Clone)]
pub struct FileStore {
    inner: Arc<Inner>,
}

struct Inner {
    sessions: PathBuf,
    jobs: mpsc::Sender<Job>,
    appends: AtomicU64,
    commits: AtomicU64,
    /// `fdatasync`s the committer issued for appends ([`FileStore::syncs`]).
    syncs: AtomicU64,
    /// The highest `s<n>` id handed out or found on open.
    next_id: AtomicU64,
    /// [`FileStoreOptions::inline`].
    inline: bool,
    /// [`FileStoreOptions::journal`].
    journal: bool,
    /// This store's journal (`<root>/journal/<pid>-<random>.log`, [`store_journal`]): one
    /// frame and one sync per batch; made by the first batch that needs it, under this lock
    /// (so once, whatever appends come first together). The committer thread holds it only for
    /// a batch, so it is dropped (deleted when clean) with the store's last handle.
    store_journal: Arc<Mutex<StoreJournal>>,
    /// `<root>/journal/`, where the journals of every store on this root are.
    journals: PathBuf,
    /// This store's journal's path ([`StoreJournal::path`]), made or not: left out of the looks
    /// for dead journals.
    own_journal: PathBuf,
    /// Idempotency key claims and settles of one session, and the taking and giving up of its
    /// lock, run one at a time (striped by id).
    key_locks: [Mutex<()>; KEY_LOCKS],
    /// The sessions this store holds (their writers are open): their keys ride with their
    /// appends.
    held: Mutex<HashMap<SessionId, Weak<Mutex<SessionFiles>>>>,
}

impl Inner {
    /// Counts one commit of `answers`' successful appends (before they are answered) and the
    /// `syncs` it issued.
    fn count_commit(&self, answers: &Answers, syncs: u64) {
        self.syncs.fetch_add(syncs, Ordering::Relaxed);
        let ok = answers
            .iter()
            .filter(|(_, a, append)| a.is_ok() && *append)
            .count() as u64;
        self.commits.fetch_add(1, Ordering::Relaxed);
        self.appends.fetch_add(ok, Ordering::Relaxed);
    }
}

impl std::fmt::Debug for FileStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileStore")
            .field("sessions", &self.inner.sessions)
            .finish()
    }
}

/// One append waiting for the committer.
struct Job {
    files: Arc<Mutex<SessionFiles>>,
    records: Vec<u8>,
    archive: Vec<u8>,
    /// [`FileStoreOptions::journal`].
    journal: bool,
    reply: oneshot::Sender<Result<(), StoreError>>,
}

/// A session open for writing: where each of its files ends, and its lock. The lock is the only
/// file an idle session holds open; the data files are opened by the commit that writes them
/// ([`DataFiles`]) and closed when it has synced them, so 10,000 open sessions hold 10,000
/// descriptors, not 40,000.
struct SessionFiles {
    id: SessionId,
    dir: PathBuf,
    /// The generation of `commit.log` ([`CommitPoint::generation`]), named in each store
    /// journal entry of this session.
    generation: u64,
    records_end: u64,
    archive_end: u64,
    commits_end: u64,
    /// Set when a failed write could not be undone: the writer refuses further writes.
    poisoned: bool,
    /// `commit.log` holds journal frames (written since the last checkpoint): the data files
    /// may hold unsynced bytes, and a checkpoint has work to do.
    journaled: bool,
    /// The writer was released: the lock may be another process's, nothing more is written.
    released: bool,
    /// Holds the session's `flock`; dropped with the writer.
    lock: File,
    /// The session's idempotency keys, read on first use.
    keys: Option<KeyLog>,
}

impl SessionFiles {
    /// The session's keys, read from disk the first time.
    fn keys(&mut self) -> Result<&mut KeyLog, StoreError> {
        let log = match self.keys.take() {
            Some(log) => log,
            None => KeyLog::load(&self.dir)?,
        };
        Ok(self.keys.insert(log))
    }

    /// Writes and syncs the keys waiting for a write now, on this thread (before a compaction
    /// or a facts change, which do not go through the committer, and at release).
    fn sync_keys(&mut self) -> Result<(), StoreError> {
        let Some(log) = self.keys.as_mut() else {
            return Ok(());
        };
        let Some(write) = log.prepare()? else {
            return Ok(());
        };
        let synced = write.file.as_ref().map_or(Ok(()), File::sync_data);
        log.finish(write, synced.is_ok());
        synced.map_err(|e| StoreError::io(self.dir.join(keys::KEYS_LOG), "sync", e))
    }
}

impl FileStore {
    /// Opens the store at `root` (the directory holding `sessions/`), creating it if needed,
    /// and starts its committer thread. Must be called inside a tokio runtime only for the
    /// async methods; opening itself is synchronous.
    ///
    /// Opening writes nothing to a root that has `sessions/` and no dead store journal: the
    /// store's own journal is made by its first append, so a store that only reads can open a
    /// root it cannot write (docs/storage.md, "The store journal").
    ///
    /// # Errors
    /// [`StoreError::Io`] if `sessions/` cannot be created, a dead store journal cannot be
    /// recovered, no name can be drawn for this store's journal, or the thread cannot start.
    pub fn open(root: impl Into<PathBuf>, options: FileStoreOptions) -> Result<Self, StoreError> {
        let root = root.into();
        let sessions = root.join(SESSIONS);
        fs::create_dir_all(&sessions).map_err(|e| StoreError::io(&sessions, "create", e))?;
        // Issue 47: the journals of stores that died are applied before anything is read (no
        // `journal/`: none died). This store's own is made by its first journaled append, so a
        // store that only reads writes nothing.
        let journals = root.join(store_journal::JOURNALS);
        store_journal::recover_dead(&journals, &sessions, None)?;
        let store_journal = StoreJournal::new(journals.clone(), options.store_journal_bound)?;
        let own_journal = store_journal.path().to_path_buf();
        let store_journal = Arc::new(Mutex::new(store_journal));
        let committer_journal = Arc::downgrade(&store_journal);
        let (jobs, rx) = mpsc::channel(options.queue.max(1));
        let highest = highest_numbered(&sessions)?;
        let inner = Arc::new(Inner {
            sessions: sessions.clone(),
            jobs,
            appends: AtomicU64::new(0),
            commits: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            next_id: AtomicU64::new(highest),
            inline: options.inline,
            journal: options.journal,
            store_journal,
            journals,
            own_journal,
            key_locks: Default::default(),
            held: Mutex::default(),
        });
        let weak = Arc::downgrade(&inner);
        std::thread::Builder::new()
            .name("hookline-store-commit".into())
            .spawn(move || committer(rx, &options, &weak, &committer_journal))
            .map_err(|e| StoreError::io(&sessions, "start the committer for", e))?;
        Ok(Self { inner })
    }

    /// The committer's counters so far.
    pub fn stats(&self) -> CommitStats {
        CommitStats {
            appends: self.inner.appends.load(Ordering::Relaxed),
            commits: self.inner.commits.load(Ordering::Relaxed),
        }
    }

    /// The `fdatasync`s the committer has issued for appends so far: one per batch for every
    /// append of it that carried no idempotency key (the store journal's), one more per append
    /// with keys (its `keys.log`), three for an append too large to copy into a journal frame
    /// (its data files and `commit.log`). Checkpoints, the store journal's truncation, `create`,
    /// `open` and compaction are not counted.
    pub fn syncs(&self) -> u64 {
        self.inner.syncs.load(Ordering::Relaxed)
    }

    fn session_dir(&self, id: &SessionId) -> Result<PathBuf, StoreError> {
        validate_session_id(id.as_str()).map_err(|reason| StoreError::InvalidSessionId {
            root: self.inner.sessions.clone(),
            id: id.as_str().to_owned(),
            reason,
        })?;
        Ok(self.inner.sessions.join(id.as_str()))
    }

    /// The path of this store's journal (issue 47), once its first append made it; for tests.
    #[cfg(test)]
    fn journal_path(&self) -> Option<PathBuf> {
        let journal = store_journal::lock_journal(&self.inner.store_journal);
        journal.file().map(|_| journal.path().to_path_buf())
    }

    fn writer(&self, id: SessionId, files: SessionFiles) -> Box<dyn SessionWriter> {
        let files = Arc::new(Mutex::new(files));
        self.inner.held().insert(id.clone(), Arc::downgrade(&files));
        Box::new(FileWriter {
            id,
            store: Arc::clone(&self.inner),
            files,
        })
    }
}

/// Runs `f` on tokio's blocking pool, so file I/O never runs on the caller's thread; or, for
/// an inline store, right here.
async fn blocking<T: Send + 'static>(
    inline: bool,
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    if inline {
        return f();
    }
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|_| StoreError::Closed)?
}

#[async_trait]
impl SessionStore for FileStore {
    async fn create(
        &self,
        new: NewSession,
        records: &[Record],
    ) -> Result<(SessionFacts, Box<dyn SessionWriter>), StoreError> {
        let sessions = self.inner.sessions.clone();
        let records = encode_records(Path::new(RECORDS), records)?;
        let store = Arc::clone(&self.inner);
        let (info, files) = blocking(self.inner.inline, move || {
            create_session(&sessions, new, &records, &store.next_id)
        })
        .await?;
        let writer = self.writer(info.session_id.clone(), files);
        Ok((info, writer))
    }

    async fn open(
        &self,
        id: &SessionId,
    ) -> Result<Option<(OpenedSession, Box<dyn SessionWriter>)>, StoreError> {
        let dir = self.session_dir(id)?;
        let (session, inner) = (id.clone(), Arc::clone(&self.inner));
        let opened = blocking(self.inner.inline, move || {
            inner.recover_dead()?;
            // Not while a key of the session is written without its writer (which takes the
            // session's lock for that moment).
            let _one = inner.key_lock(&session);
            open_session(&dir, &session)
        })
        .await?;
        Ok(opened.map(|(stored, files)| {
            let writer = self.writer(id.clone(), files);
            (stored, writer)
        }))
    }

    async fn read(&self, id: &SessionId) -> Result<Option<StoredSession>, StoreError> {
        let dir = self.session_dir(id)?;
        let inner = Arc::clone(&self.inner);
        blocking(self.inner.inline, move || {
            inner.recover_dead()?;
            read_session(&dir)
        })
        .await
    }

    async fn archive_page(
        &self,
        id: &SessionId,
        offset: usize,
        limit: usize,
    ) -> Result<Option<ArchivePage>, StoreError> {
        let dir = self.session_dir(id)?;
        let inner = Arc::clone(&self.inner);
        blocking(self.inner.inline, move || {
            inner.recover_dead()?;
            recovery::read_archive_page(&dir, offset, limit)
        })
        .await
    }

    async fn answered_approvals(
        &self,
        id: &SessionId,
        keep: usize,
    ) -> Result<Option<Vec<ApprovalRecord>>, StoreError> {
        let dir = self.session_dir(id)?;
        blocking(self.inner.inline, move || {
            recovery::read_answered(&dir, keep)
        })
        .await
    }

    /// Issue 49: tries the session's lock without waiting and gives it back at once (a
    /// successor asks whether its predecessor still holds a session that moves to it).
    async fn lease_held(&self, id: &SessionId) -> Result<bool, StoreError> {
        let dir = self.session_dir(id)?;
        let (session, inner) = (id.clone(), Arc::clone(&self.inner));
        blocking(self.inner.inline, move || {
            if inner.held_files(&session).is_some() || !dir.join(LOCK).exists() {
                // Held by this store, or not stored: no other writer has it.
                return Ok(false);
            }
            let _one = inner.key_lock(&session);
            match recovery::take_lock(&dir, &session) {
                // Dropping the file gives the lock back.
                Ok(_lock) => Ok(false),
                Err(StoreError::Leased { .. }) => Ok(true),
                Err(error) => Err(error),
            }
        })
        .await
    }

    async fn sessions(&self) -> Result<Vec<SessionId>, StoreError> {
        let inner = Arc::clone(&self.inner);
        blocking(self.inner.inline, move || {
            inner.recover_dead()?;
            list_sessions(&inner.sessions)
        })
        .await
    }

    async fn claim_key(&self, id: &SessionId, claim: &KeyClaim) -> Result<Claimed, StoreError> {
        let dir = self.session_dir(id)?;
        let (inner, claim, id) = (Arc::clone(&self.inner), claim.clone(), id.clone());
        blocking(self.inner.inline, move || {
            let _one = inner.key_lock(&id);
            match inner.held_files(&id) {
                // Held: the claim rides with the session's next commit (see `keys`).
                Some(files) => Ok(lock(&files).keys()?.claim(&claim)),
                None => unheld_keys(&dir, &id, |log| log.claim(&claim)),
            }
        })
        .await
    }

    async fn settle_key(
        &self,
        id: &SessionId,
        key: &IdempotencyKey,
        owner: &str,
        outcome: Option<&KeyOutcome>,
    ) -> Result<bool, StoreError> {
        let dir = self.session_dir(id)?;
        let (inner, id, key) = (Arc::clone(&self.inner), id.clone(), key.clone());
        let (owner, answer) = (owner.to_owned(), outcome.cloned());
        blocking(self.inner.inline, move || {
            let _one = inner.key_lock(&id);
            let Some(files) = inner.held_files(&id) else {
                return unheld_keys(&dir, &id, |log| log.settle(&key, &owner, answer.as_ref()));
            };
            let mut files = lock(&files);
            let settled = files.keys()?.settle(&key, &owner, answer.as_ref());
            // An answer is durable before it is given: its frame is appended and synced here,
            // beside the committer's batches rather than queued behind them (the journal folds
            // these syncs with the batches' own). A forgotten key waits for the next write.
            if settled && answer.is_some() {
                files.sync_keys()?;
            }
            Ok(settled)
        })
        .await
    }
}

/// A key change of a session this store does not hold: under the session's lock for the
/// moment, its keys read, changed and the change synced at once.
fn unheld_keys<T>(
    dir: &Path,
    id: &SessionId,
    change: impl FnOnce(&mut KeyLog) -> T,
) -> Result<T, StoreError> {
    let lock = recovery::take_lock(dir, id)?;
    let mut log = KeyLog::load(dir)?;
    let result = change(&mut log);
    if let Some(write) = log.prepare()? {
        let synced = write.file.as_ref().map_or(Ok(()), File::sync_data);
        log.finish(write, synced.is_ok());
        synced.map_err(|e| StoreError::io(dir.join(keys::KEYS_LOG), "sync", e))?;
    }
    drop(lock);
    Ok(result)
}

impl Inner {
    /// Applies the journals of stores that died (issue 47, [`store_journal::recover_dead`])
    /// before a session is opened or read: a crashed writer's acknowledged appends may be in
    /// its journal alone.
    fn recover_dead(&self) -> Result<(), StoreError> {
        // By its name, not its lock: a batch holds the journal's lock through its sync.
        store_journal::recover_dead(&self.journals, &self.sessions, Some(&self.own_journal))
    }

    /// The stripe of [`Inner::key_locks`] session `id` takes.
    fn key_lock(&self, id: &SessionId) -> MutexGuard<'_, ()> {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        id.hash(&mut hasher);
        let stripe = (hasher.finish() as usize) % KEY_LOCKS;
        self.key_locks[stripe]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn held(&self) -> MutexGuard<'_, HashMap<SessionId, Weak<Mutex<SessionFiles>>>> {
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The files of session `id` when this store holds it.
    fn held_files(&self, id: &SessionId) -> Option<Arc<Mutex<SessionFiles>>> {
        self.held().get(id).and_then(Weak::upgrade)
    }

    /// Forgets that this store holds session `id` through `files`.
    fn let_go(&self, id: &SessionId, files: &Arc<Mutex<SessionFiles>>) {
        let mut held = self.held();
        if held
            .get(id)
            .is_some_and(|w| std::ptr::eq(w.as_ptr(), Arc::as_ptr(files)))
        {
            held.remove(id);
        }
    }

    /// Commits an append of `files`' session (records, archive entries and any keys waiting),
    /// through the committer, or here for an inline store; returns once it is durable.
    async fn commit(
        &self,
        files: Arc<Mutex<SessionFiles>>,
        records: Vec<u8>,
        archive: Vec<u8>,
    ) -> Result<(), StoreError> {
        let (reply, answer) = oneshot::channel();
        let job = Job {
            files,
            records,
            archive,
            journal: self.journal,
            reply,
        };
        if self.inline {
            // A batch of one, committed here: the answer is ready when this returns.
            let committed = commit_batch(vec![job], &mut SyncPool::new(1), &self.store_journal);
            self.count_commit(&committed.answers, committed.syncs);
            send_answers(committed.answers);
            // Inline, the checkpoint of a full journal is on this append's way back.
            checkpoint_full(committed.full);
            if committed.journal_full {
                store_journal::truncate_full(&self.store_journal);
            }
        } else {
            self.jobs.send(job).await.map_err(|_| StoreError::Closed)?;
        }
        answer.await.map_err(|_| StoreError::Closed)?
    }
}

/// The writer of one file-store session; holds the session's `flock`.
struct FileWriter {
    id: SessionId,
    store: Arc<Inner>,
    files: Arc<Mutex<SessionFiles>>,
}

#[async_trait]
impl SessionWriter for FileWriter {
    fn session_id(&self) -> &SessionId {
        &self.id
    }

    async fn append(
        &mut self,
        records: &[Record],
        archive: &[ArchiveEntry],
    ) -> Result<(), StoreError> {
        if records.is_empty() && archive.is_empty() {
            return Ok(());
        }
        let records = encode_records(Path::new(RECORDS), records)?;
        let archive = encode_records(Path::new(ARCHIVE), archive)?;
        self.store
            .commit(Arc::clone(&self.files), records, archive)
            .await
    }

    async fn replace_records(
        &mut self,
        records: &[Record],
        archive: &[ArchiveEntry],
    ) -> Result<(), StoreError> {
        let records = encode_records(Path::new(RECORDS), records)?;
        let archive = encode_records(Path::new(ARCHIVE), archive)?;
        let files = Arc::clone(&self.files);
        blocking(self.store.inline, move || {
            let mut files = lock(&files);
            // Keys claimed for the request first: never records without their claim.
            files.sync_keys()?;
            replace(&mut files, &records, &archive)
        })
        .await
    }

    async fn set_facts(&mut self, facts: &SessionFacts) -> Result<(), StoreError> {
        let files = Arc::clone(&self.files);
        let bytes = encode_records(Path::new(META), std::slice::from_ref(facts))?;
        blocking(self.store.inline, move || {
            let mut files = lock(&files);
            files.sync_keys()?;
            replace_file(&files.dir.join(META), &bytes)
        })
        .await
    }

    async fn release(self: Box<Self>) -> Result<(), StoreError> {
        let (store, id, files) = (
            Arc::clone(&self.store),
            self.id.clone(),
            Arc::clone(&self.files),
        );
        blocking(self.store.inline, move || {
            let _one = store.key_lock(&id);
            store.let_go(&id, &files);
            let mut files = lock(&files);
            // Keys still waiting (a request that wrote nothing else) are stored before the
            // session is let go: from here its keys are written without a writer. Then the
            // data files are made durable and the journal folded (issue 47), so a released
            // session's directory holds plain points only.
            let synced = files.sync_keys();
            let checkpointed = journal::checkpoint(&mut files);
            files.released = true;
            // Unlock explicitly: another holder of the handles (a batch finishing) must not
            // keep the session locked after release returns.
            flock(&files.lock, FlockOperation::Unlock)
                .map_err(|e| StoreError::io(files.dir.join(LOCK), "unlock", e.into()))?;
            synced.and(checkpointed)
        })
        .await
    }
}

impl Drop for FileWriter {
    fn drop(&mut self) {
        self.store.let_go(&self.id, &self.files);
    }
}

fn lock(files: &Mutex<SessionFiles>) -> MutexGuard<'_, SessionFiles> {
    // A panic while holding the lock leaves the handles as they were; the poisoned flag of
    // `SessionFiles` (not the mutex's) says whether they are usable.
    files
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

mod commit;
mod journal;
#[cfg(test)]
mod journal_tests;
#[cfg(test)]
mod key_tests;
mod keys;
mod recovery;
mod store_journal;
#[cfg(test)]
mod store_journal_tests;
#[cfg(test)]
mod tests;

pub use journal::JOURNAL_BOUND;
pub use store_journal::STORE_JOURNAL_BOUND;

use commit::{checkpoint_full, commit_batch, committer, replace, send_answers, Answers, SyncPool};
use keys::KeyLog;
use recovery::{
    create_session, highest_numbered, list_sessions, open_session, read_session, replace_file,
};
use store_journal::StoreJournal;
