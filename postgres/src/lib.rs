//! [`PgStore`]: the PostgreSQL [`SessionStore`] several nodes share (issue 14 items 1 to 3).
//!
//! tokio-postgres with a deadpool-postgres pool (chosen over sqlx: no compile-time database, no
//! macros, a small dependency tree, and the array parameters group commit needs). Records and
//! archive entries are stored as their JSON text, so they read back exactly as the file store's.
//!
//! Leases with fencing: `hookline_sessions` holds each session's lease (holder, expiry, fencing
//! token). [`SessionStore::open`] takes the lease only when it is released or expired, raising
//! the token; every write runs, in its own transaction, a conditional `UPDATE` on the session's
//! row that matches only the writer's token. A writer whose session was taken over gets
//! [`StoreError::LeaseLost`] and its transaction writes nothing. The `UPDATE` also locks the row
//! until commit, so a takeover waits for a write in flight and then sees it.
//!
//! Group commit: appends go to one committer task per store, which takes every append queued
//! (up to [`MAX_BATCH`]) and commits them in one transaction: one fencing `UPDATE` for all of
//! them, one `INSERT` for all records, one for all archive entries. Idempotency keys' claims and
//! answers queue with them and run in the same transaction ([`keys`], issue 34 item 3). A
//! background task renews the held leases every [`PgStoreOptions::renew_every`].

mod keys;
pub mod migrate;

use keys::{KeyAnswer, KeyChange, KeyJob};

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use hookline_messages::record::{ArchiveEntry, Record};
use hookline_messages::session::SessionId;
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::NoTls;

use hookline_host::store::{
    fresh_session_id, NewSession, SessionFacts, SessionStore, SessionWriter, StoredSession,
    ID_TRIES,
};
use hookline_host::store::{Claimed, IdempotencyKey, KeyClaim, KeyOutcome};
use hookline_host::store::{CommitStats, MAX_BATCH};
use hookline_host::store::{StoreError, MAX_RECORD_BYTES};

/// How a [`PgStore`] connects, commits and holds leases.
#[derive(Clone, Debug)]
pub struct PgStoreOptions {
    /// This node's name, stored as the lease holder (shown in [`StoreError::Leased`]).
    pub node: String,
    /// How long a lease lasts without renewal (default 30 s).
    pub lease_ttl: Duration,
    /// How often held leases are renewed (default 10 s, a third of the TTL); `None` never.
    pub renew_every: Option<Duration>,
    /// Commit many sessions' appends in one transaction (default). Off: one per append.
    pub group_commit: bool,
    /// Connections in the pool (default 8).
    pub pool_size: usize,
    /// Appends waiting for the committer at most; callers wait beyond it (default 4096).
    pub queue: usize,
    /// Apply missing migrations when connecting (`hookline serve --migrate`); otherwise a
    /// database whose schema is behind is refused.
    pub migrate: bool,
}

impl Default for PgStoreOptions {
    fn default() -> Self {
        Self {
            node: format!("pid-{}", std::process::id()),
            lease_ttl: Duration::from_secs(30),
            renew_every: Some(Duration::from_secs(10)),
            group_commit: true,
            pool_size: 8,
            queue: 4096,
            migrate: false,
        }
    }
}

/// A session's lease as the database holds it (for inspection and tests).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The node holding it, if any.
    pub holder: Option<String>,
    /// The fencing token: raised by one on every takeover.
    pub token: i64,
    /// Milliseconds until it expires (negative when expired); `None` when released.
    pub expires_in_ms: Option<i64>,
}

/// The PostgreSQL store. Clones share one pool, committer and renewer.
#[derive(Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore")
            .field("node", &self.inner.options.node)
            .finish()
    }
}

struct Inner {
    pool: Pool,
    jobs: mpsc::Sender<Work>,
    options: PgStoreOptions,
    /// The leases this store holds: session and fencing token. Renewed in the background.
    held: Mutex<HashMap<SessionId, i64>>,
    appends: AtomicU64,
    commits: AtomicU64,
}

