//! The store journal (issue 47, fifth session): one write-ahead journal per live store, so that
//! a batch of N sessions' appends costs one `fdatasync` rather than N.
//!
//! Each append still writes its data frames and its `commit.log` frame (a copy of them,
//! [`journal`]) without syncing them; the batch then appends one frame to the store's journal,
//! `<root>/journal/<pid>-<random>.log`, holding for each append what redoes its `commit.log`
//! frame (session, `commit.log` generation, offset, the frame's payload), and syncs that file
//! alone. The journal is made by the store's first batch that has an entry for it (a store that
//! only reads makes none, nor `journal/`), and the store holds `flock(LOCK_EX)` on it from then
//! for its life: a journal whose lock can be taken is dead (its store crashed, or was dropped
//! with sessions not checkpointed).
//!
//! Recovery ([`recover_dead`]) runs when a store opens and before every open or read: each dead
//! journal's entries are put back into the `commit.log`s they were written for, when that file
//! is still of the entry's generation (a checkpoint replaces `commit.log` and bumps it, so older
//! entries are never applied), then the session's own recovery and checkpoint run, and the dead
//! journal is deleted. The journal is bounded ([`StoreJournal::truncate`]): past the bound every
//! session with entries in it is checkpointed and the journal is cut to nothing.

use super::recovery::{open_locked, take_lock};
use super::*;
use crate::store::frame::{encode_frame, read_frame, FrameRead, HEADER_BYTES};
use crate::store::MAX_RECORD_BYTES;
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::io::{BufReader, Write as _};
use std::time::{Duration, Instant};

/// The directory of the store journals, beside `sessions/`.
pub(super) const JOURNALS: &str = "journal";
/// Held `LOCK_EX` by a store recovering dead journals, `LOCK_SH` by one looking for them: a
/// journal being recovered is never taken for a live one.
const RECOVERY_LOCK: &str = "recovery.lock";
/// A live journal's name ends so; a journal being made ends in `.new` until it is locked.
const LIVE: &str = "log";
const MAKING: &str = "new";
/// The default bound of a store journal ([`FileStoreOptions::store_journal_bound`]): about
/// 0.1 s of appends at this machine's rate, and what one recovery reads at most per store.
pub const STORE_JOURNAL_BOUND: u64 = 32 << 20;
/// How long a look for dead journals waits for another store's recovery at most.
const RECOVERY_WAIT: Duration = Duration::from_secs(120);
/// How long a recovery waits for a session's lock before it takes the session for a live
/// writer's (a key written without the writer holds the lock for a moment).
const SESSION_LOCK_WAIT: Duration = Duration::from_millis(100);
/// Threads that checkpoint the sessions of a full store journal at once.
const SETTLE_THREADS: usize = 16;
/// Room a frame's wrapping takes beside its entries.
const BATCH_OVERHEAD: usize = 64;

/// One frame of a store journal: the entries of one batch (or of part of it, when they would
/// pass the frame cap).
#[derive(Deserialize)]
struct Batch {
    entries: Vec<Entry>,
}

/// What redoes one append's `commit.log` frame.
#[derive(Deserialize)]
struct Entry {
    session: String,
    generation: u64,
    at: u64,
    /// The payload of the `commit.log` frame (framing it gives the very bytes written).
    frame: Box<RawValue>,
}

/// A session with entries in the journal since its last truncation.
struct Member {
    id: SessionId,
    /// The generation its last entry was written for.
    generation: u64,
    files: Weak<Mutex<SessionFiles>>,
}

/// A store's journal: made (and locked, for the rest of the store's life) by the first batch
/// that has an entry for it, so a store that only reads writes nothing, not even `journal/`.
pub(super) struct StoreJournal {
    /// `<root>/journal/`, where the file is made.
    journals: PathBuf,
    /// The file's path, chosen when the store opens (`<pid>-<random>.log`), so that the store's
    /// own looks for dead journals leave it out, made or being made, without this lock.
    path: PathBuf,
    /// The file, locked `LOCK_EX` while it is open, once a batch needed it ([`make`]).
    file: Option<File>,
    end: u64,
    bound: u64,
    members: HashMap<PathBuf, Member>,
    /// A write or sync failed: the batches sync their own `commit.log`s, as before the journal.
    poisoned: bool,
}

