//! The file store's idempotency keys (issue 22 item 3): `sessions/<id>/keys/<sha-256 of the
//! key>.json`, one [`KeyEntry`] per file, each written whole (a temporary file, synced, renamed
//! over, the directory synced), so a crash leaves the old entry or the new one, never half.
//!
//! Only the process holding the session's lease serves its requests, so one process writes a
//! session's keys; within it, a claim and a settle of one session run one at a time (a striped
//! lock), so two requests with one key never both see it free.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::recovery::replace_file;
use crate::store::keys::{Claimed, IdempotencyKey, KeyClaim, KeyEntry, KeyOutcome, KeyState};
use crate::store::log::{rewrite_path, sync_dir};
use crate::store::StoreError;

/// The directory of a session's keys, inside its directory.
const KEYS: &str = "keys";

/// The file of `key` in `dir`.
fn entry_path(dir: &Path, key: &IdempotencyKey) -> PathBuf {
    let digest = Sha256::digest(key.as_str().as_bytes());
    let name: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    dir.join(format!("{name}.json"))
}

/// `keys/` of the session directory `session`, created on first use (the session must exist).
fn keys_dir(session: &Path) -> Result<PathBuf, StoreError> {
    let dir = session.join(KEYS);
    match fs::create_dir(&dir) {
        Ok(()) => sync_dir(session)?,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(StoreError::io(&dir, "create", e)),
    }
    Ok(dir)
}

fn read_entry(path: &Path) -> Result<Option<KeyEntry>, StoreError> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::io(path, "read", e)),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|source| StoreError::Decode {
            path: path.to_path_buf(),
            offset: 0,
            source,
        })
}

fn write_entry(path: &Path, entry: &KeyEntry) -> Result<(), StoreError> {
    let bytes = serde_json::to_vec(entry).map_err(|source| StoreError::Encode {
        path: path.to_path_buf(),
        source,
    })?;
    replace_file(path, &bytes)
}

/// [`SessionStore::claim_key`](crate::store::SessionStore::claim_key) on the session directory
/// `session`.
pub(super) fn claim(session: &Path, claim: &KeyClaim) -> Result<Claimed, StoreError> {
    let dir = keys_dir(session)?;
    let path = entry_path(&dir, &claim.key);
    if let Some(entry) = read_entry(&path)? {
        if entry.key == claim.key && !claim.expired(entry.created_ms) {
            return Ok(Claimed::Existing(entry));
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
    write_entry(&path, &entry)?;
    trim(&dir, claim)?;
    Ok(Claimed::New)
}

/// [`SessionStore::settle_key`](crate::store::SessionStore::settle_key) on the session directory
/// `session`.
pub(super) fn settle(
    session: &Path,
    key: &IdempotencyKey,
    owner: &str,
    outcome: Option<&KeyOutcome>,
) -> Result<bool, StoreError> {
    let path = entry_path(&session.join(KEYS), key);
    let Some(entry) = read_entry(&path)? else {
        return Ok(false);
    };
    let ours = matches!(&entry.state, KeyState::Running { owner: o } if o == owner);
    if entry.key != *key || !ours {
        return Ok(false);
    }
    match outcome {
        Some(outcome) => write_entry(
            &path,
            &KeyEntry {
                state: KeyState::Done {
                    outcome: outcome.clone(),
                },
                ..entry
            },
        )?,
        None => {
            fs::remove_file(&path).map_err(|e| StoreError::io(&path, "remove", e))?;
            sync_dir(path.parent().unwrap_or(session))?;
        }
    }
    Ok(true)
}

/// Past `max_keys` entries: forgets the expired ones, then the oldest finished ones, down to an
/// eighth below the bound (so a full session reads its entries once per eighth, not per claim).
fn trim(dir: &Path, claim: &KeyClaim) -> Result<(), StoreError> {
    let mut files = Vec::new();
    let listing = fs::read_dir(dir).map_err(|e| StoreError::io(dir, "list", e))?;
    for item in listing {
        let path = item.map_err(|e| StoreError::io(dir, "list", e))?.path();
        if path.extension().is_some_and(|e| e == "json") {
            files.push(path);
        }
    }
    if files.len() <= claim.max_keys {
        return Ok(());
    }
    let target = claim.max_keys - claim.max_keys / 8;
    let mut finished = Vec::new();
    let mut kept = files.len();
    for path in files {
        let Some(entry) = read_entry(&path)? else {
            continue;
        };
        if claim.expired(entry.created_ms) {
            remove(&path)?;
            kept -= 1;
        } else if matches!(entry.state, KeyState::Done { .. }) {
            finished.push((entry.created_ms, path));
        }
    }
    finished.sort();
    for (_, path) in finished.into_iter().take(kept.saturating_sub(target)) {
        remove(&path)?;
    }
    sync_dir(dir)
}

fn remove(path: &Path) -> Result<(), StoreError> {
    let _ = fs::remove_file(rewrite_path(path));
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(StoreError::io(path, "remove", e)),
        _ => Ok(()),
    }
}
