//! Writing appends: the committer thread, one batch's writes and syncs, the undo of a failed
//! append, and compaction. Each commit opens the data files it writes ([`DataFiles`]) and closes
//! them once synced. The session's idempotency keys waiting for a write go with its append (or
//! make an append of their own, without a commit point): `keys.log` is synced with the other
//! files of the batch. An append's commit frame carries a copy of its data-file frames
//! ([`journal`]), and the batch's frame in the store journal ([`store_journal`]) carries each
//! commit frame, so the store journal (with `keys.log` when an append has keys) is the only file
//! synced before the batch's appends are acknowledged (issue 47).

use super::journal;
use super::keys::KeyWrite;
use super::recovery::{open_existing, replace_file};
use super::store_journal;
use super::*;
use std::sync::mpsc as std_mpsc;

/// The data files one commit writes, open for that commit only. `records` and `archive` are
/// opened only when the append has frames for them, `commits` unless the append holds keys
/// only, and `keys` carries the keys written.
pub(super) struct DataFiles {
    records: Option<File>,
    archive: Option<File>,
    commits: Option<File>,
    keys: Option<KeyWrite>,
    /// The commit frame holds a copy of the data-file frames: `records` and `archive` are
    /// written but not synced (the next checkpoint syncs them).
    journaled: bool,
    /// Where the journaled commit frame went in `commit.log`, and the frame: what the store
    /// journal's entry for it redoes.
    entry: Option<(u64, Vec<u8>)>,
    /// The store journal holds this append's entry: `commit.log` is not synced either.
    in_store_journal: bool,
}

impl DataFiles {
    /// Opens the files an append of `records` and `archive` bytes writes. They exist: `create`
    /// made them and `open` repaired them, so a missing one is an error, never a fresh file.
    fn open(dir: &Path, records: bool, archive: bool) -> Result<Self, StoreError> {
        let open = |name: &str, wanted: bool| wanted.then(|| open_existing(&dir.join(name)));
        Ok(Self {
            records: open(RECORDS, records).transpose()?,
            archive: open(ARCHIVE, archive).transpose()?,
            commits: open(COMMITS, records || archive).transpose()?,
            keys: None,
            journaled: false,
            entry: None,
            in_store_journal: false,
        })
    }

    /// The files to sync, with their names.
    fn written(&self) -> impl Iterator<Item = (&File, &'static str)> {
        let data = !self.journaled;
        let commits = !self.in_store_journal;
        [
            self.records.as_ref().filter(|_| data).map(|f| (f, RECORDS)),
            self.archive.as_ref().filter(|_| data).map(|f| (f, ARCHIVE)),
            self.commits
                .as_ref()
                .filter(|_| commits)
                .map(|f| (f, COMMITS)),
            self.keys
                .as_ref()
                .and_then(|k| k.file.as_ref())
                .map(|f| (f, keys::KEYS_LOG)),
        ]
        .into_iter()
        .flatten()
    }
}

/// The committer: takes every queued append (up to [`MAX_BATCH`] when grouping), writes them,
/// syncs all their files at once, and answers each.
///
/// It holds the store journal only for a batch: the store's last handle drops it (and a clean
/// store's journal is deleted) there and then, not when this thread next wakes.
pub(super) fn committer(
    mut rx: mpsc::Receiver<Job>,
    options: &FileStoreOptions,
    stats: &std::sync::Weak<Inner>,
    journal: &std::sync::Weak<Mutex<StoreJournal>>,
) {
    let mut carry: Vec<Job> = Vec::new();
    let mut pool = SyncPool::new(options.sync_threads);
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
        let Some(journal) = journal.upgrade() else {
            // The store is gone, so are these appends' callers (a caller holds the store until
            // it is answered): nothing is written for them.
            for job in now.into_iter().chain(carry.drain(..)) {
                let _ = job.reply.send(Err(StoreError::Closed));
            }
            continue;
        };
        let committed = commit_batch(now, &mut pool, &journal);
        if let Some(inner) = stats.upgrade() {
            inner.count_commit(&committed.answers, committed.syncs);
        }
        // Let go of the journal before answering (kept only to truncate it): once its last
        // append is answered, dropping the store drops the journal.
        let full = committed.journal_full.then_some(journal);
        send_answers(committed.answers);
        checkpoint_full(committed.full);
        if let Some(journal) = full {
            store_journal::truncate_full(&journal);
        }
    }
}