pub(super) fn lock_journal(journal: &Mutex<StoreJournal>) -> MutexGuard<'_, StoreJournal> {
    journal
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Makes a store's journal at `path` in `journals` (and the directory, the first time): created
/// as `.new`, locked, then renamed, so no other store takes it for a dead one once it has its
/// final name. (Another store's recovery that locks the `.new` in the moment before this does
/// deletes it, and this fails; the next batch tries again.)
fn make(journals: &Path, path: &Path) -> Result<File, StoreError> {
    make_dir(journals)?;
    let making = path.with_extension(MAKING);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&making)
        .map_err(|e| StoreError::io(&making, "create", e))?;
    let made = flock(&file, FlockOperation::NonBlockingLockExclusive)
        .map_err(|e| StoreError::io(&making, "lock", e.into()))
        .and_then(|()| fs::rename(&making, path).map_err(|e| StoreError::io(path, "name", e)));
    if let Err(error) = made {
        // Not left behind (when another recovery holds it, it deletes it too).
        let _ = fs::remove_file(&making);
        return Err(error);
    }
    // Durable before any frame in it is counted on: a journal a power loss unnamed would
    // take its batches with it.
    sync_dir(journals)?;
    Ok(file)
}

/// Makes `journals` if it is missing, its entry in the root synced (a recovery looks for dead
/// journals there; a missing directory holds none).
fn make_dir(journals: &Path) -> Result<(), StoreError> {
    match fs::create_dir(journals) {
        Ok(()) => crate::store::log::sync_parent(journals),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(StoreError::io(journals, "create", e)),
    }
}

impl StoreJournal {
    /// This store's journal in `journals`, named but not made yet: nothing is written until a
    /// batch has an entry for it ([`StoreJournal::write`]).
    ///
    /// # Errors
    /// [`StoreError::Io`] when no random name can be drawn.
    pub(super) fn new(journals: PathBuf, bound: u64) -> Result<Self, StoreError> {
        let mut random = [0u8; 8];
        getrandom::fill(&mut random).map_err(|e| {
            StoreError::io(
                &journals,
                "name a journal in",
                io::Error::other(e.to_string()),
            )
        })?;
        let name = format!("{}-{:016x}", std::process::id(), u64::from_le_bytes(random));
        Ok(Self {
            path: journals.join(format!("{name}.{LIVE}")),
            journals,
            file: None,
            end: 0,
            bound: bound.max(1),
            members: HashMap::new(),
            poisoned: false,
        })
    }

    /// The journal's path, made or not.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The journal's file, once made.
    pub(super) fn file(&self) -> Option<&File> {
        self.file.as_ref()
    }

    /// Whether the journal passed its bound (the committer truncates it after the batch).
    pub(super) fn full(&self) -> bool {
        self.end > self.bound
    }

