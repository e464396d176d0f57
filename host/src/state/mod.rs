//! What one conversation holds and reports, below both the turn and the session floors (so
//! neither imports the other for it): [`SessionState`] (one open session's facts, stored records
//! and archive), [`HostEvent`] and the [`EventLog`] a conversation reports into, and
//! [`HostError`].
//!
//! Every write goes through [`SessionState`], which keeps it until the next durable step and then
//! hands what waits to the store's writer in one atomic, durable append
//! ([`SessionState::flush`]). A turn flushes at each of its steps (issue 22: before every model
//! call, before the operator is asked, before a tool runs) and every request at its end, so what
//! a request reports done is stored, and a turn cut off by a crash keeps its durable steps and
//! is closed with a marker when the session is opened again ([`Opened::open_turn`]).

mod error;
mod events;
mod patch;
mod transcript;

pub use error::{HostError, Unrestorable};
pub use events::{EventLog, HostEvent, LiveSink};
pub(crate) use patch::json as patch_json;
pub use patch::{request_patch, Changes, Detail, Patch};
pub use transcript::work_request;

use hookline_actors::SessionKey;
use hookline_messages::cut_off::{open_turn, OpenTurn};
use hookline_messages::model::{HeldImages, ImageRef, MediaType, UsageByModel, UsageTotals};
use hookline_messages::note::Note;
use hookline_messages::prompt::PromptMode;
use hookline_messages::record::{ArchiveEntry, Record};
use hookline_messages::session::{ApprovalMode, SessionId, SessionInfo};

use crate::store::{
    NewSession, OpenedSession, SessionFacts, SessionStore, SessionWriter, StoreError,
};

/// An open session: its facts, its records, and the store's writer (which holds its lease).
pub(crate) struct SessionState {
    pub(crate) info: SessionInfo,
    /// The model the session asks for (`/model`), stored with its facts.
    pub(crate) model: Option<String>,
    /// The session's default turn mode (`/mode`), stored with its facts.
    pub(crate) mode: Option<PromptMode>,
    /// Who the session belongs to (issue 48), stored with its facts.
    pub(crate) owner: Option<crate::store::SessionOwner>,
    /// User turns run in this session, counted from its archive (see
    /// [`crate::store::ArchiveSummary`]).
    user_turns: u64,
    /// Token usage over the session's answered model calls, counted from its archive too.
    usage: UsageTotals,
    /// The same, per model that answered.
    usage_by_model: UsageByModel,
    records: Vec<Record>,
    /// The records as request items, kept in step with `records`.
    transcript: transcript::Transcript,
    /// `None` once the lease was given up ([`SessionState::release`]).
    writer: Option<Box<dyn SessionWriter>>,
    bootstrap: Option<String>,
    /// Written since the last [`SessionState::flush`].
    unflushed: Unflushed,
    /// The session as the pipeline opened it (`Pipeline::open_session`), once the conversation
    /// made it active: its hook calls go to its shard's slot without hashing its id, and count
    /// references to the shard's own copy of the id. `None` until then (calls go by id).
    pub(crate) pipeline_key: Option<SessionKey>,
}

/// Writes waiting for [`SessionState::flush`].
#[derive(Default)]
struct Unflushed {
    records: Vec<Record>,
    /// Compaction replaced every record: the flush rewrites them all.
    replaced: bool,
    archive: Vec<ArchiveEntry>,
}

impl Unflushed {
    fn is_empty(&self) -> bool {
        self.records.is_empty() && !self.replaced && self.archive.is_empty()
    }
}

/// A durable step's writes, taken to be written beside the model call it precedes
/// ([`SessionState::take_step`]).
pub(crate) struct Step(Unflushed);

/// A session opened from the store, with any torn tail the store repaired and the turn a crash
/// or a lost lease cut off, if any (closed by the conversation that opened it).
pub(crate) struct Opened {
    pub(crate) state: SessionState,
    pub(crate) repaired: Vec<String>,
    pub(crate) open_turn: Option<OpenTurn>,
}