/// Checkpoints the sessions whose journal passed [`journal::JOURNAL_BOUND`], after their
/// appends were answered (off their acknowledgement, though ahead of the next batch). A failure
/// leaves the journal to grow and be folded by the next checkpoint or recovery; the writer is
/// poisoned only when `commit.log` may have been replaced (see [`journal::checkpoint`]).
pub(super) fn checkpoint_full(full: Vec<Arc<Mutex<SessionFiles>>>) {
    for files in full {
        let mut files = lock(&files);
        if let Err(error) = journal::checkpoint(&mut files) {
            tracing::warn!(%error, "could not checkpoint a session's journal");
        }
    }
}

/// What one batch's commit did: the answers to send, the syncs issued, and the sessions whose
/// journal is due for a checkpoint.
pub(super) struct Committed {
    pub(super) answers: Answers,
    pub(super) syncs: u64,
    pub(super) full: Vec<Arc<Mutex<SessionFiles>>>,
    /// The store journal passed its bound: it is truncated after the answers.
    pub(super) journal_full: bool,
}

/// What one append wrote, so it can be synced, then kept or undone.
pub(super) struct Written {
    records: u64,
    archive: u64,
    commits: u64,
}

/// The answers of one batch, to send once the counters are updated; each marked whether it was
/// an append (records or archive entries) rather than keys alone.
pub(super) type Answers = Vec<(
    oneshot::Sender<Result<(), StoreError>>,
    Result<(), StoreError>,
    bool,
)>;

pub(super) fn send_answers(answers: Answers) {
    for (reply, answer, _) in answers {
        // The caller may have stopped waiting; the append is durable or undone either way.
        let _ = reply.send(answer);
    }
}

/// Sentinel index of the store journal among a batch's syncs.
const STORE_JOURNAL: usize = usize::MAX;

