//! Reading and repairing sessions on disk: creating one, taking its lock, reading its files cut
//! to the last commit point, and the repairs `open` makes (torn tails, uncommitted tails,
//! interrupted compactions).

use super::*;
use crate::store::api::{AnsweredApprovals, ArchivePage, ArchiveSummary, OpenedSession};
use crate::store::log::{fold_frames, frames_of, scan_bytes};
use hookline_messages::record::ApprovalRecord;
use std::io::{BufReader, Read as _, Seek as _, SeekFrom};

/// Replaces `path` with `bytes` atomically (temporary file, sync, rename, directory sync).
pub(super) fn replace_file(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let tmp = rewrite_path(path);
    if let Err(e) = write_new_file(&tmp, bytes) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    fs::rename(&tmp, path).map_err(|e| StoreError::io(path, "replace", e))?;
    crate::store::log::sync_parent(path)
}

pub(super) fn open_rw(path: &Path) -> Result<File, StoreError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| StoreError::io(path, "open", e))
}

/// Opens a data file that must exist, for writing at offsets and cutting back.
pub(super) fn open_existing(path: &Path) -> Result<File, StoreError> {
    OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| StoreError::io(path, "open", e))
}

/// Takes the session's lock without waiting.
pub(super) fn take_lock(dir: &Path, session: &SessionId) -> Result<File, StoreError> {
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

/// The highest `n` of the `s<n>` session directories under `sessions` (0 with none).
pub(super) fn highest_numbered(sessions: &Path) -> Result<u64, StoreError> {
    let entries = fs::read_dir(sessions).map_err(|e| StoreError::io(sessions, "list", e))?;
    Ok(entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix('s')?
                .parse::<u64>()
                .ok()
        })
        .max()
        .unwrap_or(0))
}

pub(super) fn create_session(
    sessions: &Path,
    new: NewSession,
    records: &[u8],
    next_id: &AtomicU64,
) -> Result<(SessionFacts, SessionFiles), StoreError> {
    let mut claimed = None;
    for _ in 0..ID_TRIES {
        // `s1`, `s2`, ...: short, ordered ids for a store one machine owns. Another process
        // sharing the directory may have taken the next number: the claim below fails, and the
        // counter catches up with the highest number there before the next try (a process
        // whose counter lagged by more than `ID_TRIES` numbers once ran out of tries).
        let n = next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let id = SessionId::new(format!("s{n}"));
        let dir = sessions.join(id.as_str());
        // The directory is the atomic claim on the id, across threads and processes.
        match fs::create_dir(&dir) {
            Ok(()) => {
                claimed = Some((id, dir));
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                next_id.fetch_max(highest_numbered(sessions)?, Ordering::Relaxed);
            }
            Err(e) => return Err(StoreError::io(&dir, "create", e)),
        }
    }
    let Some((id, dir)) = claimed else {
        return Err(StoreError::NoFreeId { tries: ID_TRIES });
    };
    sync_dir(sessions)?;
    let lock = take_lock(&dir, &id)?;
    let info = SessionFacts::new(id.clone(), new);
    let point = CommitPoint::base(records.len() as u64, 0, 0);
    let point = encode_records(&dir.join(COMMITS), &[point])?;
    write_new_file(&dir.join(RECORDS), records)?;
    write_new_file(&dir.join(ARCHIVE), &[])?;
    write_new_file(&dir.join(COMMITS), &point)?;
    // The facts last: a session without them was never created (open and read say `None`).
    let meta = encode_records(&dir.join(META), std::slice::from_ref(&info))?;
    write_new_file(&dir.join(META), &meta)?;
    sync_dir(&dir)?;
    let files = SessionFiles {
        id,
        generation: 0,
        records_end: records.len() as u64,
        archive_end: 0,
        commits_end: point.len() as u64,
        dir,
        poisoned: false,
        journaled: false,
        released: false,
        lock,
        keys: None,
    };
    Ok((info, files))
}

/// What a reading does with the committed archive entries, one at a time in order: keeps them
/// (`read`: inspection, replay), folds them (`open`, issue 49 item 5: the archive grows with
/// every turn, and a conversation needs only its [`ArchiveSummary`]) or keeps one page of them
/// ([`ArchivePage`], `GET /v1/sessions/{id}/archive`).
pub(super) trait ArchiveSink {
    fn push(&mut self, entry: ArchiveEntry);
}

/// A page of the archive being read: the entries from `offset`, at most `limit` of them, and
/// the count of everything before and after.
pub(super) struct PageSink {
    offset: u64,
    limit: usize,
    page: ArchivePage,
}