/// What waits for the committer: an append, or a key change.
enum Work {
    Append(Job),
    Key(KeyJob),
}

/// One append waiting for the committer.
struct Job {
    session: SessionId,
    token: i64,
    first_record: i64,
    records: Vec<String>,
    first_archive: i64,
    archive: Vec<String>,
    reply: oneshot::Sender<Result<(), StoreError>>,
}

/// Connects a pool to `url` (a libpq URL or key=value string; no TLS).
///
/// # Errors
/// [`StoreError::Database`] when the URL does not parse or the pool cannot be built.
pub fn pool(url: &str, size: usize) -> Result<Pool, StoreError> {
    let config: tokio_postgres::Config = url
        .parse()
        .map_err(|e| StoreError::db("parse the database URL", e))?;
    let manager = Manager::from_config(
        config,
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(size.max(1))
        .wait_timeout(Some(Duration::from_secs(30)))
        .create_timeout(Some(Duration::from_secs(10)))
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .build()
        .map_err(|e| StoreError::db("build a connection pool", e))
}

/// Applies the embedded migrations to the database at `url` (`hookline store migrate`).
/// Returns the names applied now.
///
/// # Errors
/// [`StoreError::Database`] when it cannot connect or a migration fails.
pub async fn migrate_url(url: &str) -> Result<Vec<&'static str>, StoreError> {
    let pool = pool(url, 1)?;
    let mut client = pool.get().await.map_err(|e| StoreError::db("connect", e))?;
    migrate::migrate(&mut client).await
}

impl PgStore {
    /// Connects to `url`, checks (or, with [`PgStoreOptions::migrate`], applies) the schema,
    /// and starts the committer and lease renewer tasks on the current tokio runtime. They stop
    /// when the last clone of the store and its writers are dropped.
    ///
    /// # Errors
    /// [`StoreError::Database`] when it cannot connect or the schema is behind.
    pub async fn connect(url: &str, options: PgStoreOptions) -> Result<Self, StoreError> {
        let pool = pool(url, options.pool_size)?;
        let mut client = pool.get().await.map_err(|e| StoreError::db("connect", e))?;
        if options.migrate {
            migrate::migrate(&mut client).await?;
        }
        let have = migrate::current_version(&client).await?;
        if have < migrate::latest_version() {
            return Err(StoreError::SchemaBehind {
                have,
                want: migrate::latest_version(),
            });
        }
        drop(client);
        let (jobs, rx) = mpsc::channel(options.queue.max(1));
        let inner = Arc::new(Inner {
            pool,
            jobs,
            options,
            held: Mutex::new(HashMap::new()),
            appends: AtomicU64::new(0),
            commits: AtomicU64::new(0),
        });
        tokio::spawn(committer(rx, Arc::downgrade(&inner)));
        if let Some(every) = inner.options.renew_every {
            tokio::spawn(renewer(Arc::downgrade(&inner), every));
        }
        Ok(Self { inner })
    }

    /// The committer's counters so far: appends committed and transactions used.
    pub fn stats(&self) -> CommitStats {
        CommitStats {
            appends: self.inner.appends.load(Ordering::Relaxed),
            commits: self.inner.commits.load(Ordering::Relaxed),
        }
    }

    /// The session's lease as stored; `None` for an unknown session.
    ///
    /// # Errors
    /// [`StoreError::Database`].
    pub async fn lease(&self, id: &SessionId) -> Result<Option<Lease>, StoreError> {
        let client = self.inner.client().await?;
        let row = client
            .query_opt(
                "SELECT lease_holder, lease_token, \
                 (extract(epoch FROM lease_expires - now()) * 1000)::bigint \
                 FROM hookline_sessions WHERE id = $1",
                &[&id.as_str()],
            )
            .await
            .map_err(|e| StoreError::db("read a lease", e))?;
        Ok(row.map(|row| Lease {
            holder: row.get(0),
            token: row.get(1),
            expires_in_ms: row.get(2),
        }))
    }