impl SessionState {
    /// A new session in `store` (which allocates its id), holding `records`.
    pub(crate) async fn create(
        store: &dyn SessionStore,
        new: NewSession,
        records: &[Record],
    ) -> Result<Opened, HostError> {
        let (facts, writer) = store.create(new, records).await?;
        let mut state = Self::new(facts, records.to_vec(), 0, writer);
        if !records.is_empty() {
            // Issue 25: replay starts from the records the session was created with.
            state.unflushed.archive.push(ArchiveEntry::Seeded {
                records: records.to_vec(),
            });
        }
        Ok(Opened {
            state,
            repaired: Vec::new(),
            open_turn: None,
        })
    }

    /// Opens a stored session for writing (taking its lease); `None` when the store does not
    /// have it.
    pub(crate) async fn resume(
        store: &dyn SessionStore,
        id: &SessionId,
    ) -> Result<Option<Opened>, HostError> {
        let Some((opened, writer)) = store.open(id).await? else {
            return Ok(None);
        };
        let OpenedSession {
            facts,
            records,
            summary,
            repaired,
        } = opened;
        // The summary keeps the last turn's archive entries when it did not finish: all
        // `open_turn` reads of the archive.
        let open_turn = open_turn(&records, &summary.last_turn);
        let user_turns = summary.user_turns;
        let usage = (summary.usage, summary.usage_by_model);
        Ok(Some(Opened {
            state: Self::new(facts, records, user_turns, writer).with_usage(usage),
            repaired,
            open_turn,
        }))
    }

    fn new(
        facts: SessionFacts,
        records: Vec<Record>,
        user_turns: u64,
        writer: Box<dyn SessionWriter>,
    ) -> Self {
        let info = facts.info();
        Self {
            info,
            model: facts.model,
            mode: facts.mode,
            owner: facts.owner,
            user_turns,
            usage: UsageTotals::default(),
            usage_by_model: UsageByModel::default(),
            transcript: transcript::Transcript::of(&records),
            records,
            writer: Some(writer),
            bootstrap: None,
            unflushed: Unflushed::default(),
            pipeline_key: None,
        }
    }

    fn with_usage(mut self, (usage, by_model): (UsageTotals, UsageByModel)) -> Self {
        self.usage = usage;
        self.usage_by_model = by_model;
        self
    }

    /// Token usage over the session's answered model calls.
    pub(crate) fn usage(&self) -> UsageTotals {
        self.usage
    }

    /// Token usage per model that answered.
    pub(crate) fn usage_by_model(&self) -> &UsageByModel {
        &self.usage_by_model
    }

    /// A session held in memory only, from `facts` and `records` (`hookline replay`):
    /// nothing it writes reaches a store, and [`SessionState::take_archived`] hands its archive
    /// entries over instead.
    pub(crate) fn detached(facts: SessionFacts, records: Vec<Record>) -> Self {
        Self {
            info: facts.info(),
            model: facts.model,
            mode: facts.mode,
            owner: facts.owner,
            user_turns: 0,
            usage: UsageTotals::default(),
            usage_by_model: UsageByModel::default(),
            transcript: transcript::Transcript::of(&records),
            records,
            writer: None,
            bootstrap: None,
            unflushed: Unflushed::default(),
            pipeline_key: None,
        }
    }

    /// Takes the archive entries written since the last call, for a session that never flushes
    /// ([`SessionState::detached`]); the records stay readable with [`SessionState::records`].
    pub(crate) fn take_archived(&mut self) -> Vec<ArchiveEntry> {
        let taken = std::mem::take(&mut self.unflushed);
        taken.archive
    }

    /// The stored records, in order.
    pub(crate) fn records(&self) -> &[Record] {
        &self.records
    }

    /// A request's items: the system text `system` (`None`: the active one), then the stored
    /// records as items (system records excepted), in order; shared with the transcript
    /// (issue 47).
    pub(crate) fn request_items(&self, system: Option<String>) -> hookline_messages::model::Items {
        self.transcript.request_items(system)
    }

    /// The latest stored work or plan text, with its mode.
    pub(crate) fn active_system(&self) -> Option<(PromptMode, &str)> {
        self.transcript.active_system()
    }

    /// Appends stored records; durable at the next [`SessionState::flush`].
    pub(crate) fn store(&mut self, records: &[Record]) -> Result<(), HostError> {
        self.records.extend_from_slice(records);
        self.transcript.extend(records);
        if !self.unflushed.replaced {
            self.unflushed.records.extend_from_slice(records);
        }
        Ok(())
    }

