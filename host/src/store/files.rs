//! [`FileStore`]: the embedded default [`SessionStore`] (issue 14 item 1, issue 11 item 5).
//!
//! Layout and frames are those of `docs/storage.md`: `sessions/<id>/` holds `meta.log` (the
//! facts), `records.log` and `archive.log`. Beside them:
//! - `commit.log`, frames of [`CommitPoint`]s: after every append the lengths of `records.log`
//!   and `archive.log`. Opening cuts both logs back to the last commit point they satisfy, so an
//!   append that wrote records but not its archive entries (or half its frames) before a crash is
//!   wholly absent, never half there.
//! - `lock`, held with `flock(LOCK_EX)` by the session's one writer: the file store's lease. Two
//!   processes (or two stores in one process) never write one session; a dead process's lock
//!   goes with it.
//!
//! Group commit: every append goes to one committer thread per store, which takes every append
//! queued (up to [`MAX_BATCH`]), writes their frames, then issues the `fdatasync`s of all the
//! touched files at once from a few sync threads. The file system's journal (ext4's jbd2, XFS's
//! log) folds concurrent syncs into one journal commit and one cache flush, so N sessions'
//! appends cost about one device flush rather than N. Each append is acknowledged only after its
//! own files are synced, so the crash guarantees are those of a single append.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use async_trait::async_trait;
use hookline_messages::record::{ArchiveEntry, Record};
use hookline_messages::session::{SessionId, SessionInfo};
use rustix::fs::{flock, FlockOperation};
use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, oneshot};

use super::api::{fresh_session_id, NewSession, SessionStore, SessionWriter, StoredSession, ID_TRIES};
use super::log::{
    encode_records, remove_stale_rewrite, rewrite_path, scan, sync_dir, write_new_file, Scan,
};
use super::{validate_session_id, StoreError, TornTail};

const SESSIONS: &str = "sessions";
const RECORDS: &str = "records.log";
const ARCHIVE: &str = "archive.log";
const META: &str = "meta.log";
const COMMITS: &str = "commit.log";
const LOCK: &str = "lock";

/// The most appends one group commit takes.
pub const MAX_BATCH: usize = 1024;
/// Commit points kept before `commit.log` is rewritten to one point on open.
const MAX_COMMIT_POINTS: usize = 4096;

/// How a [`FileStore`] commits.
#[derive(Clone, Debug)]
pub struct FileStoreOptions {
    /// Commit many sessions' appends together (default). Off: one append at a time, each with
    /// its own syncs (for comparison).
    pub group_commit: bool,
    /// Appends waiting for the committer at most; callers wait beyond it (default 4096).
    pub queue: usize,
    /// Threads that issue one batch's syncs concurrently (default 16).
    pub sync_threads: usize,
}

