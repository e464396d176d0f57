//! The file store's idempotency keys (issue 22 item 3, issue 34 item 3): `sessions/<id>/keys.log`,
//! frames of [`KeyFrame`]s (the same `length | CRC-32C | JSON` frames as the other logs), the
//! latest frame of a key being its entry. The log is written by the committer, so a key's claim
//! and its answer share the syncs of a group commit instead of costing two file replacements.
//!
//! - A claim on a session this store holds (its writer is open here) is kept in memory and
//!   written with the session's next commit: the turn's first durable step carries it, and the
//!   commit point that makes those records committed names the claim's frame
//!   ([`CommitPoint::keys`](super::CommitPoint)). So a claim is durable no later than anything
//!   its request stored; a crash before that leaves neither (the request never ran, a retry
//!   runs it).
//! - An answer is a frame the committer writes and syncs before the client gets it.
//! - A session this store does not hold (a key named after a session the conversation has left
//!   with `/new`) takes the session's lock for the moment of the write and syncs its frame at
//!   once.
//!
//! Keys written before issue 34, one file per key under `sessions/<id>/keys/`, are folded into
//! `keys.log` the first time the session's keys are used, then removed.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::recovery::open_rw;
use crate::store::keys::{Claimed, IdempotencyKey, KeyClaim, KeyEntry, KeyOutcome, KeyState};
use crate::store::log::{encode_records, rewrite_path, scan, sync_dir, write_new_file};
use crate::store::StoreError;

/// The log of a session's keys, in its directory.
pub(super) const KEYS_LOG: &str = "keys.log";
/// The directory of the one-file-per-key layout before issue 34 (read once, then removed).
const LEGACY_KEYS: &str = "keys";
/// Frames past which the log is rewritten to its live entries: this many per kept key.
const FRAMES_PER_KEY: usize = 4;

/// One frame of `keys.log`. `seq` grows by one per frame; a rewritten log starts with a
/// [`KeyFrame::Base`] holding the last one, so a commit point's `keys` (the frame it needs)
/// still reads as present.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "op")]
pub(super) enum KeyFrame {
    /// The key's entry as it now is.
    Put {
        /// This frame's number.
        seq: u64,
        /// The entry.
        entry: KeyEntry,
    },
    /// The key is forgotten (a refused request, an expired or trimmed entry).
    Forget {
        /// This frame's number.
        seq: u64,
        /// The key.
        key: IdempotencyKey,
    },
    /// The first frame of a rewritten log.
    Base {
        /// The number of the last frame before the rewrite.
        seq: u64,
    },
}

impl KeyFrame {
    fn seq(&self) -> u64 {
        match self {
            Self::Put { seq, .. } | Self::Forget { seq, .. } | Self::Base { seq } => *seq,
        }
    }
}

/// A change not written yet.
#[derive(Clone, Debug, PartialEq)]
enum Change {
    Put(KeyEntry),
    Forget(IdempotencyKey),
}

impl Change {
    fn key(&self) -> &IdempotencyKey {
        match self {
            Self::Put(entry) => &entry.key,
            Self::Forget(key) => key,
        }
    }
}

/// One session's keys as this store knows them: every live entry (written or not), where the
/// log ends, and the changes waiting for the next write.
pub(super) struct KeyLog {
    path: PathBuf,
    entries: HashMap<IdempotencyKey, KeyEntry>,
    /// Where the valid frames end.
    end: u64,
    /// Frames in the file.
    frames: usize,
    /// The last frame's number.
    seq: u64,
    pending: Vec<Change>,
    /// The bound of the last claim (the rewrite threshold follows it).
    max_keys: usize,
}

/// The frames a commit writes to `keys.log`, to sync, then keep or undo.
pub(super) struct KeyWrite {
    /// The log, open for this commit only; `None` when the write was a rewrite, synced already.
    pub(super) file: Option<File>,
    /// The number of the last frame written: what the commit point names.
    pub(super) seq: u64,
    end: u64,
    frames: usize,
    changes: Vec<Change>,
}

impl KeyLog {
    /// Reads the session directory `session`'s keys: `keys.log` up to its first torn frame
    /// (cut there), and the files of the old layout, folded into the log and removed.
    pub(super) fn load(session: &Path) -> Result<Self, StoreError> {
        let path = session.join(KEYS_LOG);
        let scan = scan::<KeyFrame>(&path)?;
        let mut log = Self {
            path: path.clone(),
            entries: HashMap::new(),
            end: 0,
            frames: 0,
            seq: 0,
            pending: Vec::new(),
            max_keys: usize::MAX,
        };
        match scan {
            Some(scan) => {
                for frame in scan.records {
                    log.apply(frame);
                }
                log.end = scan.end;
                if scan.reason.is_some() {
                    // A torn frame is a write never acknowledged: cut it, so frames written
                    // after it are never read past garbage.
                    let file = open_rw(&path)?;
                    file.set_len(scan.end)
                        .and_then(|()| file.sync_all())
                        .map_err(|e| StoreError::io(&path, "truncate", e))?;
                }
            }
            None => {
                write_new_file(&path, &[])?;
                sync_dir(session)?;
            }
        }
        log.fold_legacy(session)?;
        Ok(log)
    }