    /// Replaces every stored record (compaction); atomic, and durable at the next flush.
    pub(crate) fn replace_records(&mut self, records: Vec<Record>) -> Result<(), HostError> {
        self.transcript = transcript::Transcript::of(&records);
        self.records = records;
        self.unflushed.records.clear();
        self.unflushed.replaced = true;
        Ok(())
    }

    /// Appends one archive entry; durable at the next [`SessionState::flush`].
    pub(crate) fn archive(&mut self, entry: &ArchiveEntry) -> Result<(), HostError> {
        match entry {
            ArchiveEntry::UserMessage { .. } => self.user_turns += 1,
            ArchiveEntry::ModelResponse { usage, model, .. } => {
                self.usage.add(usage);
                if let Some(model) = model {
                    self.usage_by_model.add(model, usage);
                }
            }
            _ => {}
        }
        self.unflushed.archive.push(entry.clone());
        Ok(())
    }

    /// User turns run in this session (its archive's user messages, stored ones included).
    pub(crate) fn user_turns(&self) -> u64 {
        self.user_turns
    }

    /// The facts the store keeps for this session.
    pub(crate) fn facts(&self) -> SessionFacts {
        SessionFacts {
            workspace_root: self.info.workspace_root.clone(),
            session_id: self.info.session_id.clone(),
            approval_mode: self.info.approval_mode,
            model: self.model.clone(),
            mode: self.mode,
            owner: self.owner.clone(),
        }
    }

    /// Makes every write since the last flush durable, in one atomic append (or, after a
    /// compaction, one atomic replacement of every record with the archive entries). The host
    /// flushes at each durable step of a turn and at the end of every request (a turn, a
    /// command, a close).
    ///
    /// # Errors
    /// [`HostError::Store`] (a lost lease among them); the writes stay waiting, and the next
    /// flush tries them again.
    pub(crate) async fn flush(&mut self) -> Result<(), HostError> {
        if self.unflushed.is_empty() {
            return Ok(());
        }
        let writer = self.writer.as_mut().ok_or(StoreError::Closed)?;
        let archive = &self.unflushed.archive;
        if self.unflushed.replaced {
            writer.replace_records(&self.records, archive).await?;
        } else {
            writer.append(&self.unflushed.records, archive).await?;
        }
        self.unflushed = Unflushed::default();
        Ok(())
    }

    /// Takes what waits for a flush, to be written by [`SessionState::write_step`] beside the
    /// model call the step precedes (issue 47); nothing written after this joins it.
    pub(crate) fn take_step(&mut self) -> Step {
        Step(std::mem::take(&mut self.unflushed))
    }

    /// Makes a step [`SessionState::take_step`] took durable, in one atomic append, as
    /// [`SessionState::flush`] would have when it was taken.
    ///
    /// # Errors
    /// As [`SessionState::flush`]; the step's writes wait again, before those made since.
    pub(crate) async fn write_step(&mut self, step: Step) -> Result<(), HostError> {
        let Step(step) = step;
        if step.is_empty() {
            return Ok(());
        }
        let written = match self.writer.as_mut() {
            None => Err(StoreError::Closed),
            Some(writer) if step.replaced => {
                writer.replace_records(&self.records, &step.archive).await
            }
            Some(writer) => writer.append(&step.records, &step.archive).await,
        };
        if written.is_err() {
            let later = std::mem::replace(&mut self.unflushed, step);
            self.unflushed.records.extend(later.records);
            self.unflushed.replaced |= later.replaced;
            self.unflushed.archive.extend(later.archive);
        }
        Ok(written?)
    }

    /// Flushes, then gives the session's lease up.
    ///
    /// # Errors
    /// As [`SessionState::flush`]; the lease then expires by itself.
    pub(crate) async fn release(mut self) -> Result<(), HostError> {
        self.flush().await?;
        if let Some(writer) = self.writer.take() {
            writer.release().await?;
        }
        Ok(())
    }

    /// Drops the session without writing what waits for a flush (its lease was lost: the
    /// database would refuse it anyway) and without releasing a lease it no longer holds.
    pub(crate) fn discard(mut self) {
        if !self.unflushed.is_empty() {
            tracing::warn!(
                session = %self.info.session_id,
                "the session was taken over by another node; this node's unstored writes are dropped"
            );
            self.unflushed = Unflushed::default();
        }
    }