impl Default for FileStoreOptions {
    fn default() -> Self {
        Self {
            group_commit: true,
            queue: 4096,
            sync_threads: 16,
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

/// The length of `records.log` and `archive.log` after a committed append.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct CommitPoint {
    records: u64,
    archive: u64,
    /// Set by a compaction: `records.log.rewrite` of this length and CRC-32C is the new
    /// `records.log` (renamed on open when a crash came before the rename).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    replace: Option<Rewrite>,
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
    reply: oneshot::Sender<Result<(), StoreError>>,
}

/// A session open for writing: its file handles, where each ends, and its lock.
struct SessionFiles {
    dir: PathBuf,
    records: File,
    archive: File,
    commits: File,
    records_end: u64,
    archive_end: u64,
    commits_end: u64,
    /// Set when a failed write could not be undone: the writer refuses further writes.
    poisoned: bool,
    /// Holds the session's `flock`; dropped with the writer.
    _lock: File,
}

impl FileStore {
    /// Opens the store at `root` (the directory holding `sessions/`), creating it if needed,
    /// and starts its committer thread. Must be called inside a tokio runtime only for the
    /// async methods; opening itself is synchronous.
    ///
    /// # Errors
    /// [`StoreError::Io`] if the directories cannot be created or the thread cannot start.
    pub fn open(root: impl Into<PathBuf>, options: FileStoreOptions) -> Result<Self, StoreError> {
        let sessions = root.into().join(SESSIONS);
        fs::create_dir_all(&sessions).map_err(|e| StoreError::io(&sessions, "create", e))?;
        let (jobs, rx) = mpsc::channel(options.queue.max(1));
        let inner = Arc::new(Inner {
            sessions: sessions.clone(),
            jobs,
            appends: AtomicU64::new(0),
            commits: AtomicU64::new(0),
        });
        let weak = Arc::downgrade(&inner);
        std::thread::Builder::new()
            .name("hookline-store-commit".into())
            .spawn(move || committer(rx, &options, &weak))
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

    fn session_dir(&self, id: &SessionId) -> Result<PathBuf, StoreError> {
        validate_session_id(id.as_str()).map_err(|reason| StoreError::InvalidSessionId {
            root: self.inner.sessions.clone(),
            id: id.as_str().to_owned(),
            reason,
        })?;
        Ok(self.inner.sessions.join(id.as_str()))
    }

    fn writer(&self, id: SessionId, files: SessionFiles) -> Box<dyn SessionWriter> {
        Box::new(FileWriter {
            id,
            store: Arc::clone(&self.inner),
            files: Arc::new(Mutex::new(files)),
        })
    }
}

/// Runs `f` on tokio's blocking pool: file I/O never runs on the caller's thread.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
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
    ) -> Result<(SessionInfo, Box<dyn SessionWriter>), StoreError> {
        let sessions = self.inner.sessions.clone();
        let records = encode_records(Path::new(RECORDS), records)?;
        let (info, files) = blocking(move || create_session(&sessions, new, &records)).await?;
        let writer = self.writer(info.session_id.clone(), files);
        Ok((info, writer))
    }

    async fn open(
        &self,
        id: &SessionId,
    ) -> Result<Option<(StoredSession, Box<dyn SessionWriter>)>, StoreError> {
        let dir = self.session_dir(id)?;
        let session = id.clone();
        let opened = blocking(move || open_session(&dir, &session)).await?;
        Ok(opened.map(|(stored, files)| {
            let writer = self.writer(id.clone(), files);
            (stored, writer)
        }))
    }

    async fn read(&self, id: &SessionId) -> Result<Option<StoredSession>, StoreError> {
        let dir = self.session_dir(id)?;
        blocking(move || read_session(&dir)).await
    }

    async fn sessions(&self) -> Result<Vec<SessionId>, StoreError> {
        let sessions = self.inner.sessions.clone();
        blocking(move || list_sessions(&sessions)).await
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
        let (reply, answer) = oneshot::channel();
        let job = Job {
            files: Arc::clone(&self.files),
            records,
            archive,
            reply,
        };
        self.store
            .jobs
            .send(job)
            .await
            .map_err(|_| StoreError::Closed)?;
        answer.await.map_err(|_| StoreError::Closed)?
    }

    async fn replace_records(
        &mut self,
        records: &[Record],
        archive: &[ArchiveEntry],
    ) -> Result<(), StoreError> {
        let records = encode_records(Path::new(RECORDS), records)?;
        let archive = encode_records(Path::new(ARCHIVE), archive)?;
        let files = Arc::clone(&self.files);
        blocking(move || replace(&mut lock(&files), &records, &archive)).await
    }

    async fn set_info(&mut self, info: &SessionInfo) -> Result<(), StoreError> {
        let files = Arc::clone(&self.files);
        let bytes = encode_records(Path::new(META), std::slice::from_ref(info))?;
        blocking(move || {
            let dir = lock(&files).dir.clone();
            replace_file(&dir.join(META), &bytes)
        })
        .await
    }

    async fn release(self: Box<Self>) -> Result<(), StoreError> {
        // The lock goes with the last handle on the lock file.
        drop(self);
        Ok(())
    }
}

fn lock(files: &Mutex<SessionFiles>) -> MutexGuard<'_, SessionFiles> {
    // A panic while holding the lock leaves the handles as they were; the poisoned flag of
    // `SessionFiles` (not the mutex's) says whether they are usable.
    files.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The committer: takes every queued append (up to [`MAX_BATCH`] when grouping), writes them,
/// syncs all their files at once, and answers each.
fn committer(mut rx: mpsc::Receiver<Job>, options: &FileStoreOptions, stats: &std::sync::Weak<Inner>) {
    let mut carry: Vec<Job> = Vec::new();
    loop {
        let mut batch = std::mem::take(&mut carry);
        if batch.is_empty() {
            match rx.blocking_recv() {
                Some(job) => batch.push(job),
                None => return,
            }
        }
        if options.group_commit {
            while batch.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(_) => break,
                }
            }
        }
        // One append per session per batch: a later one waits for the next batch, so each
        // session's frames stay in order and an undo never touches another append's bytes.
        let mut seen = HashSet::new();
        let (now, later): (Vec<Job>, Vec<Job>) = batch
            .into_iter()
            .partition(|job| seen.insert(Arc::as_ptr(&job.files)));
        carry = later;
        let count = now.len() as u64;
        commit_batch(now, options.sync_threads);
        if let Some(inner) = stats.upgrade() {
            inner.commits.fetch_add(1, Ordering::Relaxed);
            inner.appends.fetch_add(count, Ordering::Relaxed);
        }
    }
}