impl ArchiveSink for PageSink {
    fn push(&mut self, entry: ArchiveEntry) {
        let at = self.page.total;
        self.page.total += 1;
        if at < self.offset {
            if matches!(entry, ArchiveEntry::UserMessage { .. }) {
                self.page.turns_before += 1;
            }
        } else if self.page.entries.len() < self.limit {
            self.page.entries.push(entry);
        }
    }
}

impl ArchiveSink for Vec<ArchiveEntry> {
    fn push(&mut self, entry: ArchiveEntry) {
        Vec::push(self, entry);
    }
}

impl ArchiveSink for ArchiveSummary {
    fn push(&mut self, entry: ArchiveEntry) {
        self.add(entry);
    }
}

/// A session's files as they stand, cut to the last commit point they satisfy.
pub(super) struct Reading<A> {
    info: SessionFacts,
    records: Vec<Record>,
    archive: A,
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
    /// `commit.log` holds journal frames: `open` checkpoints.
    journaled: bool,
    /// `commit.log`'s generation (its first point's).
    generation: u64,
    /// Bytes of each file the journal replaced, from the offset given to the committed end.
    records_restore: Option<(u64, Vec<u8>)>,
    archive_restore: Option<(u64, Vec<u8>)>,
}

/// Reads a session without changing anything; `None` when it has no facts.
///
/// The committed state is the last plain point both data files reach (at a frame boundary,
/// with its keys in `keys.log`), followed by the journal frames written after it, each put
/// back over whatever the unsynced data files hold (issue 47, [`journal::replay`]).
pub(super) fn read_files<A: ArchiveSink>(
    dir: &Path,
    mut archive_list: A,
) -> Result<Option<Reading<A>>, StoreError> {
    let Some(meta) = scan::<SessionFacts>(&dir.join(META))? else {
        return Ok(None);
    };
    let Some(info) = meta.records.last().cloned() else {
        return Ok(None);
    };
    // `commit.log` is read before the data files: a live writer writes an append's data
    // frames before its commit frame, so every frame read here has its data on disk by now.
    let points = scan::<CommitPoint>(&dir.join(COMMITS))?.map_or_else(Vec::new, |s| s.records);
    let records_path = dir.join(RECORDS);
    let archive_path = dir.join(ARCHIVE);
    let rewrite = rewrite_path(&records_path);
    let last_plain = points.iter().rposition(|p| p.journal.is_none());
    let pending_rewrite = match last_plain.and_then(|i| points[i].replace) {
        Some(expected) => rewrite_matches(&rewrite, expected)?,
        None => false,
    };
    let records_source = if pending_rewrite {
        &rewrite
    } else {
        &records_path
    };
    let mut records_bytes = read_or_empty(records_source)?;
    let records = scan_bytes::<Record>(records_source, &records_bytes)?;
    // The archive is checked frame by frame here and decoded once its committed end is known,
    // never held whole (it only grows: a long session's is megabytes).
    let archive = frames_of(&archive_path)?;
    let mut records_torn = torn_at(
        records_source,
        records.end,
        records.reason,
        records_bytes.len() as u64,
    );
    let mut archive_torn = torn_at(&archive_path, archive.end, archive.reason, archive.len);
    let boundary = |ends: &[u64], at: u64| at == 0 || ends.binary_search(&at).is_ok();
    let keys = keys::durable_seq(dir)?;
    // The latest plain point both logs reach, at a frame boundary, whose keys `keys.log`
    // holds. No points at all is a session written before commit points existed: its valid
    // frames are all committed.
    let chosen = points.iter().rposition(|p| {
        p.journal.is_none()
            && p.records <= records.end
            && p.archive <= archive.end
            && boundary(&records.ends, p.records)
            && boundary(&archive.ends, p.archive)
            && p.keys.is_none_or(|seq| seq <= keys)
    });
    let (mut records_end, mut archive_end, mut cut_points) = match chosen {
        Some(i) => (points[i].records, points[i].archive, i + 1 != points.len()),
        None if points.is_empty() => (records.end, archive.end, false),
        // Points that no log reaches are damage, not a crash: keep every valid frame (open
        // rewrites the points to match) rather than cut synced records off.
        None => (records.end, archive.end, true),
    };
    // The journal frames behind the chosen point. A plain point the logs do not reach was
    // never acknowledged (its append syncs the data files), and no later append was made
    // before it was: the replay stops there.
    let mut replay = journal::Replay::default();
    // The archive's bytes from the trusted point on: all the journal can replace.
    let archive_base = archive_end;
    let mut archive_bytes = read_from(&archive_path, archive_base)?;
    if let Some(i) = chosen {
        let after = &points[i + 1..];
        replay = journal::replay(
            after,
            &mut records_bytes,
            &mut archive_bytes,
            (records_end, archive_end),
            keys,
        );
        if replay.applied > 0 {
            records_end = replay.records_end;
            archive_end = replay.archive_end;
        }
        cut_points = replay.applied < after.len();
    }
    let keep = |ends: &[u64], end: u64| ends.partition_point(|&e| e <= end);
    let (records_scan_end, archive_scan_end) = (records.end, archive.end);
    let record_list = match replay.records_from {
        // The journal put bytes back: the records are those of the content it made.
        Some(_) => {
            records_torn = None;
            let cut = usize::try_from(records_end).unwrap_or(usize::MAX);
            scan_bytes::<Record>(
                records_source,
                &records_bytes[..cut.min(records_bytes.len())],
            )?
            .records
        }
        None => {
            let mut list = records.records;
            list.truncate(keep(&records.ends, records_end));
            list
        }
    };
    if replay.archive_from.is_some() {
        archive_torn = None;
    }
    // The committed archive: the file's frames up to the trusted point, then those of the
    // bytes after it (the journal's, where it replaced them).
    let mut push = |entry| {
        archive_list.push(entry);
        Ok(())
    };
    match File::open(&archive_path) {
        Ok(file) => fold_frames(&archive_path, BufReader::new(file), archive_base, &mut push)?,
        Err(e) if e.kind() == io::ErrorKind::NotFound && archive_base == 0 => {}
        Err(e) => return Err(StoreError::io(&archive_path, "open", e)),
    }
    let tail = usize::try_from(archive_end.saturating_sub(archive_base)).unwrap_or(usize::MAX);
    let tail = &archive_bytes[..tail.min(archive_bytes.len())];
    fold_frames(&archive_path, tail, tail.len() as u64, &mut push)?;
    // `bytes` holds the file from `base` on.
    let restore = |from: Option<u64>, base: u64, end: u64, mut bytes: Vec<u8>| {
        from.map(|from| {
            bytes.truncate(usize::try_from(end.saturating_sub(base)).unwrap_or(usize::MAX));
            let from_at = usize::try_from(from.saturating_sub(base))
                .unwrap_or(usize::MAX)
                .min(bytes.len());
            (from, bytes.split_off(from_at))
        })
    };
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
        journaled: points.iter().any(|p| p.journal.is_some()),
        generation: points.first().and_then(|p| p.generation).unwrap_or(0),
        records_restore: restore(replay.records_from, 0, records_end, records_bytes),
        archive_restore: restore(
            replay.archive_from,
            archive_base,
            archive_end,
            archive_bytes,
        ),
    }))
}

