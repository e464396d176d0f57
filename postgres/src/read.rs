//! Reads of a stored session, each on one snapshot: the whole of it with its archive streamed
//! ([`read_body`], for `read` and `open`), and two reads that fetch only what they answer (issue
//! 49 follow-ups): one page of the archive ([`page`], `SessionStore::archive_page`) and the last
//! approvals an operator answered ([`answered`], `SessionStore::answered_approvals`). The
//! trait's default of each reads the whole archive; here the database counts and filters, and
//! only the rows returned cross the connection.
//!
//! Those two look at the bodies as text, never as `json`: PostgreSQL refuses to take a string holding
//! `\u0000` apart (`unsupported Unicode escape sequence`), and any entry may hold one. The body
//! is the entry as serde_json wrote it, with the `kind` tag first (serde writes an internally
//! tagged enum's tag before its fields), so a body's prefix says its kind exactly.

use deadpool_postgres::{GenericClient, Object, Transaction};
use futures::TryStreamExt;
use hookline_host::store::{operator_answer, ArchivePage, SessionFacts, StoreError};
use hookline_messages::record::{ApprovalRecord, ArchiveEntry, Record};
use hookline_messages::session::SessionId;
use serde::de::DeserializeOwned;

use crate::{decode, len_i64};

async fn read_rows<T: DeserializeOwned>(
    tx: &impl GenericClient,
    sql: &str,
    session: &SessionId,
    what: &str,
) -> Result<Vec<T>, StoreError> {
    let rows = tx
        .query(sql, &[&session.as_str()])
        .await
        .map_err(|e| StoreError::db("read a session", e))?;
    rows.iter()
        .enumerate()
        .map(|(i, row)| decode(session, &format!("{what} {i}"), row.get::<_, &str>(0)))
        .collect()
}

/// Reads a session's facts and records in one snapshot, and hands its archive entries to
/// `each` in order as the rows arrive (streamed: neither the rows nor the entries are kept here).
pub(crate) async fn read_body(
    client: &mut deadpool_postgres::Object,
    session: &SessionId,
    mut each: impl FnMut(ArchiveEntry) + Send,
) -> Result<Option<(SessionFacts, Vec<Record>)>, StoreError> {
    let tx = client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(|e| StoreError::db("begin a read", e))?;
    let Some(info) = tx
        .query_opt(
            "SELECT info FROM hookline_sessions WHERE id = $1",
            &[&session.as_str()],
        )
        .await
        .map_err(|e| StoreError::db("read a session", e))?
    else {
        return Ok(None);
    };
    let facts: SessionFacts = decode(session, "facts", info.get::<_, &str>(0))?;
    let records = read_rows(
        &tx,
        "SELECT body FROM hookline_records WHERE session_id = $1 ORDER BY seq",
        session,
        "record",
    )
    .await?;
    let rows = tx
        .query_raw(
            "SELECT body FROM hookline_archive WHERE session_id = $1 ORDER BY seq",
            [session.as_str()],
        )
        .await
        .map_err(|e| StoreError::db("read a session", e))?;
    futures::pin_mut!(rows);
    let mut n = 0usize;
    while let Some(row) = rows
        .try_next()
        .await
        .map_err(|e| StoreError::db("read a session", e))?
    {
        each(decode(
            session,
            &format!("archive entry {n}"),
            row.get::<_, &str>(0),
        )?);
        n += 1;
    }
    tx.commit()
        .await
        .map_err(|e| StoreError::db("end a read", e))?;
    Ok(Some((facts, records)))
}

/// The archive's length and the user messages among its first `$2` entries, in one row; no row
/// when the session is not stored. A user message is an entry of kind `user-message`, as
/// `count_user_turns` counts them (the body's prefix names the kind exactly).
const PAGE_COUNTS: &str = "SELECT \
     (SELECT count(*) FROM hookline_archive WHERE session_id = $1), \
     (SELECT count(*) FROM (SELECT body FROM hookline_archive WHERE session_id = $1 \
         ORDER BY seq LIMIT $2) AS before \
         WHERE starts_with(before.body, '{\"kind\":\"user-message\",')) \
     FROM hookline_sessions WHERE id = $1";