    fn apply(&mut self, frame: KeyFrame) {
        self.seq = self.seq.max(frame.seq());
        self.frames += 1;
        match frame {
            KeyFrame::Put { entry, .. } => {
                self.entries.insert(entry.key.clone(), entry);
            }
            KeyFrame::Forget { key, .. } => {
                self.entries.remove(&key);
            }
            KeyFrame::Base { .. } => {}
        }
    }

    /// Folds `keys/<sha-256>.json` files (the layout before issue 34) into the log: each entry
    /// the log does not hold is appended and synced, then the files are removed.
    fn fold_legacy(&mut self, session: &Path) -> Result<(), StoreError> {
        let dir = session.join(LEGACY_KEYS);
        let listing = match fs::read_dir(&dir) {
            Ok(listing) => listing,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(StoreError::io(&dir, "list", e)),
        };
        let mut files = Vec::new();
        for item in listing {
            files.push(item.map_err(|e| StoreError::io(&dir, "list", e))?.path());
        }
        for path in &files {
            if path.extension().is_some_and(|e| e == "json") {
                let entry = read_legacy(path)?;
                if !self.entries.contains_key(&entry.key) {
                    self.entries.insert(entry.key.clone(), entry.clone());
                    self.pending.push(Change::Put(entry));
                }
            }
        }
        if let Some(write) = self.prepare()? {
            let synced = write
                .file
                .as_ref()
                .map_or(Ok(()), File::sync_data)
                .map_err(|e| StoreError::io(&self.path, "sync", e));
            self.finish(write, synced.is_ok());
            synced?;
        }
        for path in files {
            fs::remove_file(&path).map_err(|e| StoreError::io(&path, "remove", e))?;
        }
        fs::remove_dir(&dir).map_err(|e| StoreError::io(&dir, "remove", e))?;
        sync_dir(session)
    }

    /// A claim ([`SessionStore::claim_key`](crate::store::SessionStore::claim_key)): decided
    /// here, in memory; a new claim (and the entries it forgets) waits for the next write.
    pub(super) fn claim(&mut self, claim: &KeyClaim) -> Claimed {
        self.max_keys = claim.max_keys;
        if let Some(entry) = self.entries.get(&claim.key) {
            if !claim.expired(entry.created_ms) {
                return Claimed::Existing(entry.clone());
            }
        }
        let entry = KeyEntry {
            key: claim.key.clone(),
            digest: claim.digest.clone(),
            created_ms: claim.now_ms,
            state: KeyState::Running {
                owner: claim.owner.clone(),
            },
        };
        self.put(entry);
        self.trim(claim);
        Claimed::New
    }

    /// A settle ([`SessionStore::settle_key`](crate::store::SessionStore::settle_key)); whether
    /// the entry was `owner`'s. The change waits for the next write.
    pub(super) fn settle(
        &mut self,
        key: &IdempotencyKey,
        owner: &str,
        outcome: Option<&KeyOutcome>,
    ) -> bool {
        let Some(entry) = self.entries.get(key) else {
            return false;
        };
        if !matches!(&entry.state, KeyState::Running { owner: o } if o == owner) {
            return false;
        }
        match outcome {
            Some(outcome) => {
                let entry = KeyEntry {
                    state: KeyState::Done {
                        outcome: outcome.clone(),
                    },
                    ..entry.clone()
                };
                self.put(entry);
            }
            None => self.forget(key),
        }
        true
    }

    fn put(&mut self, entry: KeyEntry) {
        // A change of a key not written yet replaces the waiting one: one frame, the latest.
        self.pending.retain(|c| c.key() != &entry.key);
        self.entries.insert(entry.key.clone(), entry.clone());
        self.pending.push(Change::Put(entry));
    }

    fn forget(&mut self, key: &IdempotencyKey) {
        let unwritten = self
            .pending
            .iter()
            .any(|c| matches!(c, Change::Put(e) if &e.key == key && is_claim(e)));
        self.pending.retain(|c| c.key() != key);
        self.entries.remove(key);
        // A claim that never reached the disk leaves nothing to forget there.
        if !unwritten {
            self.pending.push(Change::Forget(key.clone()));
        }
    }

    /// Past `max_keys` entries: forgets the expired ones, then the oldest finished ones, down
    /// to an eighth below the bound; running entries are never forgotten for the bound.
    fn trim(&mut self, claim: &KeyClaim) {
        if self.entries.len() <= claim.max_keys {
            return;
        }
        let target = claim.max_keys - claim.max_keys / 8;
        let expired: Vec<IdempotencyKey> = self
            .entries
            .values()
            .filter(|e| e.key != claim.key && claim.expired(e.created_ms))
            .map(|e| e.key.clone())
            .collect();
        for key in expired {
            self.forget(&key);
        }
        let mut finished: Vec<(u64, IdempotencyKey)> = self
            .entries
            .values()
            .filter(|e| matches!(e.state, KeyState::Done { .. }))
            .map(|e| (e.created_ms, e.key.clone()))
            .collect();
        finished.sort();
        let over = self.entries.len().saturating_sub(target);
        for (_, key) in finished.into_iter().take(over) {
            self.forget(&key);
        }
    }

