//! What an embedder reads back without private file names or waiting for a session (issue 15):
//! every load note as soon as the host has started, and a stored session's records and archive
//! as typed values.

use hookline_messages::note::Note;
use hookline_messages::record::{ArchiveEntry, Record};
use hookline_messages::session::SessionId;

use super::{Conversation, HostError};

impl Conversation {
    /// Every note loading produced, in order: skipped plugin directories, skipped disk plugins
    /// whose name was taken, raw hook registrations, unknown subscriptions, tools left out.
    /// Available as soon as [`HostBuilder::start`](crate::HostBuilder::start) returns; the first
    /// session also archives them.
    pub fn load_notes(&self) -> &[Note] {
        self.shared.load_notes()
    }

    /// The stored records of session `id` (the conversation the model sees), oldest first.
    ///
    /// # Errors
    /// [`HostError::UnknownSession`] when the store does not have it; a store failure.
    pub async fn stored_records(&self, id: &SessionId) -> Result<Vec<Record>, HostError> {
        Ok(self.stored(id).await?.records)
    }

    /// The archive of session `id` (everything that happened: messages, approvals, tool runs,
    /// notes), oldest first.
    ///
    /// # Errors
    /// As [`Conversation::stored_records`].
    pub async fn stored_archive(&self, id: &SessionId) -> Result<Vec<ArchiveEntry>, HostError> {
        Ok(self.stored(id).await?.archive)
    }

    /// What the store holds of session `id` (read without taking its lease).
    async fn stored(&self, id: &SessionId) -> Result<crate::store::StoredSession, HostError> {
        self.shared
            .sessions
            .read(id)
            .await?
            .ok_or_else(|| HostError::UnknownSession(id.to_string()))
    }
}
