//! [`PgWriter`]: the writer of one session, fenced by its lease's token.

use std::sync::Arc;

use async_trait::async_trait;
use hookline_host::store::{SessionFacts, SessionWriter, StoreError};
use hookline_messages::record::{ArchiveEntry, Record};
use hookline_messages::session::SessionId;
use tokio::sync::oneshot;

use crate::{encode, fence_one, len_i64, Inner, Job, Rows, Work, INSERT_ARCHIVE, INSERT_RECORDS};

/// The writer of one PostgreSQL session: its fencing token and where its rows continue.
pub(crate) struct PgWriter {
    pub(crate) id: SessionId,
    pub(crate) token: i64,
    pub(crate) inner: Arc<Inner>,
    pub(crate) next_record: i64,
    pub(crate) next_archive: i64,
}

impl Drop for PgWriter {
    /// A writer dropped without [`SessionWriter::release`] stops being renewed, so its lease
    /// expires after the TTL instead of being held for as long as the store lives.
    fn drop(&mut self) {
        self.inner.drop_hold(&self.id, self.token);
    }
}

impl PgWriter {
    async fn fenced_tx<F>(&self, action: &'static str, body: F) -> Result<(), StoreError>
    where
        F: for<'t> FnOnce(
                &'t deadpool_postgres::Transaction<'t>,
            ) -> futures::future::BoxFuture<'t, Result<(), StoreError>>
            + Send,
    {
        let mut client = self.inner.client().await?;
        let tx = client
            .transaction()
            .await
            .map_err(|e| StoreError::db(action, e))?;
        if let Err(e) = fence_one(&tx, &self.inner, &self.id, self.token).await {
            if matches!(e, StoreError::LeaseLost { .. }) {
                self.inner.drop_hold(&self.id, self.token);
            }
            return Err(e);
        }
        body(&tx).await?;
        tx.commit().await.map_err(|e| StoreError::db(action, e))
    }
}

#[async_trait]
impl SessionWriter for PgWriter {
    fn session_id(&self) -> &SessionId {
        &self.id
    }

    async fn append(
        &mut self,
        records: &[Record],
        archive: &[ArchiveEntry],
    ) -> Result<(), StoreError> {
        if records.is_empty() && archive.is_empty() {
            return Ok(());
        }
        let (reply, answer) = oneshot::channel();
        let job = Job {
            session: self.id.clone(),
            token: self.token,
            first_record: self.next_record,
            records: encode(&self.id, records)?,
            first_archive: self.next_archive,
            archive: encode(&self.id, archive)?,
            reply,
        };
        self.inner
            .jobs
            .send(Work::Append(job))
            .await
            .map_err(|_| StoreError::Closed)?;
        answer.await.map_err(|_| StoreError::Closed)??;
        self.next_record += len_i64(records.len());
        self.next_archive += len_i64(archive.len());
        Ok(())
    }

    async fn replace_records(
        &mut self,
        records: &[Record],
        archive: &[ArchiveEntry],
    ) -> Result<(), StoreError> {
        let (id, first_archive) = (self.id.clone(), self.next_archive);
        let mut new_records = Rows::default();
        new_records.push(&id, 0, &encode(&id, records)?);
        let mut new_archive = Rows::default();
        new_archive.push(&id, first_archive, &encode(&id, archive)?);
        self.fenced_tx("replace records", move |tx| {
            Box::pin(async move {
                tx.execute(
                    "DELETE FROM hookline_records WHERE session_id = $1",
                    &[&id.as_str()],
                )
                .await
                .map_err(|e| StoreError::db("delete records", e))?;
                new_records.insert(tx, INSERT_RECORDS).await?;
                new_archive.insert(tx, INSERT_ARCHIVE).await
            })
        })
        .await?;
        self.next_record = len_i64(records.len());
        self.next_archive += len_i64(archive.len());
        Ok(())
    }

    async fn set_facts(&mut self, facts: &SessionFacts) -> Result<(), StoreError> {
        let text = encode(&self.id, std::slice::from_ref(facts))?.concat();
        let id = self.id.clone();
        self.fenced_tx("update facts", move |tx| {
            Box::pin(async move {
                tx.execute(
                    "UPDATE hookline_sessions SET info = $2 WHERE id = $1",
                    &[&id.as_str(), &text],
                )
                .await
                .map_err(|e| StoreError::db("update facts", e))?;
                Ok(())
            })
        })
        .await
    }

    async fn release(self: Box<Self>) -> Result<(), StoreError> {
        self.inner.drop_hold(&self.id, self.token);
        let client = self.inner.client().await?;
        client
            .execute(
                "UPDATE hookline_sessions SET lease_holder = NULL, lease_expires = NULL \
                 WHERE id = $1 AND lease_token = $2",
                &[&self.id.as_str(), &self.token],
            )
            .await
            .map_err(|e| StoreError::db("release a lease", e))?;
        Ok(())
    }
}
