//! The store's background tasks: the committer (group commit, [`MAX_BATCH`] appends and
//! idempotency key changes in one transaction) and the lease renewer.

use std::sync::atomic::Ordering;
use std::sync::Weak;
use std::time::Duration;

use deadpool_postgres::GenericClient as _;
use hookline_host::store::{StoreError, MAX_BATCH};
use hookline_messages::session::SessionId;
use tokio::sync::mpsc;

use crate::keys::{self, KeyAnswer, KeyJob};
use crate::{len_i64, lock, Inner, Job, Rows, Work, FENCE_MANY_RENEW, FENCE_MANY_WRITE};
use crate::{INSERT_ARCHIVE, INSERT_RECORDS};

/// The committer: every queued append and key change (up to [`MAX_BATCH`]) in one
/// transaction (key changes: issue 34 item 3).
pub(crate) async fn committer(mut rx: mpsc::Receiver<Work>, inner: Weak<Inner>) {
    while let Some(first) = rx.recv().await {
        let Some(store) = inner.upgrade() else {
            match first {
                Work::Append(job) => drop(job.reply.send(Err(StoreError::Closed))),
                Work::Key(job) => drop(job.reply.send(Err(StoreError::Closed))),
            }
            return;
        };
        let mut work = vec![first];
        if store.options.group_commit {
            while work.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(job) => work.push(job),
                    Err(_) => break,
                }
            }
        }
        let (mut batch, mut key_jobs) = (Vec::new(), Vec::new());
        for job in work {
            match job {
                Work::Append(job) => batch.push(job),
                Work::Key(job) => key_jobs.push(job),
            }
        }
        let count = len_i64(batch.len()) as u64;
        let committed = commit_batch(&store, &batch, &key_jobs).await;
        keys::answer(key_jobs, committed.as_ref().map(|(_, answers)| answers));
        match committed.map(|(lost, _)| lost) {
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

/// Commits a batch of appends and key changes; returns the sessions whose fencing check failed
/// (nothing of theirs was written) and the key changes' answers.
async fn commit_batch(
    inner: &Inner,
    batch: &[Job],
    key_jobs: &[KeyJob],
) -> Result<(Vec<SessionId>, Vec<KeyAnswer>), StoreError> {
    let mut client = inner.client().await?;
    let tx = client
        .transaction()
        .await
        .map_err(|e| StoreError::db("begin a commit", e))?;
    let lost = if batch.is_empty() {
        Vec::new()
    } else {
        write_appends(inner, &tx, batch).await?
    };
    let answers = if key_jobs.is_empty() {
        Vec::new()
    } else {
        keys::apply(&tx, key_jobs).await?
    };
    tx.commit()
        .await
        .map_err(|e| StoreError::db("commit appends", e))?;
    Ok((lost, answers))
}

/// The appends of a batch, fenced, in its transaction; the sessions whose fence failed.
async fn write_appends(
    inner: &Inner,
    tx: &deadpool_postgres::Transaction<'_>,
    batch: &[Job],
) -> Result<Vec<SessionId>, StoreError> {
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
    records.insert(tx, INSERT_RECORDS).await?;
    archive.insert(tx, INSERT_ARCHIVE).await?;
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