    /// Renews every lease this store holds now (the renewer does this every
    /// [`PgStoreOptions::renew_every`]); returns how many are still held.
    ///
    /// # Errors
    /// [`StoreError::Database`].
    pub async fn renew_now(&self) -> Result<usize, StoreError> {
        renew(&self.inner).await
    }
}

impl PgStore {
    /// A key change, committed with the batch the committer forms now.
    async fn key_change(&self, id: &SessionId, change: KeyChange) -> Result<KeyAnswer, StoreError> {
        let (reply, answer) = oneshot::channel();
        let job = KeyJob {
            session: id.clone(),
            change,
            reply,
        };
        self.inner
            .jobs
            .send(Work::Key(job))
            .await
            .map_err(|_| StoreError::Closed)?;
        answer.await.map_err(|_| StoreError::Closed)?
    }
}

impl Inner {
    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        self.pool
            .get()
            .await
            .map_err(|e| StoreError::db("get a connection", e))
    }

    fn ttl_ms(&self) -> i64 {
        i64::try_from(self.options.lease_ttl.as_millis()).unwrap_or(i64::MAX)
    }

    fn hold(&self, id: &SessionId, token: i64) {
        lock(&self.held).insert(id.clone(), token);
    }

    fn drop_hold(&self, id: &SessionId, token: i64) {
        let mut held = lock(&self.held);
        if held.get(id) == Some(&token) {
            held.remove(id);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn encode<T: Serialize>(session: &SessionId, items: &[T]) -> Result<Vec<String>, StoreError> {
    items
        .iter()
        .map(|item| {
            let text = serde_json::to_string(item).map_err(|source| StoreError::Encode {
                path: session.as_str().into(),
                source,
            })?;
            if text.len() > MAX_RECORD_BYTES {
                return Err(StoreError::RecordTooLarge {
                    path: session.as_str().into(),
                    size: text.len(),
                    max: MAX_RECORD_BYTES,
                });
            }
            Ok(text)
        })
        .collect()
}

fn decode<T: DeserializeOwned>(
    session: &SessionId,
    what: &str,
    text: &str,
) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|source| StoreError::Corrupt {
        session: session.clone(),
        what: what.to_owned(),
        source,
    })
}

fn len_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

const INSERT_RECORDS: &str = "INSERT INTO hookline_records (session_id, seq, body) \
     SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[])";
const INSERT_ARCHIVE: &str = "INSERT INTO hookline_archive (session_id, seq, body) \
     SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[])";

/// Rows for one `INSERT ... unnest`: session ids, sequence numbers, bodies.
#[derive(Default)]
struct Rows {
    sessions: Vec<String>,
    seqs: Vec<i64>,
    bodies: Vec<String>,
}

impl Rows {
    fn push(&mut self, session: &SessionId, first: i64, bodies: &[String]) {
        for (i, body) in bodies.iter().enumerate() {
            self.sessions.push(session.as_str().to_owned());
            self.seqs.push(first + len_i64(i));
            self.bodies.push(body.clone());
        }
    }

    async fn insert(&self, tx: &impl GenericClient, sql: &str) -> Result<(), StoreError> {
        if self.sessions.is_empty() {
            return Ok(());
        }
        tx.execute(sql, &[&self.sessions, &self.seqs, &self.bodies])
            .await
            .map_err(|e| StoreError::db("insert rows", e))?;
        Ok(())
    }
}

/// The fencing check of one write: renews the lease and locks the row, or matches nothing when
/// a newer token exists.
const FENCE_ONE: &str = "UPDATE hookline_sessions \
     SET updated_at = now(), lease_expires = now() + $3::bigint * interval '1 millisecond' \
     WHERE id = $1 AND lease_token = $2 AND lease_holder IS NOT NULL";

async fn fence_one(
    tx: &impl GenericClient,
    inner: &Inner,
    session: &SessionId,
    token: i64,
) -> Result<(), StoreError> {
    let n = tx
        .execute(FENCE_ONE, &[&session.as_str(), &token, &inner.ttl_ms()])
        .await
        .map_err(|e| StoreError::db("check a lease", e))?;
    if n == 0 {
        return Err(StoreError::LeaseLost {
            session: session.clone(),
            token,
        });
    }
    Ok(())
}

