//! The store's typed errors: each names the file and the problem.

use std::io;
use std::path::PathBuf;

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
}