    /// Appends the frames holding `entries` (an append's index in the batch and its entry's
    /// JSON, [`entry_json`]), not synced; returns the indices the frames hold. An entry too large
    /// for a frame is left out (that append syncs its own `commit.log`), as is every entry of a
    /// poisoned journal. A failed write is cut back, or poisons the journal.
    ///
    /// The first batch with an entry makes the journal's file ([`make`]); when that
    /// fails, it holds none of the batch's appends (each syncs its own `commit.log`, as with a
    /// poisoned journal) and the next batch tries again.
    pub(super) fn write(&mut self, entries: Vec<(usize, Vec<u8>)>) -> Vec<usize> {
        if self.poisoned || entries.is_empty() {
            return Vec::new();
        }
        let mut bytes = Vec::new();
        let mut covered = Vec::new();
        let mut payload: Vec<u8> = Vec::new();
        let close = |payload: &mut Vec<u8>, bytes: &mut Vec<u8>| {
            if !payload.is_empty() {
                payload.extend_from_slice(b"]}");
                encode_frame(payload, bytes);
                payload.clear();
            }
        };
        for (i, entry) in entries {
            if entry.len() + BATCH_OVERHEAD > MAX_RECORD_BYTES {
                continue;
            }
            if payload.len() + entry.len() + BATCH_OVERHEAD > MAX_RECORD_BYTES {
                close(&mut payload, &mut bytes);
            }
            payload.extend_from_slice(if payload.is_empty() {
                br#"{"entries":["#.as_slice()
            } else {
                b",".as_slice()
            });
            payload.extend_from_slice(&entry);
            covered.push(i);
        }
        close(&mut payload, &mut bytes);
        if covered.is_empty() {
            return covered;
        }
        let file = match &mut self.file {
            Some(file) => file,
            None => match make(&self.journals, &self.path) {
                Ok(made) => self.file.insert(made),
                Err(error) => {
                    tracing::warn!(%error, "could not make the store journal; this batch's appends sync their own commit.log, the next batch tries again");
                    return Vec::new();
                }
            },
        };
        if let Err(error) = file.write_all_at(&bytes, self.end) {
            tracing::warn!(%error, path = %self.path.display(), "could not write the store journal");
            self.fail();
            return Vec::new();
        }
        self.end += bytes.len() as u64;
        covered
    }

    /// After a failed write or sync: cuts what was written off when it can, and stops using the
    /// journal (the appends sync their own `commit.log`s from here, as before it).
    pub(super) fn fail(&mut self) {
        self.poisoned = true;
        if let Some(file) = &self.file {
            let _ = file.set_len(self.end).and_then(|()| file.sync_data());
        }
    }

    /// Notes that `files`' session has an entry of its current generation in the journal.
    pub(super) fn note(&mut self, session: &Arc<Mutex<SessionFiles>>, files: &SessionFiles) {
        self.members.insert(
            files.dir.clone(),
            Member {
                id: files.id.clone(),
                generation: files.generation,
                files: Arc::downgrade(session),
            },
        );
    }

    /// Checkpoints every session with entries in the journal (their data files and
    /// `commit.log` synced, `commit.log` of a new generation), then cuts the journal to nothing
    /// (synced). On a failure the journal is kept whole, to be tried again after a later batch.
    pub(super) fn truncate(&mut self) -> Result<(), StoreError> {
        // The checkpoints run on up to `SETTLE_THREADS` threads at once (about four syncs a
        // session, which the file system merges when they are in flight together), so the
        // batch waiting behind them stalls for a few rounds of syncs rather than all of them
        // in turn. Each thread locks the sessions it settles, one at a time; no batch runs
        // meanwhile (this journal's lock is held), so no lock is taken in another order.
        let members: Vec<(&PathBuf, &Member)> = self.members.iter().collect();
        let per_thread = members.len().div_ceil(SETTLE_THREADS).max(1);
        let settle_all = |chunk: &[(&PathBuf, &Member)]| {
            chunk
                .iter()
                .try_for_each(|(dir, member)| settle(dir, member))
        };
        let settled: Vec<Result<(), StoreError>> = std::thread::scope(|scope| {
            let threads: Vec<_> = members
                .chunks(per_thread)
                .map(|chunk| {
                    std::thread::Builder::new()
                        .name("hookline-store-settle".into())
                        .spawn_scoped(scope, move || settle_all(chunk))
                        // No thread: this chunk is settled here.
                        .map_err(|_| settle_all(chunk))
                })
                .collect();
            threads
                .into_iter()
                .map(|thread| match thread {
                    Ok(thread) => thread.join().unwrap_or(Err(StoreError::Closed)),
                    Err(here) => here,
                })
                .collect()
        });
        settled.into_iter().collect::<Result<(), StoreError>>()?;
        if let Some(file) = &self.file {
            file.set_len(0)
                .and_then(|()| file.sync_data())
                .map_err(|e| StoreError::io(&self.path, "truncate", e))?;
        }
        self.end = 0;
        self.members.clear();
        Ok(())
    }