/// What one append wrote, so it can be synced, then kept or undone.
struct Written {
    records: u64,
    archive: u64,
    commits: u64,
}

fn commit_batch(batch: Vec<Job>, sync_threads: usize) {
    let mut sessions = Vec::with_capacity(batch.len());
    let mut bytes = Vec::with_capacity(batch.len());
    let mut replies = Vec::with_capacity(batch.len());
    for job in batch {
        sessions.push(job.files);
        bytes.push((job.records, job.archive));
        replies.push(job.reply);
    }
    let mut guards: Vec<MutexGuard<'_, SessionFiles>> = Vec::with_capacity(sessions.len());
    let mut results: Vec<Result<Written, StoreError>> = Vec::with_capacity(sessions.len());
    for (files, (records, archive)) in sessions.iter().zip(&bytes) {
        let mut files = lock(files);
        results.push(write_append(&mut files, records, archive));
        guards.push(files);
    }
    // Every file written by a successful append, synced concurrently.
    let mut syncs: Vec<(usize, &File, &Path, &'static str)> = Vec::new();
    for (i, ((files, result), (records, archive))) in
        guards.iter().zip(&results).zip(&bytes).enumerate()
    {
        if result.is_ok() {
            if !records.is_empty() {
                syncs.push((i, &files.records, &files.dir, RECORDS));
            }
            if !archive.is_empty() {
                syncs.push((i, &files.archive, &files.dir, ARCHIVE));
            }
            syncs.push((i, &files.commits, &files.dir, COMMITS));
        }
    }
    let failures = sync_all(&syncs, sync_threads);
    drop(syncs);
    for (i, error) in failures {
        if let Some(Ok(_)) = results.get(i) {
            results[i] = Err(error);
        }
    }
    for ((files, result), reply) in guards.iter_mut().zip(results).zip(replies) {
        let answer = match result {
            Ok(written) => {
                files.records_end = written.records;
                files.archive_end = written.archive;
                files.commits_end = written.commits;
                Ok(())
            }
            Err(e) => {
                undo(files);
                Err(e)
            }
        };
        // The caller may have stopped waiting; the append is durable or undone either way.
        let _ = reply.send(answer);
    }
}

/// Writes one append's frames and its commit point (not yet synced).
fn write_append(
    files: &mut SessionFiles,
    records: &[u8],
    archive: &[u8],
) -> Result<Written, StoreError> {
    if files.poisoned {
        return Err(StoreError::Poisoned {
            path: files.dir.clone(),
        });
    }
    let written = Written {
        records: files.records_end + records.len() as u64,
        archive: files.archive_end + archive.len() as u64,
        commits: 0,
    };
    let point = CommitPoint {
        records: written.records,
        archive: written.archive,
        replace: None,
    };
    let point = encode_records(&files.dir.join(COMMITS), &[point])?;
    let outcome = files
        .records
        .write_all_at(records, files.records_end)
        .map_err(|e| StoreError::io(files.dir.join(RECORDS), "append to", e))
        .and_then(|()| {
            files
                .archive
                .write_all_at(archive, files.archive_end)
                .map_err(|e| StoreError::io(files.dir.join(ARCHIVE), "append to", e))
        })
        .and_then(|()| {
            files
                .commits
                .write_all_at(&point, files.commits_end)
                .map_err(|e| StoreError::io(files.dir.join(COMMITS), "append to", e))
        });
    match outcome {
        Ok(()) => Ok(Written {
            commits: files.commits_end + point.len() as u64,
            ..written
        }),
        Err(e) => {
            undo(files);
            Err(e)
        }
    }
}

/// Cuts every file back to its last committed end; poisons the writer if that fails.
fn undo(files: &mut SessionFiles) {
    let cut = [
        (&files.commits, files.commits_end),
        (&files.records, files.records_end),
        (&files.archive, files.archive_end),
    ]
    .into_iter()
    .try_for_each(|(file, end)| file.set_len(end).and_then(|()| file.sync_data()));
    if cut.is_err() {
        files.poisoned = true;
    }
}

/// Syncs every file, `threads` at a time; returns the failures by append index.
fn sync_all(
    files: &[(usize, &File, &Path, &'static str)],
    threads: usize,
) -> Vec<(usize, StoreError)> {
    let sync = |(i, file, dir, name): &(usize, &File, &Path, &'static str)| {
        file.sync_data()
            .err()
            .map(|e| (*i, StoreError::io(dir.join(name), "sync", e)))
    };
    if files.len() <= 1 || threads <= 1 {
        return files.iter().filter_map(sync).collect();
    }
    let chunk = files.len().div_ceil(threads.min(files.len()));
    std::thread::scope(|scope| {
        let handles: Vec<_> = files
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().filter_map(sync).collect::<Vec<_>>()))
            .collect();
        let mut failures = Vec::new();
        for (handle, part) in handles.into_iter().zip(files.chunks(chunk)) {
            match handle.join() {
                Ok(mut f) => failures.append(&mut f),
                // A sync thread that panicked synced nothing we can vouch for.
                Err(_) => failures.extend(part.iter().map(|(i, _, dir, name)| {
                    (
                        *i,
                        StoreError::io(dir.join(name), "sync", io::Error::other("sync thread panicked")),
                    )
                })),
            }
        }
        failures
    })
}

/// Compaction: the new records, the archive entries and a replacing commit point, so a crash
/// leaves the old records or the new ones (see [`CommitPoint::replace`]).
fn replace(files: &mut SessionFiles, records: &[u8], archive: &[u8]) -> Result<(), StoreError> {
    if files.poisoned {
        return Err(StoreError::Poisoned {
            path: files.dir.clone(),
        });
    }
    let records_path = files.dir.join(RECORDS);
    let rewrite = rewrite_path(&records_path);
    if let Err(e) = write_new_file(&rewrite, records) {
        let _ = fs::remove_file(&rewrite);
        return Err(e);
    }
    let archive_end = files.archive_end + archive.len() as u64;
    let appended = files
        .archive
        .write_all_at(archive, files.archive_end)
        .and_then(|()| files.archive.sync_data());
    if let Err(e) = appended {
        let _ = fs::remove_file(&rewrite);
        undo(files);
        return Err(StoreError::io(files.dir.join(ARCHIVE), "append to", e));
    }
    let point = CommitPoint {
        records: records.len() as u64,
        archive: archive_end,
        replace: Some(Rewrite {
            len: records.len() as u64,
            crc: crc32c::crc32c(records),
        }),
    };
    let commits_path = files.dir.join(COMMITS);
    let point = encode_records(&commits_path, &[point])?;
    if let Err(e) = replace_file(&commits_path, &point) {
        let _ = fs::remove_file(&rewrite);
        undo(files);
        return Err(e);
    }
    // Committed: from here a crash finishes the rename on open.
    files.poisoned = true;
    fs::rename(&rewrite, &records_path).map_err(|e| StoreError::io(&records_path, "replace", e))?;
    sync_dir(&files.dir)?;
    files.records = open_rw(&records_path)?;
    files.commits = open_rw(&commits_path)?;
    files.records_end = records.len() as u64;
    files.archive_end = archive_end;
    files.commits_end = point.len() as u64;
    files.poisoned = false;
    Ok(())
}

/// Replaces `path` with `bytes` atomically (temporary file, sync, rename, directory sync).
fn replace_file(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let tmp = rewrite_path(path);
    if let Err(e) = write_new_file(&tmp, bytes) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    fs::rename(&tmp, path).map_err(|e| StoreError::io(path, "replace", e))?;
    super::log::sync_parent(path)
}

fn open_rw(path: &Path) -> Result<File, StoreError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| StoreError::io(path, "open", e))
}

