//! What one conversation holds and reports, below both the turn and the session floors (so
//! neither imports the other for it): [`SessionState`] (one open session's facts, stored records
//! and archive), [`HostEvent`] and the [`EventLog`] a conversation reports into, and
//! [`HostError`].
//!
//! Every write goes through [`SessionState`] and is synced before it returns (the store's
//! `append` fsyncs), so what a turn reports done is on disk.

mod error;
mod events;

pub use error::HostError;
pub use events::{EventLog, HostEvent, LiveSink};

use std::path::Path;

use hookline_messages::model::{HeldImages, ImageRef, MediaType};
use hookline_messages::record::{ArchiveEntry, Record};
use hookline_messages::session::SessionInfo;

use crate::store::{Log, Store, TornTail};
use hookline_messages::note::Note;

const RECORDS: &str = "records.log";
const ARCHIVE: &str = "archive.log";
const META: &str = "meta.log";

/// An open session.
pub(crate) struct SessionState {
    pub(crate) info: SessionInfo,
    records: Vec<Record>,
    record_log: Log<Record>,
    archive: Log<ArchiveEntry>,
    bootstrap: Option<String>,
    /// Written since the last [`SessionState::flush`]: one request's writes become durable
    /// together, so a request cut off by a crash is wholly absent, never half there.
    unflushed: Unflushed,
}

/// Writes waiting for [`SessionState::flush`].
#[derive(Default)]
struct Unflushed {
    records: Vec<Record>,
    /// Compaction replaced every record: the flush rewrites them all.
    replaced: bool,
    archive: Vec<ArchiveEntry>,
}

/// A session opened from disk, with any torn tail the store repaired.
pub(crate) struct Opened {
    pub(crate) state: SessionState,
    pub(crate) repaired: Vec<String>,
}

impl SessionState {
    /// Opens (or creates) `info`'s session in `store`, writing its facts.
    pub(crate) fn create(
        store: &Store,
        info: SessionInfo,
        records: &[Record],
    ) -> Result<Opened, HostError> {
        let mut opened = Self::open_dir(store, info)?;
        opened.state.record_log.rewrite(records)?;
        opened.state.records = records.to_vec();
        Ok(opened)
    }

    /// Opens a stored session; `None` when the store has no facts for it.
    pub(crate) fn resume(
        store: &Store,
        id: &hookline_messages::session::SessionId,
    ) -> Result<Option<Opened>, HostError> {
        if !store.sessions()?.contains(id) {
            return Ok(None);
        }
        let dir = store.session_dir(id)?;
        let (_, meta) = Log::<SessionInfo>::open(&dir.join(META))?;
        let Some(info) = meta.records.last().cloned() else {
            return Ok(None);
        };
        Self::open_dir(store, info).map(Some)
    }

    fn open_dir(store: &Store, info: SessionInfo) -> Result<Opened, HostError> {
        let dir = store.session_dir(&info.session_id)?;
        let mut repaired = Vec::new();
        let (mut meta, _) = Log::<SessionInfo>::open(&dir.join(META))?;
        meta.rewrite(std::slice::from_ref(&info))?;
        let (record_log, recovered) = Log::<Record>::open(&dir.join(RECORDS))?;
        note_torn(&mut repaired, &dir.join(RECORDS), recovered.torn.as_ref());
        let (archive, archived) = Log::<ArchiveEntry>::open(&dir.join(ARCHIVE))?;
        note_torn(&mut repaired, &dir.join(ARCHIVE), archived.torn.as_ref());
        let state = Self {
            info,
            records: recovered.records,
            record_log,
            archive,
            bootstrap: None,
            unflushed: Unflushed::default(),
        };
        Ok(Opened { state, repaired })
    }

    /// The stored records, in order.
    pub(crate) fn records(&self) -> &[Record] {
        &self.records
    }

    /// Appends stored records; durable at the next [`SessionState::flush`].
    pub(crate) fn store(&mut self, records: &[Record]) -> Result<(), HostError> {
        self.records.extend_from_slice(records);
        if !self.unflushed.replaced {
            self.unflushed.records.extend_from_slice(records);
        }
        Ok(())
    }

    /// Replaces every stored record (compaction); atomic, and durable at the next flush.
    pub(crate) fn replace_records(&mut self, records: Vec<Record>) -> Result<(), HostError> {
        self.records = records;
        self.unflushed.records.clear();
        self.unflushed.replaced = true;
        Ok(())
    }

