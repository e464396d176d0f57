//! Writing appends: the committer thread, one batch's writes and syncs, the undo of a failed
//! append, and compaction. Each commit opens the data files it writes ([`DataFiles`]) and closes
//! them once synced. The session's idempotency keys waiting for a write go with its append (or
//! make an append of their own, without a commit point): `keys.log` is synced with the other
//! files of the batch.

use super::keys::KeyWrite;
use super::recovery::{open_existing, replace_file};
use super::*;

/// The data files one commit writes, open for that commit only. `records` and `archive` are
/// opened only when the append has frames for them, `commits` unless the append holds keys
/// only, and `keys` carries the keys written.
pub(super) struct DataFiles {
    records: Option<File>,
    archive: Option<File>,
    commits: Option<File>,
    keys: Option<KeyWrite>,
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
        })
    }

    /// The files to sync, with their names.
    fn written(&self) -> impl Iterator<Item = (&File, &'static str)> {
        [
            self.records.as_ref().map(|f| (f, RECORDS)),
            self.archive.as_ref().map(|f| (f, ARCHIVE)),
            self.commits.as_ref().map(|f| (f, COMMITS)),
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
pub(super) fn committer(
    mut rx: mpsc::Receiver<Job>,
    options: &FileStoreOptions,
    stats: &std::sync::Weak<Inner>,
) {
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
        let answers = commit_batch(now, options.sync_threads);
        if let Some(inner) = stats.upgrade() {
            inner.count_commit(&answers);
        }
        send_answers(answers);
    }
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

pub(super) fn commit_batch(batch: Vec<Job>, sync_threads: usize) -> Answers {
    let mut sessions = Vec::with_capacity(batch.len());
    let mut bytes = Vec::with_capacity(batch.len());
    let mut replies = Vec::with_capacity(batch.len());
    for job in batch {
        sessions.push(job.files);
        let append = !job.records.is_empty() || !job.archive.is_empty();
        bytes.push((job.records, job.archive));
        replies.push((job.reply, append));
    }
    let mut guards: Vec<MutexGuard<'_, SessionFiles>> = Vec::with_capacity(sessions.len());
    let mut results: Vec<Result<(Written, DataFiles), StoreError>> =
        Vec::with_capacity(sessions.len());
    for (files, (records, archive)) in sessions.iter().zip(&bytes) {
        let mut files = lock(files);
        results.push(write_append(&mut files, records, archive));
        guards.push(files);
    }
    // Every file written by a successful append, synced concurrently.
    let mut syncs: Vec<(usize, &File, &Path, &'static str)> = Vec::new();
    for (i, (files, result)) in guards.iter().zip(&results).enumerate() {
        if let Ok((_, data)) = result {
            syncs.extend(
                data.written()
                    .map(|(file, name)| (i, file, &*files.dir, name)),
            );
        }
    }
    let failures = sync_all(&syncs, sync_threads);
    drop(syncs);
    let mut failed: Vec<Option<StoreError>> = results.iter().map(|_| None).collect();
    for (i, error) in failures {
        if let Some(slot @ None) = failed.get_mut(i) {
            *slot = Some(error);
        }
    }
    let mut answers = Vec::with_capacity(replies.len());
    for ((files, result), failure) in guards.iter_mut().zip(results).zip(failed) {
        answers.push(match (result, failure) {
            (Ok((written, mut data)), None) => {
                files.records_end = written.records;
                files.archive_end = written.archive;
                files.commits_end = written.commits;
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
    // Let go of the sessions before answering, so a writer released right after its append
    // returned is not kept open by this batch.
    drop(guards);
    drop(sessions);
    replies
        .into_iter()
        .zip(answers)
        .map(|((reply, append), answer)| (reply, answer, append))
        .collect()
}

/// Opens the session's data files and writes one append's frames and its commit point (not yet
/// synced). On failure whatever was written is undone and the files are closed again.
pub(super) fn write_append(
    files: &mut SessionFiles,
    records: &[u8],
    archive: &[u8],
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
    };
    let opened = match encode_records(&files.dir.join(COMMITS), &[point]) {
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
        Ok(()) => Ok((
            Written {
                commits: files.commits_end + point.len() as u64,
                ..written
            },
            data,
        )),
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

/// Syncs every file, `threads` at a time; returns the failures by append index.
pub(super) fn sync_all(
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
                        StoreError::io(
                            dir.join(name),
                            "sync",
                            io::Error::other("sync thread panicked"),
                        ),
                    )
                })),
            }
        }
        failures
    })
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
    };
    let commits_path = files.dir.join(COMMITS);
    let point = encode_records(&commits_path, &[point])?;
    if let Err(e) = replace_file(&commits_path, &point) {
        let _ = fs::remove_file(&rewrite);
        undo(files, &mut data);
        return Err(e);
    }
    drop(data);
    // Committed: from here a crash finishes the rename on open.
    files.poisoned = true;
    fs::rename(&rewrite, &records_path).map_err(|e| StoreError::io(&records_path, "replace", e))?;
    sync_dir(&files.dir)?;
    files.records_end = records.len() as u64;
    files.archive_end = archive_end;
    files.commits_end = point.len() as u64;
    files.poisoned = false;
    Ok(())
}