/// The fencing check of many sessions at once (a group commit's batch, the renewer's round):
/// renews the leases whose token still matches and returns their ids. The rows are locked in id
/// order first: two such statements of one node (the committer's and the renewer's) lock
/// overlapping sets of rows, and in any other order they deadlock (PostgreSQL then aborts one;
/// seen under load, with a few thousand sessions open).
macro_rules! fence_many {
    ($set:literal) => {
        concat!(
            "WITH locked AS MATERIALIZED (",
            "SELECT s.id FROM hookline_sessions s ",
            "JOIN unnest($1::text[], $2::bigint[]) AS f(id, token) ",
            "ON s.id = f.id AND s.lease_token = f.token ",
            "WHERE s.lease_holder IS NOT NULL ORDER BY s.id FOR UPDATE OF s) ",
            "UPDATE hookline_sessions s SET ",
            $set,
            "lease_expires = now() + $3::bigint * interval '1 millisecond' ",
            "FROM locked WHERE s.id = locked.id RETURNING s.id"
        )
    };
}

/// [`fence_many!`] for a group commit: also marks the sessions written.
const FENCE_MANY_WRITE: &str = fence_many!("updated_at = now(), ");
/// [`fence_many!`] for the renewer.
const FENCE_MANY_RENEW: &str = fence_many!("");

