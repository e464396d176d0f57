//! Idempotency keys in PostgreSQL (issue 22 item 3): rows of `hookline_idempotency_keys`
//! (`migrations/0002_idempotency_keys.sql`), one per key of a session, the same entries the
//! file store keeps (`hookline_host::store::keys`).
//!
//! Claims and settles go through the committer (issue 34 item 3): every key change queued with
//! a batch of appends runs in that batch's transaction, as a few statements over arrays for the
//! whole batch (`unnest`), so keys share the batch's one commit instead of a transaction each.
//! In a batch, claims run first:
//! - the expired row of each claimed key is deleted; the new rows are inserted with
//!   `ON CONFLICT DO NOTHING` (of two claims of one key, in one batch or while another
//!   transaction holds it, one row wins and the other claim reads it);
//! - for the sessions that claimed a key: their expired rows, then, past the bound, their oldest
//!   finished rows down to an eighth below it;
//! - then the settles: one conditional `UPDATE` (answers) and one `DELETE` (forgotten keys), each
//!   matching only the owner's running row.

use std::collections::{HashMap, HashSet};

use deadpool_postgres::GenericClient;
use hookline_messages::session::SessionId;
use tokio::sync::oneshot;
use tokio_postgres::Row;

use hookline_host::store::{
    Claimed, IdempotencyKey, KeyClaim, KeyEntry, KeyOutcome, KeyState, StoreError,
};