    /// Appends one archive entry; durable at the next [`SessionState::flush`].
    pub(crate) fn archive(&mut self, entry: &ArchiveEntry) -> Result<(), HostError> {
        self.unflushed.archive.push(entry.clone());
        Ok(())
    }

    /// Makes every write since the last flush durable: the records (appended with one sync, or
    /// rewritten atomically after a compaction), then the archive entries (one sync). The host
    /// flushes at the end of every request (a turn, a command, a close), so what it reported
    /// done is on disk.
    ///
    /// # Errors
    /// [`HostError::Store`]; the writes stay waiting, and the next flush tries them again.
    pub(crate) fn flush(&mut self) -> Result<(), HostError> {
        if self.unflushed.replaced {
            self.record_log.rewrite(&self.records)?;
        } else if !self.unflushed.records.is_empty() {
            self.record_log.append_all(&self.unflushed.records)?;
        }
        self.unflushed.records.clear();
        self.unflushed.replaced = false;
        if !self.unflushed.archive.is_empty() {
            self.archive.append_all(&self.unflushed.archive)?;
            self.unflushed.archive.clear();
        }
        Ok(())
    }

    /// Keeps the bootstrap result (SPEC G5.4) as the text the work and plan system texts end
    /// with. Nothing when no file has content: a workspace without bootstrap files changes no
    /// prompt. Otherwise every file is listed, missing ones too, so the agent learns they are
    /// absent.
    pub(crate) fn set_bootstrap(&mut self, files: &[hookline_messages::event::BootstrapFile]) {
        if files.iter().all(|f| f.content.is_none()) {
            self.bootstrap = None;
            return;
        }
        let mut text = String::from("\n\nWorkspace files:");
        for file in files {
            match &file.content {
                Some(content) => {
                    text.push_str(&format!("\n## {}\n{}", file.name, content.trim_end()))
                }
                None => text.push_str(&format!("\n## {} (missing)", file.name)),
            }
        }
        self.bootstrap = Some(text);
    }

    /// The bootstrap text the work and plan system texts end with, if any.
    pub(crate) fn bootstrap_text(&self) -> Option<&str> {
        self.bootstrap.as_deref()
    }

    /// Changes the approval mode and rewrites the session's stored facts.
    pub(crate) fn set_approval_mode(
        &mut self,
        store: &Store,
        mode: hookline_messages::session::ApprovalMode,
    ) -> Result<(), HostError> {
        self.info.approval_mode = mode;
        let dir = store.session_dir(&self.info.session_id)?;
        let (mut meta, _) = Log::<SessionInfo>::open(&dir.join(META))?;
        meta.rewrite(std::slice::from_ref(&self.info))?;
        Ok(())
    }

    /// The images the session holds: every image on a stored record.
    pub(crate) fn held_images(&self) -> HeldImages {
        self.records
            .iter()
            .flat_map(|r| r.images().iter().copied())
            .collect()
    }

    /// Numbers new attachments after the highest number the session holds.
    pub(crate) fn attach(&self, media: &[MediaType]) -> Vec<ImageRef> {
        let first = self
            .records
            .iter()
            .flat_map(|r| r.images().iter().map(|i| i.number))
            .max()
            .map_or(1, |n| n + 1);
        (first..)
            .zip(media)
            .map(|(number, media_type)| ImageRef {
                number,
                media_type: *media_type,
            })
            .collect()
    }
}

impl Drop for SessionState {
    /// A safety net: the host flushes at the end of every request, so this finds nothing to
    /// write unless a request ended early on an error.
    fn drop(&mut self) {
        if let Err(error) = self.flush() {
            tracing::error!(session = %self.info.session_id, %error, "session writes lost at close");
        }
    }
}

fn note_torn(repaired: &mut Vec<String>, file: &Path, torn: Option<&TornTail>) {
    if let Some(torn) = torn {
        repaired.push(format!("{}: {torn}", file.display()));
    }
}

/// Records `note` in `session`'s archive and reports it.
pub(crate) fn record_note(
    events: &mut EventLog,
    session: &mut SessionState,
    note: Note,
) -> Result<(), HostError> {
    session.archive(&ArchiveEntry::note(note.clone()))?;
    events.push(HostEvent::Note {
        text: note.text(),
        note,
    });
    Ok(())
}