/// Takes the session's lock without waiting.
fn take_lock(dir: &Path, session: &SessionId) -> Result<File, StoreError> {
    let path = dir.join(LOCK);
    let file = open_rw(&path)?;
    match flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(file),
        Err(rustix::io::Errno::WOULDBLOCK) => Err(StoreError::Leased {
            session: session.clone(),
            holder: "another writer (a process or store holds its lock file)".into(),
        }),
        Err(e) => Err(StoreError::io(&path, "lock", e.into())),
    }
}

fn create_session(
    sessions: &Path,
    new: NewSession,
    records: &[u8],
) -> Result<(SessionInfo, SessionFiles), StoreError> {
    let mut claimed = None;
    for _ in 0..ID_TRIES {
        let id = fresh_session_id();
        let dir = sessions.join(id.as_str());
        // The directory is the atomic claim on the id, across threads and processes.
        match fs::create_dir(&dir) {
            Ok(()) => {
                claimed = Some((id, dir));
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(StoreError::io(&dir, "create", e)),
        }
    }
    let Some((id, dir)) = claimed else {
        return Err(StoreError::NoFreeId { tries: ID_TRIES });
    };
    sync_dir(sessions)?;
    let lock = take_lock(&dir, &id)?;
    let info = SessionInfo {
        workspace_root: new.workspace_root,
        session_id: id,
        approval_mode: new.approval_mode,
    };
    let point = CommitPoint {
        records: records.len() as u64,
        archive: 0,
        replace: None,
    };
    let point = encode_records(&dir.join(COMMITS), &[point])?;
    write_new_file(&dir.join(RECORDS), records)?;
    write_new_file(&dir.join(ARCHIVE), &[])?;
    write_new_file(&dir.join(COMMITS), &point)?;
    // The facts last: a session without them was never created (open and read say `None`).
    let meta = encode_records(&dir.join(META), std::slice::from_ref(&info))?;
    write_new_file(&dir.join(META), &meta)?;
    sync_dir(&dir)?;
    let files = SessionFiles {
        records: open_rw(&dir.join(RECORDS))?,
        archive: open_rw(&dir.join(ARCHIVE))?,
        commits: open_rw(&dir.join(COMMITS))?,
        records_end: records.len() as u64,
        archive_end: 0,
        commits_end: point.len() as u64,
        dir,
        poisoned: false,
        _lock: lock,
    };
    Ok((info, files))
}

/// A session's files as they stand, cut to the last commit point they satisfy.
struct Reading {
    info: SessionInfo,
    records: Vec<Record>,
    archive: Vec<ArchiveEntry>,
    /// Where the committed bytes end, and what each file holds beyond that.
    records_end: u64,
    archive_end: u64,
    records_scan_end: u64,
    archive_scan_end: u64,
    records_torn: Option<TornTail>,
    archive_torn: Option<TornTail>,
    /// The commit points, and whether the last one is the one chosen.
    points: usize,
    cut_points: bool,
    /// A committed compaction whose rename a crash interrupted.
    pending_rewrite: bool,
}

/// Reads a session without changing anything; `None` when it has no facts.
fn read_files(dir: &Path) -> Result<Option<Reading>, StoreError> {
    let Some(meta) = scan::<SessionInfo>(&dir.join(META))? else {
        return Ok(None);
    };
    let Some(info) = meta.records.last().cloned() else {
        return Ok(None);
    };
    let points = scan::<CommitPoint>(&dir.join(COMMITS))?.map_or_else(Vec::new, |s| s.records);
    let records_path = dir.join(RECORDS);
    let rewrite = rewrite_path(&records_path);
    let pending_rewrite = match points.last().and_then(|p| p.replace) {
        Some(expected) => rewrite_matches(&rewrite, expected)?,
        None => false,
    };
    let records_source = if pending_rewrite { &rewrite } else { &records_path };
    let records = scan::<Record>(records_source)?.unwrap_or_else(empty_scan);
    let archive = scan::<ArchiveEntry>(&dir.join(ARCHIVE))?.unwrap_or_else(empty_scan);
    let records_torn = torn(records_source, &records)?;
    let archive_torn = torn(&dir.join(ARCHIVE), &archive)?;
    let boundary = |ends: &[u64], at: u64| at == 0 || ends.binary_search(&at).is_ok();
    // The latest commit point both logs reach, at a frame boundary. No points at all is a
    // session written before commit points existed: its valid frames are all committed.
    let chosen = points
        .iter()
        .rposition(|p| {
            p.records <= records.end
                && p.archive <= archive.end
                && boundary(&records.ends, p.records)
                && boundary(&archive.ends, p.archive)
        })
        .map(|i| (i, points[i]));
    let (records_end, archive_end, cut_points) = match chosen {
        Some((i, p)) => (p.records, p.archive, i + 1 != points.len()),
        None if points.is_empty() => (records.end, archive.end, false),
        // Points that no log reaches are damage, not a crash: keep every valid frame (open
        // rewrites the points to match) rather than cut synced records off.
        None => (records.end, archive.end, true),
    };
    let keep = |ends: &[u64], end: u64| ends.partition_point(|&e| e <= end);
    let (records_scan_end, archive_scan_end) = (records.end, archive.end);
    let keep_records = keep(&records.ends, records_end);
    let keep_archive = keep(&archive.ends, archive_end);
    let mut record_list = records.records;
    record_list.truncate(keep_records);
    let mut archive_list = archive.records;
    archive_list.truncate(keep_archive);
    Ok(Some(Reading {
        info,
        records: record_list,
        archive: archive_list,
        records_end,
        archive_end,
        records_scan_end,
        archive_scan_end,
        records_torn,
        archive_torn,
        points: points.len(),
        cut_points,
        pending_rewrite,
    }))
}

fn empty_scan<T>() -> Scan<T> {
    Scan {
        records: Vec::new(),
        ends: Vec::new(),
        end: 0,
        reason: None,
    }
}

/// The torn tail a scan stopped at, described as `Log::open` would.
fn torn<T>(path: &Path, scan: &Scan<T>) -> Result<Option<TornTail>, StoreError> {
    let Some(reason) = scan.reason else {
        return Ok(None);
    };
    let len = fs::metadata(path)
        .map_err(|e| StoreError::io(path, "read metadata of", e))?
        .len();
    Ok(Some(TornTail {
        offset: scan.end,
        dropped_bytes: len.saturating_sub(scan.end),
        path: path.to_path_buf(),
        reason,
    }))
}

fn rewrite_matches(path: &Path, expected: Rewrite) -> Result<bool, StoreError> {
    match fs::read(path) {
        Ok(bytes) => Ok(bytes.len() as u64 == expected.len && crc32c::crc32c(&bytes) == expected.crc),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(StoreError::io(path, "read", e)),
    }
}

fn read_session(dir: &Path) -> Result<Option<StoredSession>, StoreError> {
    Ok(read_files(dir)?.map(|r| StoredSession {
        info: r.info,
        records: r.records,
        archive: r.archive,
        repaired: Vec::new(),
    }))
}

/// Takes the lock, then reads the session and repairs it: finishes an interrupted compaction,
/// cuts torn and uncommitted tails, and rewrites `commit.log` to one point when it is long.
fn open_session(
    dir: &Path,
    id: &SessionId,
) -> Result<Option<(StoredSession, SessionFiles)>, StoreError> {
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(StoreError::NotADirectory { path: dir.into() }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::io(dir, "inspect", e)),
    }
    let lock = take_lock(dir, id)?;
    let Some(reading) = read_files(dir)? else {
        return Ok(None);
    };
    let records_path = dir.join(RECORDS);
    let mut repaired = Vec::new();
    if reading.pending_rewrite {
        fs::rename(rewrite_path(&records_path), &records_path)
            .map_err(|e| StoreError::io(&records_path, "replace", e))?;
        sync_dir(dir)?;
        repaired.push(format!(
            "{}: a compaction committed before a crash was completed.",
            records_path.display()
        ));
    } else {
        remove_stale_rewrite(&records_path);
    }
    remove_stale_rewrite(&dir.join(COMMITS));
    remove_stale_rewrite(&dir.join(META));
    let records = open_rw(&records_path)?;
    let archive = open_rw(&dir.join(ARCHIVE))?;
    for (file, path, end, scan_end, torn) in [
        (&records, &records_path, reading.records_end, reading.records_scan_end, &reading.records_torn),
        (&archive, &dir.join(ARCHIVE), reading.archive_end, reading.archive_scan_end, &reading.archive_torn),
    ] {
        let len = file
            .metadata()
            .map_err(|e| StoreError::io(path, "read metadata of", e))?
            .len();
        if len == end {
            continue;
        }
        file.set_len(end)
            .and_then(|()| file.sync_all())
            .map_err(|e| StoreError::io(path, "truncate", e))?;
        if let Some(torn) = torn {
            tracing::warn!("{torn}");
            repaired.push(format!("{}: {torn}", path.display()));
        }
        if scan_end > end {
            let note = format!(
                "{}: {} bytes of an append that was never committed were cut off at byte {end}.",
                path.display(),
                scan_end - end
            );
            tracing::warn!("{note}");
            repaired.push(note);
        }
    }
    let commits_path = dir.join(COMMITS);
    let point = CommitPoint {
        records: reading.records_end,
        archive: reading.archive_end,
        replace: None,
    };
    let one_point = encode_records(&commits_path, &[point])?;
    if reading.cut_points || reading.points == 0 || reading.points > MAX_COMMIT_POINTS || reading.pending_rewrite {
        replace_file(&commits_path, &one_point)?;
    } else {
        // Cut a torn commit frame behind the last point.
        let commits_file = open_rw(&commits_path)?;
        let scan = scan::<CommitPoint>(&commits_path)?.unwrap_or_else(empty_scan);
        if scan.reason.is_some() {
            commits_file
                .set_len(scan.end)
                .and_then(|()| commits_file.sync_all())
                .map_err(|e| StoreError::io(&commits_path, "truncate", e))?;
        }
    }
    let commits = open_rw(&commits_path)?;
    let commits_end = commits
        .metadata()
        .map_err(|e| StoreError::io(&commits_path, "read metadata of", e))?
        .len();
    let files = SessionFiles {
        dir: dir.to_path_buf(),
        records,
        archive,
        commits,
        records_end: reading.records_end,
        archive_end: reading.archive_end,
        commits_end,
        poisoned: false,
        _lock: lock,
    };
    let stored = StoredSession {
        info: reading.info,
        records: reading.records,
        archive: reading.archive,
        repaired,
    };
    Ok(Some((stored, files)))
}