fn i64_of(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// What a key job asks.
pub(crate) enum KeyChange {
    /// [`SessionStore::claim_key`](hookline_host::store::SessionStore::claim_key).
    Claim(KeyClaim),
    /// [`SessionStore::settle_key`](hookline_host::store::SessionStore::settle_key).
    Settle {
        key: IdempotencyKey,
        owner: String,
        outcome: Option<KeyOutcome>,
    },
}

/// What a key job got.
#[derive(Debug)]
pub(crate) enum KeyAnswer {
    Claimed(Claimed),
    Settled(bool),
}

/// One key change waiting for the committer.
pub(crate) struct KeyJob {
    pub(crate) session: SessionId,
    pub(crate) change: KeyChange,
    pub(crate) reply: oneshot::Sender<Result<KeyAnswer, StoreError>>,
}

/// Rows of one session and key, as `unnest` arrays.
#[derive(Default)]
struct Pairs {
    sessions: Vec<String>,
    keys: Vec<String>,
}

impl Pairs {
    fn push(&mut self, session: &SessionId, key: &IdempotencyKey) {
        self.sessions.push(session.as_str().to_owned());
        self.keys.push(key.as_str().to_owned());
    }
}

/// Sends each key job its answer once its batch has committed (or the batch's failure).
pub(crate) fn answer(jobs: Vec<KeyJob>, committed: Result<&Vec<KeyAnswer>, &StoreError>) {
    match committed {
        Ok(answers) => {
            for (job, answer) in jobs.into_iter().zip(answers) {
                let answer = match answer {
                    KeyAnswer::Claimed(claimed) => KeyAnswer::Claimed(claimed.clone()),
                    KeyAnswer::Settled(settled) => KeyAnswer::Settled(*settled),
                };
                let _ = job.reply.send(Ok(answer));
            }
        }
        Err(e) => {
            let text = e.with_causes();
            for job in jobs {
                let _ = job.reply.send(Err(StoreError::Database {
                    action: "commit an idempotency key",
                    source: text.clone().into(),
                }));
            }
        }
    }
}

/// Runs `jobs`' key changes in the batch's transaction `tx`; their answers, in order, to send
/// once it has committed.
///
/// # Errors
/// [`StoreError::Database`] when a statement fails (the whole batch then fails).
pub(crate) async fn apply(
    tx: &impl GenericClient,
    jobs: &[KeyJob],
) -> Result<Vec<KeyAnswer>, StoreError> {
    let claims: Vec<(usize, &SessionId, &KeyClaim)> = jobs
        .iter()
        .enumerate()
        .filter_map(|(i, job)| match &job.change {
            KeyChange::Claim(claim) => Some((i, &job.session, claim)),
            KeyChange::Settle { .. } => None,
        })
        .collect();
    let mut answers: HashMap<usize, KeyAnswer> = HashMap::new();
    if !claims.is_empty() {
        for (i, claimed) in claim(tx, &claims).await? {
            answers.insert(i, KeyAnswer::Claimed(claimed));
        }
    }
    for (i, settled) in settle(tx, jobs).await? {
        answers.insert(i, KeyAnswer::Settled(settled));
    }
    Ok((0..jobs.len())
        .map(|i| answers.remove(&i).unwrap_or(KeyAnswer::Settled(false)))
        .collect())
}

async fn claim(
    tx: &impl GenericClient,
    claims: &[(usize, &SessionId, &KeyClaim)],
) -> Result<Vec<(usize, Claimed)>, StoreError> {
    let mut pairs = Pairs::default();
    let (mut digests, mut created, mut owners, mut cutoffs) = (vec![], vec![], vec![], vec![]);
    for (_, session, claim) in claims {
        pairs.push(session, &claim.key);
        digests.push(claim.digest.clone());
        created.push(i64_of(claim.now_ms));
        owners.push(claim.owner.clone());
        cutoffs.push(i64_of(claim.now_ms.saturating_sub(claim.ttl_ms)));
    }
    tx.execute(
        "DELETE FROM hookline_idempotency_keys k \
         USING unnest($1::text[], $2::text[], $3::bigint[]) AS c(s, key, cutoff) \
         WHERE k.session_id = c.s AND k.key = c.key AND k.created_ms <= c.cutoff",
        &[&pairs.sessions, &pairs.keys, &cutoffs],
    )
    .await
    .map_err(|e| StoreError::db("forget expired keys", e))?;
    let inserted = tx
        .query(
            "INSERT INTO hookline_idempotency_keys (session_id, key, digest, created_ms, owner) \
             SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[]) \
             ON CONFLICT (session_id, key) DO NOTHING RETURNING session_id, key, owner",
            &[&pairs.sessions, &pairs.keys, &digests, &created, &owners],
        )
        .await
        .map_err(|e| StoreError::db("claim keys", e))?;
    let won: HashSet<(String, String, String)> = inserted
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2)))
        .collect();
    let is_new = |session: &SessionId, claim: &KeyClaim| {
        won.contains(&(
            session.as_str().to_owned(),
            claim.key.as_str().to_owned(),
            claim.owner.clone(),
        ))
    };
    trim(tx, claims.iter().filter(|(_, s, c)| is_new(s, c))).await?;
    let mut taken = Pairs::default();
    for (_, session, claim) in claims.iter().filter(|(_, s, c)| !is_new(s, c)) {
        taken.push(session, &claim.key);
    }
    let rows = if taken.sessions.is_empty() {
        Vec::new()
    } else {
        tx.query(
            "SELECT k.session_id, k.key, k.digest, k.created_ms, k.owner, k.status, k.body \
             FROM hookline_idempotency_keys k \
             JOIN unnest($1::text[], $2::text[]) AS c(s, key) \
             ON k.session_id = c.s AND k.key = c.key",
            &[&taken.sessions, &taken.keys],
        )
        .await
        .map_err(|e| StoreError::db("read keys", e))?
    };
    let mut found: HashMap<(String, String), &Row> = HashMap::new();
    for row in &rows {
        found.insert((row.get(0), row.get(1)), row);
    }
    let mut out = Vec::with_capacity(claims.len());
    for (i, session, claim) in claims {
        if is_new(session, claim) {
            out.push((*i, Claimed::New));
            continue;
        }
        let lookup = (session.as_str().to_owned(), claim.key.as_str().to_owned());
        let row = found.get(&lookup).ok_or_else(|| StoreError::Database {
            action: "claim a key",
            source: "the key's row was neither inserted nor found".into(),
        })?;
        out.push((*i, Claimed::Existing(entry(session, &claim.key, row)?)));
    }
    Ok(out)
}

/// For the sessions that claimed a key: forgets their expired rows; then, past each claim's
/// `max_keys`, their oldest finished rows down to an eighth below it (as the file store does).
async fn trim<'a>(
    tx: &impl GenericClient,
    claimed: impl Iterator<Item = &'a (usize, &'a SessionId, &'a KeyClaim)>,
) -> Result<(), StoreError> {
    let mut seen = HashSet::new();
    let (mut sessions, mut cutoffs, mut maxes, mut targets) = (vec![], vec![], vec![], vec![]);
    for (_, session, claim) in claimed {
        if !seen.insert(session.as_str()) {
            continue;
        }
        let max = i64::try_from(claim.max_keys).unwrap_or(i64::MAX);
        sessions.push(session.as_str().to_owned());
        cutoffs.push(i64_of(claim.now_ms.saturating_sub(claim.ttl_ms)));
        maxes.push(max);
        targets.push(max - max / 8);
    }
    if sessions.is_empty() {
        return Ok(());
    }
    tx.execute(
        "DELETE FROM hookline_idempotency_keys k \
         USING unnest($1::text[], $2::bigint[]) AS t(s, cutoff) \
         WHERE k.session_id = t.s AND k.created_ms <= t.cutoff",
        &[&sessions, &cutoffs],
    )
    .await
    .map_err(|e| StoreError::db("forget expired keys", e))?;
    tx.execute(
        "WITH b AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[]) \
                    AS b(s, max, target)), \
              held AS (SELECT k.session_id, count(*) AS n FROM hookline_idempotency_keys k \
                       JOIN b ON k.session_id = b.s GROUP BY k.session_id), \
              ranked AS (SELECT k.session_id, k.key, row_number() OVER \
                         (PARTITION BY k.session_id ORDER BY k.created_ms, k.key) AS r \
                         FROM hookline_idempotency_keys k JOIN b ON k.session_id = b.s \
                         WHERE k.owner IS NULL) \
         DELETE FROM hookline_idempotency_keys k USING ranked, held, b \
         WHERE k.session_id = ranked.session_id AND k.key = ranked.key \
           AND held.session_id = ranked.session_id AND b.s = ranked.session_id \
           AND held.n > b.max AND ranked.r <= held.n - b.target",
        &[&sessions, &maxes, &targets],
    )
    .await
    .map_err(|e| StoreError::db("forget the oldest keys", e))?;
    Ok(())
}