    /// Every entry is of a generation its session has left (each checkpointed since), so the
    /// journal is not needed after this store.
    fn settled(&self) -> bool {
        self.members.iter().all(|(dir, member)| {
            if let Some(files) = member.files.upgrade() {
                let files = lock(&files);
                if !files.released && files.journaled {
                    return false;
                }
            }
            generation(dir).is_ok_and(|g| g != Some(member.generation))
        })
    }
}

impl Drop for StoreJournal {
    /// A store dropped with every session checkpointed deletes its journal; otherwise the file
    /// is left, unlocked, for the next opener to recover (a writer dropped without `release`).
    /// A store that never made one has nothing to do.
    fn drop(&mut self) {
        if self.file.is_some() && self.settled() {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Makes sure `member`'s entries are no longer needed: a live writer is checkpointed; a session
/// let go of since (its writer dropped, or released with a checkpoint that failed) whose
/// `commit.log` is still of the entry's generation is recovered and checkpointed under its lock.
fn settle(dir: &Path, member: &Member) -> Result<(), StoreError> {
    if let Some(files) = member.files.upgrade() {
        let mut files = lock(&files);
        if !files.released {
            if files.journaled && files.poisoned {
                return Err(StoreError::Poisoned {
                    path: files.dir.clone(),
                });
            }
            return journal::checkpoint(&mut files);
        }
    }
    if generation(dir)? != Some(member.generation) {
        return Ok(());
    }
    match take_lock(dir, &member.id) {
        // Held: its holder's open recovered and checkpointed it (a new generation).
        Err(StoreError::Leased { .. }) => Ok(()),
        Err(error) => Err(error),
        Ok(lock) => open_locked(dir, &member.id, lock).map(drop),
    }
}

/// Truncates the journal when it passed its bound (after a batch was answered).
pub(super) fn truncate_full(journal: &Mutex<StoreJournal>) {
    let mut journal = lock_journal(journal);
    if journal.full() {
        if let Err(error) = journal.truncate() {
            tracing::warn!(%error, "could not truncate the store journal; it is tried again after the next batch");
        }
    }
}

/// The JSON of one entry: session `id`'s `commit.log` frame `frame` (header included), written
/// at `at` in generation `generation`.
pub(super) fn entry_json(id: &SessionId, generation: u64, at: u64, frame: &[u8]) -> Vec<u8> {
    let payload = frame.get(HEADER_BYTES as usize..).unwrap_or_default();
    let mut json = Vec::with_capacity(payload.len() + 96);
    json.extend_from_slice(br#"{"session":"#);
    // A session id is a validated name; serde quotes it all the same. Writing to a Vec cannot
    // fail.
    let _ = serde_json::to_writer(&mut json, id.as_str());
    let _ = write!(json, r#","generation":{generation},"at":{at},"frame":"#);
    json.extend_from_slice(payload);
    json.push(b'}');
    json
}

/// The generation of the session's `commit.log` in `dir` (its first frame's); `None` when
/// there is no such file or it starts with no whole frame.
pub(super) fn generation(dir: &Path) -> Result<Option<u64>, StoreError> {
    let path = dir.join(COMMITS);
    let file = match File::open(&path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::io(&path, "open", e)),
    };
    let len = file
        .metadata()
        .map_err(|e| StoreError::io(&path, "read metadata of", e))?
        .len();
    let read =
        read_frame(&mut BufReader::new(file), len).map_err(|e| StoreError::io(&path, "read", e))?;
    let FrameRead::Payload(payload) = read else {
        return Ok(None);
    };
    let point: CommitPoint =
        serde_json::from_slice(&payload).map_err(|source| StoreError::Decode {
            path: path.clone(),
            offset: 0,
            source,
        })?;
    Ok(Some(point.generation.unwrap_or(0)))
}

/// Recovers every dead journal in `journals` (all but `own`, this store's, made or being made):
/// looked for under
/// the shared recovery lock, recovered under the exclusive one, so that a journal another store
/// is recovering is waited for rather than taken for a live one. Cheap when there is none: a
/// listing of the directory.
///
/// # Errors
/// A journal that cannot be read or applied (it is kept, for the next try), or a recovery by
/// another store that does not end within [`RECOVERY_WAIT`].
pub(super) fn recover_dead(
    journals: &Path,
    sessions: &Path,
    own: Option<&Path>,
) -> Result<(), StoreError> {
    let others = other_journals(journals, own)?;
    // Only live journals (the usual case, another store beside this one): nothing to recover,
    // and nothing written (a read, `hookline replay`, leaves the store as it found it). A
    // journal that dies after this look is recovered by the next open or read, as one that
    // dies after the look below would be.
    if !others.iter().any(|path| is_dead(path)) {
        return Ok(());
    }
    let path = journals.join(RECOVERY_LOCK);
    let recovery = recovery::open_rw(&path)?;
    let dead: Vec<PathBuf> = {
        let _shared = wait_lock(&recovery, FlockOperation::NonBlockingLockShared, &path)?;
        others.into_iter().filter(|path| is_dead(path)).collect()
    };
    if dead.is_empty() {
        return Ok(());
    }
    let _exclusive = wait_lock(&recovery, FlockOperation::NonBlockingLockExclusive, &path)?;
    for path in dead {
        recover_journal(&path, sessions)?;
    }
    Ok(())
}

/// The journals (live or making) of `journals` but `own` (either way).
fn other_journals(journals: &Path, own: Option<&Path>) -> Result<Vec<PathBuf>, StoreError> {
    let listing = match fs::read_dir(journals) {
        Ok(listing) => listing,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(StoreError::io(journals, "list", e)),
    };
    let mut paths = Vec::new();
    for entry in listing {
        let path = entry
            .map_err(|e| StoreError::io(journals, "list", e))?
            .path();
        let journal = path
            .extension()
            .is_some_and(|ext| ext == LIVE || ext == MAKING);
        let mine = own.is_some_and(|own| path.with_extension(LIVE) == own);
        if journal && !mine {
            paths.push(path);
        }
    }
    paths.sort();
    Ok(paths)
}

/// The recovery lock, held until the guard is dropped.
struct Held<'a>(&'a File);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        let _ = flock(self.0, FlockOperation::Unlock);
    }
}

/// Takes `op` (a non-blocking flock, shared or exclusive: taking one converts the other) on
/// `file`, at `path`, trying again with a growing pause for at most [`RECOVERY_WAIT`].
fn wait_lock<'a>(file: &'a File, op: FlockOperation, path: &Path) -> Result<Held<'a>, StoreError> {
    let started = Instant::now();
    let mut pause = Duration::from_micros(200);
    loop {
        match flock(file, op) {
            Ok(()) => return Ok(Held(file)),
            Err(rustix::io::Errno::WOULDBLOCK) if started.elapsed() < RECOVERY_WAIT => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(e) => return Err(StoreError::io(path, "lock", e.into())),
        }
    }
}

