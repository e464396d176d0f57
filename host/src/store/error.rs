//! The store's typed errors: each names the file and the problem.

use std::io;
use std::path::PathBuf;

use hookline_messages::session::SessionId;

use super::session_id::InvalidSessionId;

/// What can go wrong in the store. Every variant names the file (or directory) involved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The operating system refused an operation on a file or directory.
    #[error("could not {action} {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// What the store was doing, as a verb phrase ("open", "sync", ...).
        action: &'static str,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// A record could not be encoded as JSON.
    #[error("could not encode a record for {}: {source}", path.display())]
    Encode {
        /// The log the record was meant for.
        path: PathBuf,
        /// The serializer's error.
        #[source]
        source: serde_json::Error,
    },
    /// A record with a valid checksum is not the JSON the caller expects. The log is left as it
    /// is: such a record was written by this program (or another version of it), so it is not a
    /// crash artefact and cutting it off would destroy synced data.
    #[error("record at byte {offset} of {} does not decode: {source}", path.display())]
    Decode {
        /// The log.
        path: PathBuf,
        /// Where the record's frame starts.
        offset: u64,
        /// The deserializer's error.
        #[source]
        source: serde_json::Error,
    },
    /// An encoded record is over the frame size cap, so it was not written.
    #[error("record for {} is {size} bytes, over the cap of {max} bytes", path.display())]
    RecordTooLarge {
        /// The log the record was meant for.
        path: PathBuf,
        /// The encoded size.
        size: usize,
        /// The cap ([`MAX_RECORD_BYTES`](super::MAX_RECORD_BYTES)).
        max: usize,
    },
    /// An earlier failed append could not be undone, so the log refuses further writes
    /// until it is opened again (which repairs it).
    #[error("log {} refuses writes after a failed append it could not undo; reopen it", path.display())]
    Poisoned {
        /// The log.
        path: PathBuf,
    },
    /// A session id that is not a safe file name.
    #[error("session id {id:?} cannot name a directory under {}: {reason}", root.display())]
    InvalidSessionId {
        /// The sessions directory.
        root: PathBuf,
        /// The id as given.
        id: String,
        /// Why it was refused.
        reason: InvalidSessionId,
    },
    /// A path the store expected to be a directory is something else (a file, a symbolic link).
    #[error("{} is not a directory", path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
    /// The session's lease is held by another writer (another process, or another node), and
    /// it has neither been released nor expired.
    #[error("session {session} is held by {holder}")]
    Leased {
        /// The session.
        session: SessionId,
        /// Who holds it, as far as the store knows ("another process", a node's name).
        holder: String,
    },
    /// This writer's lease was taken over (a newer fencing token exists) or released: the write
    /// was refused and nothing of it was stored. The writer must drop the session.
    #[error("lease on session {session} was lost (our fencing token {token} is stale); nothing was written")]
    LeaseLost {
        /// The session.
        session: SessionId,
        /// The fencing token this writer held.
        token: i64,
    },
    /// The database refused or failed an operation.
    #[error("database could not {action}: {source}")]
    Database {
        /// What the store was doing, as a verb phrase.
        action: &'static str,
        /// The driver's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A stored row or frame does not decode as what the store wrote.
    #[error("stored {what} of session {session} does not decode: {source}")]
    Corrupt {
        /// The session.
        session: SessionId,
        /// What did not decode ("record 3", "facts").
        what: String,
        /// The deserializer's error.
        #[source]
        source: serde_json::Error,
    },
    /// The store's background committer has stopped (the store was dropped or its thread died).
    #[error("store committer has stopped")]
    Closed,
    /// The database's schema is older than this build needs.
    #[error("database schema is at version {have}, this build needs {want}; run `hookline store migrate --database-url URL` (or start with --migrate)")]
    SchemaBehind {
        /// The highest migration applied.
        have: i32,
        /// The version this build needs.
        want: i32,
    },
    /// The store could not allocate a fresh session id after many tries.
    #[error("could not allocate a fresh session id after {tries} tries")]
    NoFreeId {
        /// How many ids were tried.
        tries: u32,
    },
}

impl StoreError {
    /// Builds an [`StoreError::Io`] for `path`.
    pub(crate) fn io(path: impl Into<PathBuf>, action: &'static str, source: io::Error) -> Self {
        Self::Io {
            path: path.into(),
            action,
            source,
        }
    }

    /// The error's text followed by each of its causes not already in it, joined by `: `
    /// (a driver's own text can be as short as "db error"; its cause says what happened).
    pub fn with_causes(&self) -> String {
        let mut text = self.to_string();
        let mut cause = std::error::Error::source(self);
        while let Some(next) = cause {
            let more = next.to_string();
            if !text.contains(&more) {
                text = format!("{text}: {more}");
            }
            cause = next.source();
        }
        text
    }

    /// Whether the operating system refused for want of file descriptors (`EMFILE`, `ENFILE`):
    /// an overload that passes, not a broken store.
    pub fn is_out_of_descriptors(&self) -> bool {
        // EMFILE (the process's limit) and ENFILE (the system's) on Linux and the BSDs.
        const EMFILE: i32 = 24;
        const ENFILE: i32 = 23;
        matches!(self, Self::Io { source, .. }
            if matches!(source.raw_os_error(), Some(EMFILE | ENFILE)))
    }

    /// Builds a [`StoreError::Database`] (the database backends, e.g. `hookline-postgres`).
    pub fn db(
        action: &'static str,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        Self::Database {
            action,
            source: Box::new(source),
        }
    }
}