/// The settles of `jobs`: whether each matched its owner's running row.
async fn settle(
    tx: &impl GenericClient,
    jobs: &[KeyJob],
) -> Result<Vec<(usize, bool)>, StoreError> {
    let (mut done, mut forgotten) = (Vec::new(), Vec::new());
    let (mut pairs, mut owners, mut statuses, mut bodies) =
        (Pairs::default(), vec![], vec![], vec![]);
    let (mut gone, mut gone_owners) = (Pairs::default(), vec![]);
    for (i, job) in jobs.iter().enumerate() {
        let KeyChange::Settle {
            key,
            owner,
            outcome,
        } = &job.change
        else {
            continue;
        };
        match outcome {
            Some(outcome) => {
                let body =
                    serde_json::to_string(&outcome.body).map_err(|source| StoreError::Corrupt {
                        session: job.session.clone(),
                        what: "idempotency key".into(),
                        source,
                    })?;
                pairs.push(&job.session, key);
                owners.push(owner.clone());
                statuses.push(i32::from(outcome.status));
                bodies.push(body);
                done.push((i, &job.session, key, owner));
            }
            None => {
                gone.push(&job.session, key);
                gone_owners.push(owner.clone());
                forgotten.push((i, &job.session, key, owner));
            }
        }
    }
    let mut matched: HashSet<(String, String, String)> = HashSet::new();
    if !done.is_empty() {
        let rows = tx
            .query(
                "UPDATE hookline_idempotency_keys k \
                 SET owner = NULL, status = u.status, body = u.body \
                 FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::text[]) \
                      AS u(s, key, owner, status, body) \
                 WHERE k.session_id = u.s AND k.key = u.key AND k.owner = u.owner \
                 RETURNING u.s, u.key, u.owner",
                &[&pairs.sessions, &pairs.keys, &owners, &statuses, &bodies],
            )
            .await
            .map_err(|e| StoreError::db("store answers of keys", e))?;
        matched.extend(rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))));
    }
    if !forgotten.is_empty() {
        let rows = tx
            .query(
                "DELETE FROM hookline_idempotency_keys k \
                 USING unnest($1::text[], $2::text[], $3::text[]) AS u(s, key, owner) \
                 WHERE k.session_id = u.s AND k.key = u.key AND k.owner = u.owner \
                 RETURNING u.s, u.key, u.owner",
                &[&gone.sessions, &gone.keys, &gone_owners],
            )
            .await
            .map_err(|e| StoreError::db("forget keys", e))?;
        matched.extend(rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))));
    }
    Ok(done
        .into_iter()
        .chain(forgotten)
        .map(|(i, session, key, owner)| {
            let row = (
                session.as_str().to_owned(),
                key.as_str().to_owned(),
                owner.clone(),
            );
            (i, matched.contains(&row))
        })
        .collect())
}

/// A row (`session_id, key, digest, created_ms, owner, status, body`) as a [`KeyEntry`].
fn entry(id: &SessionId, key: &IdempotencyKey, row: &Row) -> Result<KeyEntry, StoreError> {
    let decode = |source| StoreError::Corrupt {
        session: id.clone(),
        what: "idempotency key".into(),
        source,
    };
    let created: i64 = row.get(3);
    let owner: Option<String> = row.get(4);
    let status: Option<i32> = row.get(5);
    let body: Option<String> = row.get(6);
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
        digest: row.get(2),
        created_ms: u64::try_from(created).unwrap_or(0),
        state,
    })
}
