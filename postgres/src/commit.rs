//! The store's background tasks: the committer (group commit, [`MAX_BATCH`] appends in one
//! transaction) and the lease renewer.

use std::sync::atomic::Ordering;
use std::sync::Weak;
use std::time::Duration;

use deadpool_postgres::GenericClient as _;
use hookline_host::store::{StoreError, MAX_BATCH};
use hookline_messages::session::SessionId;
use tokio::sync::mpsc;

use crate::{len_i64, lock, Inner, Job, Rows, FENCE_MANY_RENEW, FENCE_MANY_WRITE};
use crate::{INSERT_ARCHIVE, INSERT_RECORDS};

/// The committer: every queued append (up to [`MAX_BATCH`]) in one transaction.
pub(crate) async fn committer(mut rx: mpsc::Receiver<Job>, inner: Weak<Inner>) {
    while let Some(first) = rx.recv().await {
        let Some(store) = inner.upgrade() else {
            let _ = first.reply.send(Err(StoreError::Closed));
            return;
        };
        let mut batch = vec![first];
        if store.options.group_commit {
            while batch.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(job) => batch.push(job),
                    Err(_) => break,
                }
            }
        }
        let count = len_i64(batch.len()) as u64;
        match commit_batch(&store, &batch).await {
            Ok(lost) => {
                store.commits.fetch_add(1, Ordering::Relaxed);
                store
                    .appends
                    .fetch_add(count - lost.len() as u64, Ordering::Relaxed);
                for job in batch {
                    let answer = if lost.contains(&job.session) {
                        store.drop_hold(&job.session, job.token);
                        Err(StoreError::LeaseLost {
                            session: job.session,
                            token: job.token,
                        })
                    } else {
                        Ok(())
                    };
                    let _ = job.reply.send(answer);
                }
            }
            Err(e) => {
                // Nothing of the batch was committed; every append in it fails with the cause
                // (the driver's own text is only "db error": its cause says what happened).
                let text = e.with_causes();
                for job in batch {
                    let _ = job.reply.send(Err(StoreError::Database {
                        action: "commit an append",
                        source: text.clone().into(),
                    }));
                }
            }
        }
    }
}

/// Commits a batch; returns the sessions whose fencing check failed (nothing of theirs was
/// written).
async fn commit_batch(inner: &Inner, batch: &[Job]) -> Result<Vec<SessionId>, StoreError> {
    let mut client = inner.client().await?;
    let tx = client
        .transaction()
        .await
        .map_err(|e| StoreError::db("begin a commit", e))?;
    let ids: Vec<&str> = batch.iter().map(|j| j.session.as_str()).collect();
    let tokens: Vec<i64> = batch.iter().map(|j| j.token).collect();
    let rows = tx
        .query(FENCE_MANY_WRITE, &[&ids, &tokens, &inner.ttl_ms()])
        .await
        .map_err(|e| StoreError::db("check leases", e))?;
    let fenced: std::collections::HashSet<String> = rows.iter().map(|r| r.get(0)).collect();
    let (mut records, mut archive, mut lost) = (Rows::default(), Rows::default(), Vec::new());
    for job in batch {
        if fenced.contains(job.session.as_str()) {
            records.push(&job.session, job.first_record, &job.records);
            archive.push(&job.session, job.first_archive, &job.archive);
        } else {
            lost.push(job.session.clone());
        }
    }
    records.insert(&tx, INSERT_RECORDS).await?;
    archive.insert(&tx, INSERT_ARCHIVE).await?;
    tx.commit()
        .await
        .map_err(|e| StoreError::db("commit appends", e))?;
    Ok(lost)
}

/// Renews every held lease in one statement; forgets those taken over.
pub(crate) async fn renew(inner: &Inner) -> Result<usize, StoreError> {
    let (ids, tokens): (Vec<String>, Vec<i64>) = lock(&inner.held)
        .iter()
        .map(|(id, token)| (id.as_str().to_owned(), *token))
        .unzip();
    if ids.is_empty() {
        return Ok(0);
    }
    let client = inner.client().await?;
    let rows = client
        .query(FENCE_MANY_RENEW, &[&ids, &tokens, &inner.ttl_ms()])
        .await
        .map_err(|e| StoreError::db("renew leases", e))?;
    let renewed: std::collections::HashSet<String> = rows.iter().map(|r| r.get(0)).collect();
    let mut held = lock(&inner.held);
    for (id, token) in ids.iter().zip(tokens) {
        if !renewed.contains(id) {
            let id = SessionId::from(id.as_str());
            if held.get(&id) == Some(&token) {
                tracing::warn!("lease on session {id} was taken over; it is no longer renewed");
                held.remove(&id);
            }
        }
    }
    Ok(renewed.len())
}

/// Renews the held leases every `every` until the store is dropped.
pub(crate) async fn renewer(inner: Weak<Inner>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tick.tick().await;
    loop {
        tick.tick().await;
        let Some(store) = inner.upgrade() else {
            return;
        };
        if let Err(e) = renew(&store).await {
            tracing::warn!("could not renew session leases: {e}");
        }
    }
}