/// The page's entries, in archive order.
const PAGE_ENTRIES: &str = "SELECT body FROM hookline_archive WHERE session_id = $1 \
     ORDER BY seq OFFSET $2 LIMIT $3";

/// The approvals an operator may have answered, newest first: every approval whose body names
/// `decidedBy` `operator` (a superset of the answers, which [`operator_answer`] then decides
/// exactly on the decoded entry; the field is written without spaces, so no answer is missed).
const ANSWER_ROWS: &str = "SELECT seq, body FROM hookline_archive WHERE session_id = $1 \
     AND starts_with(body, '{\"kind\":\"approval\",') \
     AND strpos(body, '\"decidedBy\":\"operator\"') > 0 \
     ORDER BY seq DESC";

/// Whether the session is stored.
const STORED: &str = "SELECT 1 FROM hookline_sessions WHERE id = $1";

/// A read-only transaction on one snapshot: the counts and the rows of one answer agree.
async fn snapshot(client: &mut Object) -> Result<Transaction<'_>, StoreError> {
    client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(|e| StoreError::db("begin a read", e))
}

/// One page of session `id`'s archive: from entry `offset`, at most `limit` entries; `None` when
/// the session is not stored.
pub(crate) async fn page(
    client: &mut Object,
    id: &SessionId,
    offset: usize,
    limit: usize,
) -> Result<Option<ArchivePage>, StoreError> {
    let tx = snapshot(client).await?;
    let (offset, limit) = (len_i64(offset), len_i64(limit));
    let Some(counts) = tx
        .query_opt(PAGE_COUNTS, &[&id.as_str(), &offset])
        .await
        .map_err(|e| StoreError::db("count an archive", e))?
    else {
        return Ok(None);
    };
    let total: i64 = counts.get(0);
    let turns_before: i64 = counts.get(1);
    let rows = tx
        .query(PAGE_ENTRIES, &[&id.as_str(), &offset, &limit])
        .await
        .map_err(|e| StoreError::db("read an archive page", e))?;
    let entries = rows
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let at = offset.saturating_add(len_i64(i));
            decode::<ArchiveEntry>(id, &format!("archive entry {at}"), row.get::<_, &str>(0))
        })
        .collect::<Result<Vec<_>, _>>()?;
    end(tx).await?;
    Ok(Some(ArchivePage {
        total: u64::try_from(total).unwrap_or(0),
        turns_before: u64::try_from(turns_before).unwrap_or(0),
        entries,
    }))
}

/// The last `keep` approvals an operator answered in session `id`, oldest first; `None` when the
/// session is not stored. The candidate rows come newest first through a portal, `keep` at a
/// time, until `keep` answers are found: a long session's older answers are never fetched.
pub(crate) async fn answered(
    client: &mut Object,
    id: &SessionId,
    keep: usize,
) -> Result<Option<Vec<ApprovalRecord>>, StoreError> {
    let tx = snapshot(client).await?;
    let stored = tx
        .query_opt(STORED, &[&id.as_str()])
        .await
        .map_err(|e| StoreError::db("read a session", e))?;
    if stored.is_none() {
        return Ok(None);
    }
    let mut newest_first = Vec::with_capacity(keep.min(64));
    if keep > 0 {
        let portal = tx
            .bind(ANSWER_ROWS, &[&id.as_str()])
            .await
            .map_err(|e| StoreError::db("read answered approvals", e))?;
        let batch = i32::try_from(keep).unwrap_or(i32::MAX);
        'fetch: loop {
            let rows = tx
                .query_portal(&portal, batch)
                .await
                .map_err(|e| StoreError::db("read answered approvals", e))?;
            let last_batch = rows.len() < usize::try_from(batch).unwrap_or(usize::MAX);
            for row in &rows {
                let seq: i64 = row.get(0);
                let entry = decode(id, &format!("archive entry {seq}"), row.get::<_, &str>(1))?;
                if let Some(record) = operator_answer(entry) {
                    newest_first.push(record);
                    if newest_first.len() == keep {
                        break 'fetch;
                    }
                }
            }
            if last_batch {
                break;
            }
        }
    }
    end(tx).await?;
    newest_first.reverse();
    Ok(Some(newest_first))
}

async fn end(tx: Transaction<'_>) -> Result<(), StoreError> {
    tx.commit()
        .await
        .map_err(|e| StoreError::db("end a read", e))
}
