//! `commit.log` as a write-ahead journal (issue 47): an append's commit frame carries a copy of
//! the frames it wrote to `records.log` and `archive.log`, so only `commit.log` is synced before
//! the append is acknowledged (one `fdatasync` instead of three). The data files are made durable
//! later, by a checkpoint ([`checkpoint`]): on `release`, when a session's journal passes
//! [`JOURNAL_BOUND`], and by `open`'s recovery, which first re-applies every intact journal frame
//! behind the last plain point ([`replay`]), whatever a crash left in the unsynced data files.

use super::recovery::{open_existing, replace_file};
use super::*;
use crate::store::frame::{encode_frame, HEADER_BYTES};
use crate::store::MAX_RECORD_BYTES;
use serde_json::value::RawValue;
use std::io::Write as _;

/// A session's `commit.log` past this many bytes is checkpointed after the append that passed it
/// (by the committer, once that append is answered): it bounds both the journal's disk use and
/// the work of a recovery, at the cost of one checkpoint (two data-file syncs and an atomic
/// replace of `commit.log`, about four syncs) per MiB of a session's appends.
pub const JOURNAL_BOUND: u64 = 1 << 20;

/// The copy of one append's data-file frames that its commit frame carries: where they start
/// in each file, and their payloads (the JSON each frame holds; framing them again gives the
/// very bytes the append wrote).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct Journal {
    records_at: u64,
    #[serde(default)]
    records: Vec<Box<RawValue>>,
    archive_at: u64,
    #[serde(default)]
    archive: Vec<Box<RawValue>>,
}

impl Journal {
    /// The frames as the append wrote them to `records.log` and to `archive.log`.
    fn frames(&self) -> (Vec<u8>, Vec<u8>) {
        let frame = |payloads: &[Box<RawValue>]| {
            let mut out = Vec::new();
            for payload in payloads {
                encode_frame(payload.get().as_bytes(), &mut out);
            }
            out
        };
        (frame(&self.records), frame(&self.archive))
    }
}

/// The payloads of the frames in `bytes`, frames this process has just encoded (so every header
/// is whole and true).
fn payloads(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        let header = rest.get(..HEADER_BYTES as usize)?;
        let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let start = HEADER_BYTES as usize;
        let payload = rest.get(start..start + len)?;
        rest = &rest[start + len..];
        Some(payload)
    })
}