/// The committer: every queued append and key change (up to [`MAX_BATCH`]) in one
/// transaction.
async fn committer(mut rx: mpsc::Receiver<Work>, inner: Weak<Inner>) {
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
async fn renew(inner: &Inner) -> Result<usize, StoreError> {
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
async fn renewer(inner: Weak<Inner>, every: Duration) {
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

/// Reads a session's records and archive in one snapshot.
async fn read_body(
    client: &mut deadpool_postgres::Object,
    session: &SessionId,
) -> Result<Option<StoredSession>, StoreError> {
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
    let archive = read_rows(
        &tx,
        "SELECT body FROM hookline_archive WHERE session_id = $1 ORDER BY seq",
        session,
        "archive entry",
    )
    .await?;
    tx.commit()
        .await
        .map_err(|e| StoreError::db("end a read", e))?;
    Ok(Some(StoredSession {
        facts,
        records,
        archive,
        repaired: Vec::new(),
    }))
}

#[async_trait]
impl SessionStore for PgStore {
    async fn create(
        &self,
        new: NewSession,
        records: &[Record],
    ) -> Result<(SessionFacts, Box<dyn SessionWriter>), StoreError> {
        let inner = &self.inner;
        let mut client = inner.client().await?;
        for _ in 0..ID_TRIES {
            let id = fresh_session_id();
            let info = SessionFacts::new(id.clone(), new.clone());
            let text = encode(&id, std::slice::from_ref(&info))?.concat();
            let bodies = encode(&id, records)?;
            let tx = client
                .transaction()
                .await
                .map_err(|e| StoreError::db("begin a create", e))?;
            let row = tx
                .query_opt(
                    "INSERT INTO hookline_sessions (id, info, lease_holder, lease_token, lease_expires) \
                     VALUES ($1, $2, $3, 1, now() + $4::bigint * interval '1 millisecond') \
                     ON CONFLICT (id) DO NOTHING RETURNING lease_token",
                    &[&id.as_str(), &text, &inner.options.node, &inner.ttl_ms()],
                )
                .await
                .map_err(|e| StoreError::db("create a session", e))?;
            let Some(row) = row else {
                continue;
            };
            let token: i64 = row.get(0);
            let mut rows = Rows::default();
            rows.push(&id, 0, &bodies);
            rows.insert(&tx, INSERT_RECORDS).await?;
            tx.commit()
                .await
                .map_err(|e| StoreError::db("commit a create", e))?;
            inner.hold(&id, token);
            let writer = PgWriter {
                id,
                token,
                inner: Arc::clone(inner),
                next_record: len_i64(records.len()),
                next_archive: 0,
            };
            return Ok((info, Box::new(writer)));
        }
        Err(StoreError::NoFreeId { tries: ID_TRIES })
    }

    async fn open(
        &self,
        id: &SessionId,
    ) -> Result<Option<(StoredSession, Box<dyn SessionWriter>)>, StoreError> {
        let inner = &self.inner;
        let mut client = inner.client().await?;
        let taken = client
            .query_opt(
                "UPDATE hookline_sessions \
                 SET lease_holder = $2, lease_token = lease_token + 1, updated_at = now(), \
                     lease_expires = now() + $3::bigint * interval '1 millisecond' \
                 WHERE id = $1 AND (lease_holder IS NULL OR lease_expires <= now()) \
                 RETURNING lease_token",
                &[&id.as_str(), &inner.options.node, &inner.ttl_ms()],
            )
            .await
            .map_err(|e| StoreError::db("take a lease", e))?;
        let Some(taken) = taken else {
            let held = client
                .query_opt(
                    "SELECT lease_holder, \
                     (extract(epoch FROM lease_expires - now()) * 1000)::bigint \
                     FROM hookline_sessions WHERE id = $1",
                    &[&id.as_str()],
                )
                .await
                .map_err(|e| StoreError::db("read a lease", e))?;
            return match held {
                None => Ok(None),
                Some(row) => {
                    let holder: Option<String> = row.get(0);
                    let left: Option<i64> = row.get(1);
                    Err(StoreError::Leased {
                        session: id.clone(),
                        holder: format!(
                            "node {} for {} ms more",
                            holder.unwrap_or_default(),
                            left.unwrap_or(0)
                        ),
                    })
                }
            };
        };
        let token: i64 = taken.get(0);
        inner.hold(id, token);
        // The takeover's UPDATE waited for any write in flight on the row; everything the
        // previous holder committed is visible now.
        let Some(stored) = read_body(&mut client, id).await? else {
            return Ok(None);
        };
        let writer = PgWriter {
            id: id.clone(),
            token,
            inner: Arc::clone(inner),
            next_record: len_i64(stored.records.len()),
            next_archive: len_i64(stored.archive.len()),
        };
        Ok(Some((stored, Box::new(writer))))
    }

    async fn read(&self, id: &SessionId) -> Result<Option<StoredSession>, StoreError> {
        let mut client = self.inner.client().await?;
        read_body(&mut client, id).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        let client = self.inner.client().await?;
        client
            .execute("SELECT 1", &[])
            .await
            .map_err(|e| StoreError::db("answer a ping", e))?;
        Ok(())
    }

    async fn sessions(&self) -> Result<Vec<SessionId>, StoreError> {
        let client = self.inner.client().await?;
        let rows = client
            .query("SELECT id FROM hookline_sessions ORDER BY id", &[])
            .await
            .map_err(|e| StoreError::db("list sessions", e))?;
        Ok(rows
            .iter()
            .map(|r| SessionId::from(r.get::<_, &str>(0)))
            .collect())
    }

    async fn claim_key(&self, id: &SessionId, claim: &KeyClaim) -> Result<Claimed, StoreError> {
        match self.key_change(id, KeyChange::Claim(claim.clone())).await? {
            KeyAnswer::Claimed(claimed) => Ok(claimed),
            KeyAnswer::Settled(_) => Err(StoreError::Closed),
        }
    }

    async fn settle_key(
        &self,
        id: &SessionId,
        key: &IdempotencyKey,
        owner: &str,
        outcome: Option<&KeyOutcome>,
    ) -> Result<bool, StoreError> {
        let change = KeyChange::Settle {
            key: key.clone(),
            owner: owner.to_owned(),
            outcome: outcome.cloned(),
        };
        match self.key_change(id, change).await? {
            KeyAnswer::Settled(settled) => Ok(settled),
            KeyAnswer::Claimed(_) => Err(StoreError::Closed),
        }
    }
}

/// The writer of one PostgreSQL session: its fencing token and where its rows continue.
struct PgWriter {
    id: SessionId,
    token: i64,
    inner: Arc<Inner>,
    next_record: i64,
    next_archive: i64,
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