    /// Keeps the bootstrap result (SPEC G5.4) as the text the work and plan system texts end
    /// with. Nothing when no file has content: a workspace without bootstrap files changes no
    /// prompt. Otherwise every file is listed, missing ones too, so the agent learns they are
    /// absent.
    pub(crate) fn set_bootstrap(&mut self, files: &[hookline_messages::event::BootstrapFile]) {
        let before = self.bootstrap.clone();
        self.bootstrap = bootstrap_text(files);
        if self.bootstrap != before {
            // Issue 25: replay needs the text the session's prompts were composed with.
            let text = self.bootstrap.clone();
            self.unflushed
                .archive
                .push(ArchiveEntry::Bootstrap { text });
        }
    }

    /// Sets the approval mode as archived (`hookline replay`); nothing is written.
    pub(crate) fn restore_approval_mode(&mut self, mode: ApprovalMode) {
        self.info.approval_mode = mode;
    }

    /// Sets the bootstrap text as archived (`hookline replay`).
    pub(crate) fn restore_bootstrap(&mut self, text: Option<String>) {
        self.bootstrap = text;
    }

    /// The bootstrap text the work and plan system texts end with, if any.
    pub(crate) fn bootstrap_text(&self) -> Option<&str> {
        self.bootstrap.as_deref()
    }

    /// Changes the approval mode and rewrites the session's stored facts.
    ///
    /// # Errors
    /// [`HostError::Store`].
    pub(crate) async fn set_approval_mode(&mut self, mode: ApprovalMode) -> Result<(), HostError> {
        if self.info.approval_mode != mode {
            // Issue 25: replay runs each turn under the mode it ran under.
            self.unflushed
                .archive
                .push(ArchiveEntry::ApprovalsSet { mode });
        }
        self.info.approval_mode = mode;
        self.write_facts().await
    }

    /// Changes the model and the default turn mode the session asks for, and rewrites its
    /// stored facts when either changed.
    ///
    /// # Errors
    /// [`HostError::Store`].
    pub(crate) async fn set_choices(
        &mut self,
        model: Option<String>,
        mode: Option<PromptMode>,
    ) -> Result<(), HostError> {
        if self.model == model && self.mode == mode {
            return Ok(());
        }
        self.model = model;
        self.mode = mode;
        self.write_facts().await
    }

    async fn write_facts(&mut self) -> Result<(), HostError> {
        let facts = self.facts();
        let writer = self.writer.as_mut().ok_or(StoreError::Closed)?;
        writer.set_facts(&facts).await?;
        Ok(())
    }

    /// The images the session holds: every image on a stored record.
    /// Kept with the transcript, not gathered from every record at each call (issue 22).
    pub(crate) fn held_images(&self) -> HeldImages {
        self.transcript.held_images().clone()
    }

    /// Numbers new attachments after the highest number the session holds.
    pub(crate) fn attach(&self, media: &[MediaType]) -> Vec<ImageRef> {
        let first = self.transcript.highest_image().map_or(1, |n| n + 1);
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
    /// The host flushes at every durable step and at the end of every request; writes still
    /// waiting here belong to a step that failed before it was stored, and are lost with it.
    fn drop(&mut self) {
        if !self.unflushed.is_empty() {
            tracing::warn!(
                session = %self.info.session_id,
                "a failed request's writes were not stored"
            );
        }
    }
}

/// Records `note` in `session`'s archive and reports it.
/// The text a bootstrap result adds to the work and plan system texts (SPEC G5.4): nothing when
/// no file has content, else every file, missing ones too, so the agent learns they are absent.
fn bootstrap_text(files: &[hookline_messages::event::BootstrapFile]) -> Option<String> {
    if files.iter().all(|f| f.content.is_none()) {
        return None;
    }
    let mut text = String::from("\n\nWorkspace files:");
    for file in files {
        match &file.content {
            Some(content) => text.push_str(&format!("\n## {}\n{}", file.name, content.trim_end())),
            None => text.push_str(&format!("\n## {} (missing)", file.name)),
        }
    }
    Some(text)
}

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