/// One append's `commit.log` frame: its commit point (lengths after, keys) and a copy of the
/// frames it wrote at `records_at` and `archive_at`. Written by hand rather than through serde:
/// the payloads are JSON already and go in as they are, without a parse. `None` when the frame
/// would be over the frame cap; that append then syncs its data files as well.
pub(super) fn journal_frame(
    point: &CommitPoint,
    records_at: u64,
    records: &[u8],
    archive_at: u64,
    archive: &[u8],
) -> Option<Vec<u8>> {
    let mut json = Vec::with_capacity(records.len() + archive.len() + 128);
    let list = |json: &mut Vec<u8>, bytes: &[u8]| {
        for (i, payload) in payloads(bytes).enumerate() {
            if i > 0 {
                json.push(b',');
            }
            json.extend_from_slice(payload);
        }
    };
    // Writing to a Vec cannot fail.
    let _ = write!(
        json,
        r#"{{"records":{},"archive":{}"#,
        point.records, point.archive
    );
    if let Some(seq) = point.keys {
        let _ = write!(json, r#","keys":{seq}"#);
    }
    let _ = write!(
        json,
        r#","journal":{{"records_at":{records_at},"records":["#
    );
    list(&mut json, records);
    let _ = write!(json, r#"],"archive_at":{archive_at},"archive":["#);
    list(&mut json, archive);
    json.extend_from_slice(b"]}}");
    if json.len() > MAX_RECORD_BYTES {
        return None;
    }
    let mut frame = Vec::with_capacity(json.len() + HEADER_BYTES as usize);
    encode_frame(&json, &mut frame);
    Some(frame)
}

/// What re-applying a session's journal frames did.
#[derive(Debug, Default)]
pub(super) struct Replay {
    /// Frames applied (a prefix of those given).
    pub(super) applied: usize,
    /// Where each data file's committed bytes end after them.
    pub(super) records_end: u64,
    pub(super) archive_end: u64,
    /// The first offset of each file whose bytes the journal replaced (the file had lost or
    /// garbled an acknowledged append's unsynced bytes); `None` when the file held the
    /// journal's bytes already.
    pub(super) records_from: Option<u64>,
    pub(super) archive_from: Option<u64>,
}

/// Re-applies `frames`, the commit frames behind the last plain point the data files reach
/// (which ends them at `ends`), to the data files' content in memory: each intact journal frame
/// that continues where the previous one ended (and whose keys `keys.log` holds, as `keys` says)
/// puts its copy at its offsets, over whatever the file held there. Stops at the first frame
/// that is not such a frame: that append and every later one are absent (a torn last frame is
/// not among `frames`: the scan of `commit.log` stopped before it). After a replay that replaced
/// bytes, a buffer ends exactly at its committed end.
///
/// `records` holds the whole of `records.log`; `archive` holds `archive.log` from byte `ends.1`
/// on (the archive is never read whole into memory: the journal only writes after that point).
pub(super) fn replay(
    frames: &[CommitPoint],
    records: &mut Vec<u8>,
    archive: &mut Vec<u8>,
    ends: (u64, u64),
    keys: u64,
) -> Replay {
    let archive_base = ends.1;
    let mut done = Replay {
        records_end: ends.0,
        archive_end: ends.1,
        ..Replay::default()
    };
    for frame in frames {
        let Some(journal) = frame.journal.as_ref() else {
            // A plain point the data files do not reach: never acknowledged (see `read_files`).
            break;
        };
        if journal.records_at != done.records_end
            || journal.archive_at != done.archive_end
            || frame.keys.is_some_and(|seq| seq > keys)
        {
            break;
        }
        let (record_frames, archive_frames) = journal.frames();
        if journal.records_at + record_frames.len() as u64 != frame.records
            || journal.archive_at + archive_frames.len() as u64 != frame.archive
        {
            break;
        }
        put(
            records,
            0,
            journal.records_at,
            &record_frames,
            &mut done.records_from,
        );
        put(
            archive,
            archive_base,
            journal.archive_at,
            &archive_frames,
            &mut done.archive_from,
        );
        done.records_end = frame.records;
        done.archive_end = frame.archive;
        done.applied += 1;
    }
    done
}

/// Puts `bytes` at `at` in a file's content, of which `file` holds the bytes from `base` on,
/// unless they are there already, cutting off what follows when it does; notes the first offset
/// replaced.
fn put(file: &mut Vec<u8>, base: u64, at: u64, bytes: &[u8], from: &mut Option<u64>) {
    // Every frame replayed continues where the trusted point (`base`) or the previous frame
    // ended, so `at` is never before `base`.
    let Some(Ok(start)) = at.checked_sub(base).map(usize::try_from) else {
        return;
    };
    if file.get(start..start + bytes.len()) == Some(bytes) {
        return;
    }
    // `at` is within the content: it is where the trusted point or the previous frame ended.
    file.truncate(start);
    file.resize(start, 0);
    file.extend_from_slice(bytes);
    from.get_or_insert(at);
}

/// Makes a session's data files durable and folds its journal into one plain point: syncs
/// `records.log` and `archive.log`, then replaces `commit.log` atomically by a point naming
/// their ends. Nothing to do when no journal frame was written since the last checkpoint, or
/// once the writer was released (another process may hold the session then). A crash at any
/// step leaves the journal or the point, each a whole commit.
///
/// # Errors
/// A failed sync (the journal still holds every append: nothing is lost) or a failed replace
/// of `commit.log` (the writer is poisoned: which `commit.log` stands is then unknown, and
/// reopening the session recovers it).
pub(super) fn checkpoint(files: &mut SessionFiles) -> Result<(), StoreError> {
    if !files.journaled || files.released || files.poisoned {
        return Ok(());
    }
    for name in [RECORDS, ARCHIVE] {
        let path = files.dir.join(name);
        open_existing(&path)?
            .sync_data()
            .map_err(|e| StoreError::io(&path, "sync", e))?;
    }
    let commits = files.dir.join(COMMITS);
    // The next generation: the store journal's entries of this one are never applied to it.
    let point = CommitPoint::base(files.records_end, files.archive_end, files.generation + 1);
    let point = encode_records(&commits, &[point])?;
    if let Err(error) = replace_file(&commits, &point) {
        files.poisoned = true;
        return Err(error);
    }
    files.generation += 1;
    files.commits_end = point.len() as u64;
    files.journaled = false;
    Ok(())
}

#[cfg(test)]
mod unit {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::store::files::tests::user;

    #[test]
    fn a_journal_frame_decodes_to_its_point_and_the_very_bytes_written() {
        let records = encode_records(Path::new("r"), &[user("a"), user("b \" é")]).unwrap();
        let archive = encode_records(Path::new("a"), &[user("c")]).unwrap();
        let point = CommitPoint {
            records: 10 + records.len() as u64,
            archive: 7 + archive.len() as u64,
            replace: None,
            keys: Some(3),
            journal: None,
            generation: None,
        };
        let frame = journal_frame(&point, 10, &records, 7, &archive).unwrap();
        let scan = crate::store::log::scan_bytes::<CommitPoint>(Path::new("c"), &frame).unwrap();
        assert!(scan.reason.is_none());
        let decoded = &scan.records[0];
        assert_eq!(
            (decoded.records, decoded.archive, decoded.keys),
            (point.records, point.archive, Some(3))
        );
        let journal = decoded.journal.as_ref().unwrap();
        assert_eq!((journal.records_at, journal.archive_at), (10, 7));
        assert_eq!(journal.frames(), (records, archive));
    }

    #[test]
    fn an_empty_side_is_an_empty_list() {
        let archive = encode_records(Path::new("a"), &[user("c")]).unwrap();
        let point = CommitPoint::plain(0, archive.len() as u64);
        let frame = journal_frame(&point, 0, &[], 0, &archive).unwrap();
        let scan = crate::store::log::scan_bytes::<CommitPoint>(Path::new("c"), &frame).unwrap();
        let journal = scan.records[0].journal.as_ref().unwrap();
        assert_eq!(journal.frames(), (Vec::new(), archive));
    }
}