/// A data file's whole content; empty when it does not exist.
fn read_or_empty(path: &Path) -> Result<Vec<u8>, StoreError> {
    match fs::read(path) {
        Ok(bytes) => Ok(bytes),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(StoreError::io(path, "read", e)),
    }
}

/// A data file's content from byte `from` on; empty when it does not exist or ends before.
fn read_from(path: &Path, from: u64) -> Result<Vec<u8>, StoreError> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(StoreError::io(path, "open", e)),
    };
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(from))
        .and_then(|_| file.read_to_end(&mut bytes))
        .map_err(|e| StoreError::io(path, "read", e))?;
    Ok(bytes)
}

/// The torn tail a scan of a file's `len` bytes stopped at (its valid frames end at `end`),
/// described as `Log::open` would.
fn torn_at(path: &Path, end: u64, reason: Option<TornReason>, len: u64) -> Option<TornTail> {
    reason.map(|reason| TornTail {
        offset: end,
        dropped_bytes: len.saturating_sub(end),
        path: path.to_path_buf(),
        reason,
    })
}

pub(super) fn empty_scan<T>() -> Scan<T> {
    Scan {
        records: Vec::new(),
        ends: Vec::new(),
        end: 0,
        reason: None,
    }
}

pub(super) fn rewrite_matches(path: &Path, expected: Rewrite) -> Result<bool, StoreError> {
    match fs::read(path) {
        Ok(bytes) => {
            Ok(bytes.len() as u64 == expected.len && crc32c::crc32c(&bytes) == expected.crc)
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(StoreError::io(path, "read", e)),
    }
}

/// One page of a session's archive, read as `read` reads it but keeping only the page
/// (`offset`, at most `limit` entries); `None` when the session has no facts.
pub(super) fn read_archive_page(
    dir: &Path,
    offset: usize,
    limit: usize,
) -> Result<Option<ArchivePage>, StoreError> {
    let sink = PageSink {
        offset: u64::try_from(offset).unwrap_or(u64::MAX),
        limit,
        page: ArchivePage::default(),
    };
    Ok(read_files(dir, sink)?.map(|r| r.archive.page))
}

/// The last `keep` approvals an operator answered, read as `read` reads the archive but keeping
/// only those ([`AnsweredApprovals`]); `None` when the session has no facts.
pub(super) fn read_answered(
    dir: &Path,
    keep: usize,
) -> Result<Option<Vec<ApprovalRecord>>, StoreError> {
    Ok(read_files(dir, AnsweredApprovals::new(keep))?.map(|r| r.archive.into_vec()))
}

impl ArchiveSink for AnsweredApprovals {
    fn push(&mut self, entry: ArchiveEntry) {
        self.add(entry);
    }
}

pub(super) fn read_session(dir: &Path) -> Result<Option<StoredSession>, StoreError> {
    Ok(read_files(dir, Vec::new())?.map(|r| StoredSession {
        facts: r.info,
        records: r.records,
        archive: r.archive,
        repaired: Vec::new(),
    }))
}

/// Takes the lock, then reads the session and repairs it: finishes an interrupted compaction,
/// cuts torn and uncommitted tails, and rewrites `commit.log` to one point when it is long. The
/// archive is folded into its summary as it is read ([`ArchiveSink`]).
pub(super) fn open_session(
    dir: &Path,
    id: &SessionId,
) -> Result<Option<(OpenedSession, SessionFiles)>, StoreError> {
    match fs::symlink_metadata(dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => return Err(StoreError::NotADirectory { path: dir.into() }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::io(dir, "inspect", e)),
    }
    let lock = take_lock(dir, id)?;
    open_locked(dir, id, lock)
}

/// [`open_session`] once the session's lock is taken (`lock`); also the recovery of a session
/// a dead store journal names ([`store_journal`]).
pub(super) fn open_locked(
    dir: &Path,
    id: &SessionId,
    lock: File,
) -> Result<Option<(OpenedSession, SessionFiles)>, StoreError> {
    let Some(reading) = read_files(dir, ArchiveSummary::default())? else {
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
    for (file, path, end, scan_end, torn, restore) in [
        (
            &records,
            &records_path,
            reading.records_end,
            reading.records_scan_end,
            &reading.records_torn,
            &reading.records_restore,
        ),
        (
            &archive,
            &dir.join(ARCHIVE),
            reading.archive_end,
            reading.archive_scan_end,
            &reading.archive_torn,
            &reading.archive_restore,
        ),
    ] {
        if let Some((from, bytes)) = restore {
            // Issue 47: acknowledged appends whose unsynced bytes a crash lost or garbled,
            // put back from their journal frames.
            file.set_len(*from)
                .and_then(|()| file.write_all_at(bytes, *from))
                .and_then(|()| file.set_len(end))
                .and_then(|()| file.sync_data())
                .map_err(|e| StoreError::io(path, "restore", e))?;
            let note = format!(
                "{}: {} bytes from byte {from} were restored from commit.log's journal (a crash \
                 lost acknowledged appends' unsynced bytes).",
                path.display(),
                bytes.len()
            );
            tracing::warn!("{note}");
            repaired.push(note);
            continue;
        }
        if reading.journaled {
            // The journal's appends may be in the page cache only: the checkpoint below drops
            // their copies, so the data files are synced first.
            file.sync_data()
                .map_err(|e| StoreError::io(path, "sync", e))?;
        }
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
    // A replaced `commit.log` is of the next generation: entries of a store journal written
    // for this one are never applied to it.
    let mut generation = reading.generation;
    let point = CommitPoint::base(reading.records_end, reading.archive_end, generation + 1);
    let one_point = encode_records(&commits_path, &[point])?;
    if reading.journaled
        || reading.cut_points
        || reading.points == 0
        || reading.points > MAX_COMMIT_POINTS
        || reading.pending_rewrite
    {
        replace_file(&commits_path, &one_point)?;
        generation += 1;
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
    // Only the lock stays open: the data files are opened again by the commits that write them.
    drop((records, archive, commits));
    let files = SessionFiles {
        id: id.clone(),
        generation,
        dir: dir.to_path_buf(),
        records_end: reading.records_end,
        archive_end: reading.archive_end,
        commits_end,
        poisoned: false,
        journaled: false,
        released: false,
        lock,
        keys: None,
    };
    let stored = OpenedSession {
        facts: reading.info,
        records: reading.records,
        summary: reading.archive,
        repaired,
    };
    Ok(Some((stored, files)))
}

pub(super) fn list_sessions(sessions: &Path) -> Result<Vec<SessionId>, StoreError> {
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