pub(super) fn commit_batch(
    batch: Vec<Job>,
    pool: &mut SyncPool,
    journal: &Mutex<StoreJournal>,
) -> Committed {
    // The store journal first, then the sessions: the order its truncation takes them in too.
    let mut journal = store_journal::lock_journal(journal);
    let mut sessions = Vec::with_capacity(batch.len());
    let mut bytes = Vec::with_capacity(batch.len());
    let mut replies = Vec::with_capacity(batch.len());
    for job in batch {
        sessions.push(job.files);
        let append = !job.records.is_empty() || !job.archive.is_empty();
        bytes.push((job.records, job.archive, job.journal));
        replies.push((job.reply, append));
    }
    let mut guards: Vec<MutexGuard<'_, SessionFiles>> = Vec::with_capacity(sessions.len());
    let mut results: Vec<Result<(Written, DataFiles), StoreError>> =
        Vec::with_capacity(sessions.len());
    for (files, (records, archive, journal)) in sessions.iter().zip(&bytes) {
        let mut files = lock(files);
        results.push(write_append(&mut files, records, archive, *journal));
        guards.push(files);
    }
    // One store-journal frame redoes every journaled commit frame of the batch (issue 47):
    // their `commit.log`s are not synced.
    let entries = guards
        .iter()
        .zip(&results)
        .enumerate()
        .filter_map(|(i, (files, result))| {
            let (_, data) = result.as_ref().ok()?;
            let (at, frame) = data.entry.as_ref()?;
            Some((
                i,
                store_journal::entry_json(&files.id, files.generation, *at, frame),
            ))
        })
        .collect();
    // The batch's first entry makes the store journal; if that fails, the appends sync their
    // own `commit.log`s (the next batch tries again).
    let covered = journal.write(entries);
    for &i in &covered {
        if let Some(Ok((_, data))) = results.get_mut(i) {
            data.in_store_journal = true;
        }
    }
    // Every file written by a successful append, synced concurrently: the store journal, and
    // the files of appends it does not hold (keys, plain points, entries over the frame cap).
    let mut syncs: Vec<(usize, &File, &Path, &'static str)> = Vec::new();
    if let Some(file) = journal.file().filter(|_| !covered.is_empty()) {
        syncs.push((STORE_JOURNAL, file, journal.path(), ""));
    }
    for (i, (files, result)) in guards.iter().zip(&results).enumerate() {
        if let Ok((_, data)) = result {
            syncs.extend(
                data.written()
                    .map(|(file, name)| (i, file, &*files.dir, name)),
            );
        }
    }
    let mut failures = sync_all(&syncs, pool);
    let mut synced = syncs.len() as u64;
    drop(syncs);
    if let Some(at) = failures.iter().position(|(i, _)| *i == STORE_JOURNAL) {
        // The journal's sync failed: its appends sync their own `commit.log`s instead, and
        // the journal is not used again by this store.
        let (_, error) = failures.swap_remove(at);
        tracing::warn!(%error, "could not sync the store journal; its appends sync their own commit.log");
        journal.fail();
        let own: Vec<(usize, &File, &Path, &'static str)> = covered
            .iter()
            .filter_map(|&i| {
                let (_, data) = results.get(i)?.as_ref().ok()?;
                Some((i, data.commits.as_ref()?, &*guards.get(i)?.dir, COMMITS))
            })
            .collect();
        failures.extend(sync_all(&own, pool));
        synced += own.len() as u64;
    }
    let mut failed: Vec<Option<StoreError>> = results.iter().map(|_| None).collect();
    for (i, error) in failures {
        if let Some(slot @ None) = failed.get_mut(i) {
            *slot = Some(error);
        }
    }
    let mut answers = Vec::with_capacity(replies.len());
    for (((files, result), failure), session) in
        guards.iter_mut().zip(results).zip(failed).zip(&sessions)
    {
        answers.push(match (result, failure) {
            (Ok((written, mut data)), None) => {
                files.records_end = written.records;
                files.archive_end = written.archive;
                files.commits_end = written.commits;
                files.journaled |= data.journaled;
                if data.in_store_journal {
                    journal.note(session, files);
                }
                finish_keys(files, &mut data, true);
                Ok(())
            }
            (Ok((_, mut data)), Some(e)) => {
                undo(files, &mut data);
                Err(e)
            }
            (Err(e), _) => Err(e),
        });
        // The data files close here, with the commit (the last `DataFiles` of this append).
    }
    let due: Vec<bool> = guards
        .iter()
        .map(|files| files.journaled && files.commits_end > journal::JOURNAL_BOUND)
        .collect();
    // Let go of the sessions before answering, so a writer released right after its append
    // returned is not kept open by this batch (a session due for a checkpoint is kept until
    // it is made; its release waits for that, or makes it itself).
    drop(guards);
    let journal_full = journal.full();
    drop(journal);
    let full = sessions
        .into_iter()
        .zip(due)
        .filter_map(|(files, due)| due.then_some(files))
        .collect();
    let answers = replies
        .into_iter()
        .zip(answers)
        .map(|((reply, append), answer)| (reply, answer, append))
        .collect();
    Committed {
        answers,
        syncs: synced,
        full,
        journal_full,
    }
}

/// Opens the session's data files and writes one append's frames and its commit point (not yet
/// synced). On failure whatever was written is undone and the files are closed again.
pub(super) fn write_append(
    files: &mut SessionFiles,
    records: &[u8],
    archive: &[u8],
    journal: bool,
) -> Result<(Written, DataFiles), StoreError> {
    if files.poisoned {
        return Err(StoreError::Poisoned {
            path: files.dir.clone(),
        });
    }
    let written = Written {
        records: files.records_end + records.len() as u64,
        archive: files.archive_end + archive.len() as u64,
        commits: files.commits_end,
    };
    let keys = match files.keys.as_mut() {
        Some(log) => log.prepare()?,
        None => None,
    };
    let point = CommitPoint {
        records: written.records,
        archive: written.archive,
        replace: None,
        keys: keys.as_ref().map(|k| k.seq),
        journal: None,
        generation: None,
    };
    // The journal frame (issue 47); a plain point, with the data files synced too, for an
    // append too large to copy into one frame (or a store without the journal).
    let frame = journal
        .then(|| {
            journal::journal_frame(
                &point,
                files.records_end,
                records,
                files.archive_end,
                archive,
            )
        })
        .flatten();
    let journaled = frame.is_some();
    let frame = match frame {
        Some(frame) => Ok(frame),
        None => encode_records(&files.dir.join(COMMITS), &[point]),
    };
    let opened = match frame {
        Ok(point) => DataFiles::open(&files.dir, !records.is_empty(), !archive.is_empty())
            .map(|data| (point, data)),
        Err(e) => Err(e),
    };
    let (point, mut data) = match opened {
        Ok(opened) => opened,
        Err(e) => {
            if let (Some(log), Some(keys)) = (files.keys.as_mut(), keys) {
                log.finish(keys, false);
            }
            return Err(e);
        }
    };
    data.keys = keys;
    data.journaled = journaled;
    if data.commits.is_none() {
        // Keys alone: `keys.log` is their only file, and no commit point names them.
        return Ok((written, data));
    }
    let write = |file: Option<&File>, bytes: &[u8], at: u64, name: &str| match file {
        Some(file) => file
            .write_all_at(bytes, at)
            .map_err(|e| StoreError::io(files.dir.join(name), "append to", e)),
        None => Ok(()),
    };
    let outcome = write(data.records.as_ref(), records, files.records_end, RECORDS)
        .and_then(|()| write(data.archive.as_ref(), archive, files.archive_end, ARCHIVE))
        .and_then(|()| write(data.commits.as_ref(), &point, files.commits_end, COMMITS));
    match outcome {
        Ok(()) => {
            let written = Written {
                commits: files.commits_end + point.len() as u64,
                ..written
            };
            if journaled {
                data.entry = Some((files.commits_end, point));
            }
            Ok((written, data))
        }
        Err(e) => {
            undo(files, &mut data);
            Err(e)
        }
    }
}

/// Keeps the keys an append wrote, or (`synced` false) cuts them off to wait for the next write.
fn finish_keys(files: &mut SessionFiles, data: &mut DataFiles, synced: bool) {
    if let (Some(log), Some(keys)) = (files.keys.as_mut(), data.keys.take()) {
        log.finish(keys, synced);
    }
}

/// Cuts every file `data` holds back to its last committed end; poisons the writer if that
/// fails.
pub(super) fn undo(files: &mut SessionFiles, data: &mut DataFiles) {
    finish_keys(files, data, false);
    let cut = [
        (data.commits.as_ref(), files.commits_end),
        (data.records.as_ref(), files.records_end),
        (data.archive.as_ref(), files.archive_end),
    ]
    .into_iter()
    .filter_map(|(file, end)| file.map(|f| (f, end)))
    .try_for_each(|(file, end)| file.set_len(end).and_then(|()| file.sync_data()));
    if cut.is_err() {
        files.poisoned = true;
    }
}

/// The threads that sync a batch's files beside the committer, started once and kept (issue 47:
/// a batch used to start its own, about 20 us a thread on a loaded 2-core machine, three per
/// append). At most `threads - 1` helpers, started as batches first need them; they end when the
/// committer does (their senders are dropped).
///
/// Each helper has a queue of its own and the committer hands each its files directly, so a
/// batch's syncs start together: with one queue shared behind a lock, each helper that took a
/// job woke the next one in turn, and the last of fifteen started its sync a chain of wake-ups
/// after the first (the file system merges only syncs that are in flight together).
pub(super) struct SyncPool {
    /// Threads syncing at once at most, the committer's own included.
    threads: usize,
    helpers: Vec<std_mpsc::Sender<SyncJob>>,
}

/// One file to sync: a handle of its own (`File::try_clone`, so a helper needs no borrow), its
/// place in the batch's list, and where to say how it went.
struct SyncJob {
    file: File,
    slot: usize,
    done: std_mpsc::Sender<(usize, io::Result<()>)>,
}

impl SyncJob {
    fn run(self) {
        let synced = self.file.sync_data();
        // The committer waits for every slot; it is gone only if it panicked.
        let _ = self.done.send((self.slot, synced));
    }
}

impl SyncPool {
    pub(super) fn new(threads: usize) -> Self {
        Self {
            threads: threads.max(1),
            helpers: Vec::new(),
        }
    }

    /// Starts helpers up to `wanted` (bounded by the pool's size); a helper that cannot start
    /// leaves the work to the threads that did.
    fn grow(&mut self, wanted: usize) {
        let wanted = wanted.min(self.threads - 1);
        while self.helpers.len() < wanted {
            let (jobs, queue) = std_mpsc::channel::<SyncJob>();
            let started = std::thread::Builder::new()
                .name("hookline-store-sync".into())
                .spawn(move || {
                    for job in queue {
                        job.run();
                    }
                });
            if started.is_err() {
                break;
            }
            self.helpers.push(jobs);
        }
    }
}

/// Syncs every file, the committer and the pool's helpers at once; returns the failures by
/// append index. Every file is synced before this returns (a helper that died before answering
/// counts as a failed sync of its file).
pub(super) fn sync_all(
    files: &[(usize, &File, &Path, &'static str)],
    pool: &mut SyncPool,
) -> Vec<(usize, StoreError)> {
    let failure = |(i, _, dir, name): &(usize, &File, &Path, &'static str), e: io::Error| {
        (*i, StoreError::io(dir.join(name), "sync", e))
    };
    if files.len() <= 1 || pool.threads <= 1 {
        return files
            .iter()
            .filter_map(|entry| entry.1.sync_data().err().map(|e| failure(entry, e)))
            .collect();
    }
    pool.grow(files.len() - 1);
    let (done, answers) = std_mpsc::channel();
    let mut results: Vec<Option<io::Result<()>>> = files.iter().map(|_| None).collect();
    // The files are dealt round the committer (turn 0) and the helpers: file `slot` goes to
    // turn `slot % (helpers + 1)`. A helper's are sent now, the committer's synced below; a file
    // whose handle cannot be cloned (no descriptor left) or whose helper is gone is synced here.
    let turns = pool.helpers.len() + 1;
    let mut queued = 0;
    let mut own = Vec::new();
    for (slot, entry) in files.iter().enumerate() {
        let turn = slot % turns;
        if turn == 0 {
            own.push(slot);
            continue;
        }
        match entry.1.try_clone() {
            Ok(file) => {
                let job = SyncJob {
                    file,
                    slot,
                    done: done.clone(),
                };
                match pool.helpers[turn - 1].send(job) {
                    Ok(()) => queued += 1,
                    Err(std_mpsc::SendError(job)) => results[slot] = Some(job.file.sync_data()),
                }
            }
            Err(_) => results[slot] = Some(entry.1.sync_data()),
        }
    }
    drop(done);
    for slot in own {
        results[slot] = Some(files[slot].1.sync_data());
    }
    // The rest are in helpers' hands; each answers once (or drops its sender by panicking).
    for _ in 0..queued {
        match answers.recv() {
            Ok((slot, synced)) => {
                if let Some(result) = results.get_mut(slot) {
                    *result = Some(synced);
                }
            }
            Err(_) => break,
        }
    }
    files
        .iter()
        .zip(results)
        .filter_map(|(entry, result)| match result {
            Some(Ok(())) => None,
            Some(Err(e)) => Some(failure(entry, e)),
            None => Some(failure(entry, io::Error::other("sync thread panicked"))),
        })
        .collect()
}

/// Compaction: the new records, the archive entries and a replacing commit point, so a crash
/// leaves the old records or the new ones (see [`CommitPoint::replace`]).
pub(super) fn replace(
    files: &mut SessionFiles,
    records: &[u8],
    archive: &[u8],
) -> Result<(), StoreError> {
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
    let mut data = match DataFiles::open(&files.dir, false, true) {
        Ok(data) => data,
        Err(e) => {
            let _ = fs::remove_file(&rewrite);
            return Err(e);
        }
    };
    let appended = data.archive.as_ref().map_or(Ok(()), |file| {
        file.write_all_at(archive, files.archive_end)
            .and_then(|()| file.sync_data())
    });
    if let Err(e) = appended {
        let _ = fs::remove_file(&rewrite);
        undo(files, &mut data);
        return Err(StoreError::io(files.dir.join(ARCHIVE), "append to", e));
    }
    let point = CommitPoint {
        records: records.len() as u64,
        archive: archive_end,
        replace: Some(Rewrite {
            len: records.len() as u64,
            crc: crc32c::crc32c(records),
        }),
        keys: None,
        journal: None,
        // A replaced `commit.log` is of the next generation (see `journal::checkpoint`).
        generation: Some(files.generation + 1),
    };
    let commits_path = files.dir.join(COMMITS);
    let point = encode_records(&commits_path, &[point])?;
    if let Err(e) = replace_file(&commits_path, &point) {
        let _ = fs::remove_file(&rewrite);
        undo(files, &mut data);
        return Err(e);
    }
    drop(data);
    files.generation += 1;
    // Committed: from here a crash finishes the rename on open.
    files.poisoned = true;
    fs::rename(&rewrite, &records_path).map_err(|e| StoreError::io(&records_path, "replace", e))?;
    sync_dir(&files.dir)?;
    files.records_end = records.len() as u64;
    files.archive_end = archive_end;
    files.commits_end = point.len() as u64;
    files.journaled = false;
    files.poisoned = false;
    Ok(())
}