/// Whether the journal at `path` is dead: its lock can be taken (and is given back at once).
fn is_dead(path: &Path) -> bool {
    let Ok(file) = File::open(path) else {
        return false;
    };
    flock(&file, FlockOperation::NonBlockingLockExclusive).is_ok()
}

/// Recovers one dead journal, under the exclusive recovery lock: locks it (a journal alive
/// again or gone is left alone), applies its entries session by session, deletes it.
fn recover_journal(path: &Path, sessions: &Path) -> Result<(), StoreError> {
    let Ok(file) = File::open(path) else {
        return Ok(());
    };
    if flock(&file, FlockOperation::NonBlockingLockExclusive).is_err() {
        return Ok(());
    }
    if path.extension().is_some_and(|ext| ext == LIVE) {
        let batches = scan::<Batch>(path)?.map_or_else(Vec::new, |s| s.records);
        let mut by_session: BTreeMap<String, Vec<Entry>> = BTreeMap::new();
        for entry in batches.into_iter().flat_map(|b| b.entries) {
            by_session
                .entry(entry.session.clone())
                .or_default()
                .push(entry);
        }
        // Every session is tried; a failure keeps the journal (the entries of the session that
        // failed may be its only copy of acknowledged appends) and is returned.
        let mut failed = None;
        for (session, entries) in by_session {
            if validate_session_id(&session).is_err() {
                continue;
            }
            let dir = sessions.join(&session);
            if let Err(error) = recover_session(&dir, &SessionId::from(session), &entries) {
                tracing::error!(%error, journal = %path.display(), "could not recover a session a dead store journal names; the journal is kept");
                failed.get_or_insert(error);
            }
        }
        if let Some(error) = failed {
            return Err(error);
        }
    }
    // A crash before this line leaves the journal to the next opener; its entries applied
    // already are of a generation their sessions have left by then.
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StoreError::io(path, "remove", e)),
    }
}