    /// Writes the waiting changes (not synced): appended at the end, or, past
    /// [`FRAMES_PER_KEY`] frames per kept key, the whole log rewritten to its live entries
    /// (synced and renamed over here). `None` when nothing waits.
    pub(super) fn prepare(&mut self) -> Result<Option<KeyWrite>, StoreError> {
        if self.pending.is_empty() {
            return Ok(None);
        }
        let changes = std::mem::take(&mut self.pending);
        let bound = self.max_keys.min(self.entries.len().max(64));
        let result = if self.frames + changes.len() > bound.saturating_mul(FRAMES_PER_KEY) {
            self.rewrite(&changes)
        } else {
            self.append(&changes)
        };
        if result.is_err() {
            self.pending = changes;
        }
        result.map(Some)
    }

    fn frames_of(&self, changes: &[Change]) -> Vec<KeyFrame> {
        (self.seq + 1..)
            .zip(changes)
            .map(|(seq, change)| match change {
                Change::Put(entry) => KeyFrame::Put {
                    seq,
                    entry: entry.clone(),
                },
                Change::Forget(key) => KeyFrame::Forget {
                    seq,
                    key: key.clone(),
                },
            })
            .collect()
    }

    fn append(&self, changes: &[Change]) -> Result<KeyWrite, StoreError> {
        let frames = self.frames_of(changes);
        let bytes = encode_records(&self.path, &frames)?;
        let file = open_rw(&self.path)?;
        if let Err(e) = file.write_all_at(&bytes, self.end) {
            let _ = file.set_len(self.end);
            return Err(StoreError::io(&self.path, "append to", e));
        }
        Ok(KeyWrite {
            file: Some(file),
            seq: self.seq + changes.len() as u64,
            end: self.end + bytes.len() as u64,
            frames: self.frames + frames.len(),
            changes: changes.to_vec(),
        })
    }

    /// The log as its live entries (the waiting changes applied), behind a base frame.
    fn rewrite(&self, changes: &[Change]) -> Result<KeyWrite, StoreError> {
        let last = self.seq + changes.len() as u64;
        let mut frames = vec![KeyFrame::Base { seq: last }];
        let mut entries: Vec<&KeyEntry> = self.entries.values().collect();
        entries.sort_by_key(|e| e.created_ms);
        frames.extend(entries.into_iter().map(|entry| KeyFrame::Put {
            seq: last,
            entry: entry.clone(),
        }));
        let bytes = encode_records(&self.path, &frames)?;
        let tmp = rewrite_path(&self.path);
        if let Err(e) = write_new_file(&tmp, &bytes) {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        fs::rename(&tmp, &self.path).map_err(|e| StoreError::io(&self.path, "replace", e))?;
        crate::store::log::sync_parent(&self.path)?;
        Ok(KeyWrite {
            file: None,
            seq: last,
            end: bytes.len() as u64,
            frames: frames.len(),
            changes: Vec::new(),
        })
    }

    /// After the commit's syncs: keeps the write, or cuts it off and puts its changes back to
    /// wait for the next write.
    pub(super) fn finish(&mut self, write: KeyWrite, synced: bool) {
        // A rewrite was synced and renamed over before the commit's other syncs: it stays.
        if synced || write.file.is_none() {
            self.end = write.end;
            self.frames = write.frames;
            self.seq = write.seq;
            return;
        }
        if let Some(file) = &write.file {
            let _ = file.set_len(self.end).and_then(|()| file.sync_data());
        }
        let mut changes = write.changes;
        changes.append(&mut self.pending);
        self.pending = changes;
    }
}

/// Whether `entry` is a claim (running), as opposed to an answer.
fn is_claim(entry: &KeyEntry) -> bool {
    matches!(entry.state, KeyState::Running { .. })
}

/// The number of the last valid frame of the session directory `session`'s `keys.log` (0
/// without one): a commit point that names a later frame is not committed.
pub(super) fn durable_seq(session: &Path) -> Result<u64, StoreError> {
    Ok(
        scan::<KeyFrame>(&session.join(KEYS_LOG))?.map_or(0, |scan| {
            scan.records.iter().map(KeyFrame::seq).max().unwrap_or(0)
        }),
    )
}

fn read_legacy(path: &Path) -> Result<KeyEntry, StoreError> {
    let bytes = fs::read(path).map_err(|e| StoreError::io(path, "read", e))?;
    serde_json::from_slice(&bytes).map_err(|source| StoreError::Decode {
        path: path.to_path_buf(),
        offset: 0,
        source,
    })
}
