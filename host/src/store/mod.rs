//! Durable storage: append-only logs of framed JSON records, and the store's directory of
//! sessions (issue 4 item 7, issue 8 item 3).
//!
//! A [`Log<T>`] is one file of frames (`length | CRC-32C | JSON payload`). Every append is
//! written and synced before it returns, so a record the caller saw appended survives a crash.
//! Opening a log reads every valid record and stops at the first torn or corrupt frame, which it
//! truncates and reports as a [`TornTail`]; no corrupt record is ever returned. [`Log::rewrite`]
//! replaces a log atomically (for compaction). The format and the recovery rules are written
//! down in `docs/storage.md`.
//!
//! A [`Store`] is a directory (by default `<workspace>/.hookline/`) with one directory per
//! session under `sessions/`; session ids must be safe file names ([`validate_session_id`]).
//!
//! ```
//! use hookline_host::store::{Log, Store};
//! use hookline_messages::session::SessionId;
//!
//! # fn main() -> Result<(), hookline_host::store::StoreError> {
//! # let tmp = tempfile::tempdir().map_err(|e| hookline_host::store::StoreError::Io {
//! #     path: "tmp".into(), action: "create", source: e })?;
//! let store = Store::open(tmp.path().join(".hookline"))?;
//! let dir = store.session_dir(&SessionId::from("s1"))?;
//!
//! let (mut log, recovery) = Log::<String>::open(&dir.join("archive.log"))?;
//! assert!(recovery.records.is_empty() && recovery.torn.is_none());
//! log.append(&"hello".to_string())?; // written and synced
//! drop(log);
//!
//! let (_, recovery) = Log::<String>::open(&dir.join("archive.log"))?;
//! assert_eq!(recovery.records, vec!["hello".to_string()]);
//! assert_eq!(store.sessions()?, vec![SessionId::from("s1")]);
//! // Ids that are not safe file names are refused.
//! assert!(store.session_dir(&SessionId::from("../elsewhere")).is_err());
//! # Ok(())
//! # }
//! ```

mod api;
mod api_keys;
mod error;
mod files;
mod frame;
pub mod keys;
mod log;
mod session_id;

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use hookline_messages::session::SessionId;

pub use api::{
    fresh_session_id, operator_answer, AnsweredApprovals, ArchivePage, ArchiveSummary, Holder,
    NewSession, OpenedSession, SessionFacts, SessionOwner, SessionStore, SessionWriter,
    StoredSession, ID_TRIES,
};
pub use api_keys::{
    valid_tenant, ApiKeyRecord, ApiKeyState, ApiKeyTable, ApiKeyView, Expiry, FileApiKeys,
    KeyError, Role, API_KEYS_FILE,
};
pub use error::StoreError;
pub use files::{
    CommitStats, FileStore, FileStoreOptions, JOURNAL_BOUND, MAX_BATCH, STORE_JOURNAL_BOUND,
};
pub use frame::{TornReason, MAX_RECORD_BYTES};
pub use keys::{Claimed, IdempotencyKey, KeyClaim, KeyEntry, KeyOutcome, KeyState};
pub use log::{Log, Recovery, TornTail};
pub use session_id::{validate_session_id, InvalidSessionId, MAX_SESSION_ID_BYTES};

/// The directory that sessions live under, inside the store's root.
const SESSIONS: &str = "sessions";

/// The store's directory (by default `<workspace>/.hookline/`): one directory per session.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

impl Store {
    /// Opens the store at `root`, creating it and its `sessions/` directory if needed.
    ///
    /// # Errors
    /// [`StoreError::Io`] if the directories cannot be created.
    pub fn open(root: impl Into<PathBuf>) -> Result<Store, StoreError> {
        let root = root.into();
        let sessions = root.join(SESSIONS);
        fs::create_dir_all(&sessions).map_err(|e| StoreError::io(&sessions, "create", e))?;
        Ok(Store { root })
    }

    /// The store's root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<root>/sessions/<id>/`, created (and its creation synced) on demand.
    ///
    /// # Errors
    /// [`StoreError::InvalidSessionId`] if `id` is not a safe file name;
    /// [`StoreError::NotADirectory`] if something else has that name;
    /// [`StoreError::Io`] if it cannot be created.
    pub fn session_dir(&self, id: &SessionId) -> Result<PathBuf, StoreError> {
        let sessions = self.root.join(SESSIONS);
        validate_session_id(id.as_str()).map_err(|reason| StoreError::InvalidSessionId {
            root: sessions.clone(),
            id: id.as_str().to_owned(),
            reason,
        })?;
        let dir = sessions.join(id.as_str());
        match fs::create_dir(&dir) {
            Ok(()) => log::sync_dir(&sessions)?,
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(StoreError::io(&dir, "create", e)),
        }
        // A symbolic link planted here could lead the store's writes anywhere.
        let meta = fs::symlink_metadata(&dir).map_err(|e| StoreError::io(&dir, "inspect", e))?;
        if !meta.is_dir() {
            return Err(StoreError::NotADirectory { path: dir });
        }
        Ok(dir)
    }

    /// The sessions that have a directory, sorted. Entries that are not directories or whose
    /// names are not valid session ids are ignored.
    ///
    /// # Errors
    /// [`StoreError::Io`] if the sessions directory cannot be listed.
    pub fn sessions(&self) -> Result<Vec<SessionId>, StoreError> {
        let sessions = self.root.join(SESSIONS);
        let entries = fs::read_dir(&sessions).map_err(|e| StoreError::io(&sessions, "list", e))?;
        let mut ids = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| StoreError::io(&sessions, "list", e))?;
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            match entry.file_name().to_str() {
                Some(name) if is_dir && validate_session_id(name).is_ok() => {
                    ids.push(SessionId::from(name));
                }
                _ => {}
            }
        }
        ids.sort();
        Ok(ids)
    }
}