/// Applies a dead journal's `entries` of one session, when its `commit.log` is still of their
/// generation and its lock is free (a live writer's session is of a later generation by
/// construction: it was opened after a recovery, or after the dead store let it go with a
/// checkpoint), then recovers and checkpoints the session as `open` does.
fn recover_session(dir: &Path, id: &SessionId, entries: &[Entry]) -> Result<(), StoreError> {
    let due = |generation: Option<u64>| {
        generation.is_some_and(|g| entries.iter().any(|e| e.generation == g))
    };
    if !dir.is_dir() || !due(generation(dir)?) {
        return Ok(());
    }
    let started = Instant::now();
    let lock = loop {
        match take_lock(dir, id) {
            Ok(lock) => break lock,
            Err(StoreError::Leased { .. }) if started.elapsed() < SESSION_LOCK_WAIT => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(StoreError::Leased { .. }) => {
                tracing::warn!(session = %id, "a dead store journal names a session a live writer holds; its entries are left");
                return Ok(());
            }
            Err(error) => return Err(error),
        }
    };
    // Under the lock, the generation cannot move any more.
    let Some(generation) = generation(dir)? else {
        return Ok(());
    };
    apply(&dir.join(COMMITS), generation, entries)?;
    open_locked(dir, id, lock).map(drop)
}

/// Puts each entry of `generation` back into `commit.log` at its offset, in order, over whatever
/// the file holds there (a crash may have lost the unsynced frames). An entry past the file's
/// end (a gap) ends it: nothing after could be read anyway.
fn apply(path: &Path, generation: u64, entries: &[Entry]) -> Result<(), StoreError> {
    let mut bytes = fs::read(path).map_err(|e| StoreError::io(path, "read", e))?;
    let before = bytes.clone();
    for entry in entries.iter().filter(|e| e.generation == generation) {
        let Ok(at) = usize::try_from(entry.at) else {
            break;
        };
        if at > bytes.len() {
            break;
        }
        let mut frame = Vec::new();
        encode_frame(entry.frame.get().as_bytes(), &mut frame);
        let end = at + frame.len();
        if bytes.len() < end {
            bytes.resize(end, 0);
        }
        bytes[at..end].copy_from_slice(&frame);
    }
    if bytes == before {
        return Ok(());
    }
    // Not synced: the session's recovery replaces `commit.log` once it has synced what the
    // frames restore (a crash before that redoes this from the journal).
    recovery::open_existing(path)?
        .write_all_at(&bytes, 0)
        .map_err(|e| StoreError::io(path, "restore", e))
}
