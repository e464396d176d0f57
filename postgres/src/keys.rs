//! Idempotency keys in PostgreSQL (issue 22 item 3): rows of `hookline_idempotency_keys`
//! (`migrations/0002_idempotency_keys.sql`), one per key of a session, the same entries the
//! file store keeps (`hookline_host::store::keys`).
//!
//! A claim is one transaction: an expired row of the key is deleted, the new row inserted with
//! `ON CONFLICT DO NOTHING` (two claims of one key at once: the second waits for the first's
//! commit and then finds its row), and, when it was inserted, the session's expired rows and
//! its oldest finished rows past the bound deleted. A settle is one conditional statement that
//! matches only the owner's running row.

use deadpool_postgres::GenericClient;
use hookline_messages::session::SessionId;
use tokio_postgres::Row;

use hookline_host::store::{
    Claimed, IdempotencyKey, KeyClaim, KeyEntry, KeyOutcome, KeyState, StoreError,
};

fn i64_of(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// [`SessionStore::claim_key`](hookline_host::store::SessionStore::claim_key).
pub(crate) async fn claim(
    client: &mut deadpool_postgres::Object,
    id: &SessionId,
    claim: &KeyClaim,
) -> Result<Claimed, StoreError> {
    let cutoff = i64_of(claim.now_ms.saturating_sub(claim.ttl_ms));
    let max = i64::try_from(claim.max_keys).unwrap_or(i64::MAX);
    let tx = client
        .transaction()
        .await
        .map_err(|e| StoreError::db("begin a key claim", e))?;
    tx.execute(
        "DELETE FROM hookline_idempotency_keys \
         WHERE session_id = $1 AND key = $2 AND created_ms <= $3",
        &[&id.as_str(), &claim.key.as_str(), &cutoff],
    )
    .await
    .map_err(|e| StoreError::db("forget an expired key", e))?;
    let inserted = tx
        .execute(
            "INSERT INTO hookline_idempotency_keys (session_id, key, digest, created_ms, owner) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (session_id, key) DO NOTHING",
            &[
                &id.as_str(),
                &claim.key.as_str(),
                &claim.digest,
                &i64_of(claim.now_ms),
                &claim.owner,
            ],
        )
        .await
        .map_err(|e| StoreError::db("claim a key", e))?;
    let claimed = if inserted == 1 {
        trim(&tx, id, cutoff, max).await?;
        Claimed::New
    } else {
        let row = tx
            .query_one(
                "SELECT digest, created_ms, owner, status, body \
                 FROM hookline_idempotency_keys WHERE session_id = $1 AND key = $2",
                &[&id.as_str(), &claim.key.as_str()],
            )
            .await
            .map_err(|e| StoreError::db("read a key", e))?;
        Claimed::Existing(entry(id, &claim.key, &row)?)
    };
    tx.commit()
        .await
        .map_err(|e| StoreError::db("commit a key claim", e))?;
    Ok(claimed)
}

/// Forgets the session's expired rows; then, past `max` rows, its oldest finished ones down to
/// an eighth below the bound (as the file store does).
async fn trim(
    tx: &impl GenericClient,
    id: &SessionId,
    cutoff: i64,
    max: i64,
) -> Result<(), StoreError> {
    tx.execute(
        "DELETE FROM hookline_idempotency_keys WHERE session_id = $1 AND created_ms <= $2",
        &[&id.as_str(), &cutoff],
    )
    .await
    .map_err(|e| StoreError::db("forget expired keys", e))?;
    let target = max - max / 8;
    tx.execute(
        "WITH held AS (SELECT count(*) AS n FROM hookline_idempotency_keys WHERE session_id = $1) \
         DELETE FROM hookline_idempotency_keys WHERE session_id = $1 AND key IN ( \
             SELECT key FROM hookline_idempotency_keys WHERE session_id = $1 AND owner IS NULL \
             ORDER BY created_ms, key \
             LIMIT (SELECT CASE WHEN n > $2 THEN n - $3 ELSE 0 END FROM held))",
        &[&id.as_str(), &max, &target],
    )
    .await
    .map_err(|e| StoreError::db("forget the oldest keys", e))?;
    Ok(())
}

/// A row as a [`KeyEntry`].
fn entry(id: &SessionId, key: &IdempotencyKey, row: &Row) -> Result<KeyEntry, StoreError> {
    let decode = |source| StoreError::Corrupt {
        session: id.clone(),
        what: "idempotency key".into(),
        source,
    };
    let created: i64 = row.get(1);
    let owner: Option<String> = row.get(2);
    let status: Option<i32> = row.get(3);
    let body: Option<String> = row.get(4);
    let state = match (owner, status, body) {
        (Some(owner), _, _) => KeyState::Running { owner },
        (None, status, body) => KeyState::Done {
            outcome: KeyOutcome {
                status: status.and_then(|s| u16::try_from(s).ok()).unwrap_or(500),
                body: serde_json::from_str(body.as_deref().unwrap_or("null")).map_err(decode)?,
            },
        },
    };
    Ok(KeyEntry {
        key: key.clone(),
        digest: row.get(0),
        created_ms: u64::try_from(created).unwrap_or(0),
        state,
    })
}

/// [`SessionStore::settle_key`](hookline_host::store::SessionStore::settle_key).
pub(crate) async fn settle(
    client: &deadpool_postgres::Object,
    id: &SessionId,
    key: &IdempotencyKey,
    owner: &str,
    outcome: Option<&KeyOutcome>,
) -> Result<bool, StoreError> {
    let changed = match outcome {
        Some(outcome) => {
            let body =
                serde_json::to_string(&outcome.body).map_err(|source| StoreError::Corrupt {
                    session: id.clone(),
                    what: "idempotency key".into(),
                    source,
                })?;
            client
                .execute(
                    "UPDATE hookline_idempotency_keys SET owner = NULL, status = $4, body = $5 \
                     WHERE session_id = $1 AND key = $2 AND owner = $3",
                    &[
                        &id.as_str(),
                        &key.as_str(),
                        &owner,
                        &i32::from(outcome.status),
                        &body,
                    ],
                )
                .await
        }
        None => {
            client
                .execute(
                    "DELETE FROM hookline_idempotency_keys \
                     WHERE session_id = $1 AND key = $2 AND owner = $3",
                    &[&id.as_str(), &key.as_str(), &owner],
                )
                .await
        }
    }
    .map_err(|e| StoreError::db("settle a key", e))?;
    Ok(changed == 1)
}