fn list_sessions(sessions: &Path) -> Result<Vec<SessionId>, StoreError> {
    let entries = fs::read_dir(sessions).map_err(|e| StoreError::io(sessions, "list", e))?;
    let mut ids = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io(sessions, "list", e))?;
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        match entry.file_name().to_str() {
            Some(name)
                if is_dir
                    && validate_session_id(name).is_ok()
                    && entry.path().join(META).exists() =>
            {
                ids.push(SessionId::from(name));
            }
            _ => {}
        }
    }
    ids.sort();
    Ok(ids)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use hookline_messages::session::ApprovalMode;

    fn user(text: &str) -> Record {
        Record::User {
            text: text.into(),
            images: Vec::new(),
        }
    }

    fn new() -> NewSession {
        NewSession {
            workspace_root: "/w".into(),
            approval_mode: ApprovalMode::AskAll,
        }
    }

    async fn one_session(store: &FileStore) -> (SessionId, PathBuf) {
        let (info, mut w) = store.create(new(), &[user("a")]).await.unwrap();
        w.append(&[user("b")], &[ArchiveEntry::SessionStarted(info.clone())])
            .await
            .unwrap();
        w.release().await.unwrap();
        let dir = store.session_dir(&info.session_id).unwrap();
        (info.session_id, dir)
    }

    fn append_raw(path: &Path, bytes: &[u8]) {
        use std::io::Write;
        let mut f = OpenOptions::new().append(true).open(path).unwrap();
        f.write_all(bytes).unwrap();
    }

    #[tokio::test]
    async fn an_append_without_its_commit_point_is_cut_off_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
        let (id, dir) = one_session(&store).await;
        // A crash after the record frames but before the archive frames and the commit point.
        append_raw(
            &dir.join(RECORDS),
            &encode_records(&dir, &[user("c"), user("d")]).unwrap(),
        );
        let read = store.read(&id).await.unwrap().unwrap();
        assert_eq!(read.records, vec![user("a"), user("b")], "read shows no half");
        let (stored, _w) = store.open(&id).await.unwrap().unwrap();
        assert_eq!(stored.records, vec![user("a"), user("b")]);
        assert_eq!(stored.archive.len(), 1);
        assert_eq!(stored.repaired.len(), 1, "{:?}", stored.repaired);
        assert!(stored.repaired[0].contains("never committed"));
    }

    #[tokio::test]
    async fn a_torn_tail_is_reported_and_cut() {
        let tmp = tempfile::tempdir().unwrap();
        let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
        let (id, dir) = one_session(&store).await;
        let frame = encode_records(&dir, &[user("torn")]).unwrap();
        append_raw(&dir.join(ARCHIVE), &frame[..frame.len() - 3]);
        let (stored, _w) = store.open(&id).await.unwrap().unwrap();
        assert_eq!(stored.archive.len(), 1);
        assert!(stored.repaired.iter().any(|r| r.contains("torn or corrupt")));
        let len = fs::metadata(dir.join(ARCHIVE)).unwrap().len();
        drop(_w);
        let (again, _w) = store.open(&id).await.unwrap().unwrap();
        assert!(again.repaired.is_empty());
        assert_eq!(fs::metadata(dir.join(ARCHIVE)).unwrap().len(), len);
    }

    #[tokio::test]
    async fn a_committed_compaction_interrupted_before_its_rename_is_completed() {
        let tmp = tempfile::tempdir().unwrap();
        let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
        let (id, dir) = one_session(&store).await;
        // The state between `replace`'s commit (commit.log replaced) and its rename.
        let new_records = encode_records(&dir, &[user("summary")]).unwrap();
        write_new_file(&rewrite_path(&dir.join(RECORDS)), &new_records).unwrap();
        let archive_len = fs::metadata(dir.join(ARCHIVE)).unwrap().len();
        let point = CommitPoint {
            records: new_records.len() as u64,
            archive: archive_len,
            replace: Some(Rewrite {
                len: new_records.len() as u64,
                crc: crc32c::crc32c(&new_records),
            }),
        };
        replace_file(&dir.join(COMMITS), &encode_records(&dir, &[point]).unwrap()).unwrap();
        assert_eq!(store.read(&id).await.unwrap().unwrap().records, vec![user("summary")]);
        let (stored, _w) = store.open(&id).await.unwrap().unwrap();
        assert_eq!(stored.records, vec![user("summary")]);
        assert!(!rewrite_path(&dir.join(RECORDS)).exists());
    }

    #[tokio::test]
    async fn an_uncommitted_compaction_is_discarded() {
        let tmp = tempfile::tempdir().unwrap();
        let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
        let (id, dir) = one_session(&store).await;
        let rewrite = rewrite_path(&dir.join(RECORDS));
        write_new_file(&rewrite, &encode_records(&dir, &[user("x")]).unwrap()).unwrap();
        let (stored, _w) = store.open(&id).await.unwrap().unwrap();
        assert_eq!(stored.records, vec![user("a"), user("b")]);
        assert!(!rewrite.exists());
    }

    #[tokio::test]
    async fn a_session_without_facts_does_not_exist() {
        let tmp = tempfile::tempdir().unwrap();
        let store = FileStore::open(tmp.path(), FileStoreOptions::default()).unwrap();
        // A create that crashed before writing its facts.
        fs::create_dir(tmp.path().join(SESSIONS).join("s-half")).unwrap();
        let id = SessionId::from("s-half");
        assert!(store.open(&id).await.unwrap().is_none());
        assert!(store.read(&id).await.unwrap().is_none());
        assert!(store.sessions().await.unwrap().is_empty());
        assert!(matches!(
            store.open(&SessionId::from("../x")).await,
            Err(StoreError::InvalidSessionId { .. })
        ));
    }
}
