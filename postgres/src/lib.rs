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
//!
//! Liveness (issue 40 item 1, [`liveness`]): each store holds an advisory lock on its incarnation
//! for as long as it runs, and a lease records the incarnation that took it; a session whose
//! holder's lock is gone (the process died) is taken over at once, without waiting for the lease
//! to expire. The fencing token stays the guarantee.
//!
//! TLS ([`connect`]): `sslmode` in the URL, rustls, a CA file.

mod api_keys;
mod commit;
pub mod connect;
mod keys;
mod liveness;
pub mod migrate;
mod read;
mod writer;

use commit::{committer, renew, renewer};
use read::read_body;
use writer::PgWriter;

use keys::{KeyAnswer, KeyChange, KeyJob};

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use hookline_messages::record::{ApprovalRecord, Record};
use hookline_messages::session::SessionId;
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};

pub use connect::{target, Target, TlsMode};

use hookline_host::store::CommitStats;
use hookline_host::store::{
    fresh_session_id, ArchivePage, ArchiveSummary, Holder, NewSession, OpenedSession, SessionFacts,
    SessionStore, SessionWriter, StoredSession, ID_TRIES,
};
use hookline_host::store::{Claimed, IdempotencyKey, KeyClaim, KeyOutcome};
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
    /// The CA certificates (PEM) `sslmode=verify-ca` and `verify-full` trust; the URL's
    /// `sslrootcert`, else the public web roots, when `None` (`--database-ca`).
    pub ca_file: Option<PathBuf>,
    /// How long a lost liveness connection waits before it connects and locks again (default
    /// 500 ms; [`liveness`]).
    pub liveness_retry: Duration,
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
            ca_file: None,
            liveness_retry: Duration::from_millis(500),
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
    /// Whether the store that took it still runs (its liveness lock is held); `None` when the
    /// lease names no incarnation.
    pub holder_alive: Option<bool>,
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

pub(crate) struct Inner {
    pool: Pool,
    /// This store's incarnation: the node's name and a random suffix, new on every connect.
    incarnation: String,
    /// The liveness lock on `incarnation`, held while the store lives.
    _liveness: liveness::Liveness,
    jobs: mpsc::Sender<Work>,
    options: PgStoreOptions,
    /// The leases this store holds: session and fencing token. Renewed in the background.
    held: Mutex<HashMap<SessionId, i64>>,
    appends: AtomicU64,
    commits: AtomicU64,
}

/// What waits for the committer: an append, or a key change.
pub(crate) enum Work {
    Append(Job),
    Key(KeyJob),
}

/// One append waiting for the committer.
pub(crate) struct Job {
    session: SessionId,
    token: i64,
    first_record: i64,
    records: Vec<String>,
    first_archive: i64,
    archive: Vec<String>,
    reply: oneshot::Sender<Result<(), StoreError>>,
}

/// Connects a pool to `target` ([`connect::target`]: the URL and its TLS).
///
/// # Errors
/// [`StoreError::Database`] when the pool cannot be built.
pub fn pool(target: &Target, size: usize) -> Result<Pool, StoreError> {
    let manager = Manager::from_config(
        target.config.clone(),
        target.tls.clone(),
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

/// Applies the embedded migrations to the database at `url` (`hookline store migrate`), over
/// TLS as its `sslmode` says, trusting `ca_file` when given. Returns the names applied now.
///
/// # Errors
/// [`StoreError::Database`] when the URL does not parse, it cannot connect or a migration fails.
pub async fn migrate_url(
    url: &str,
    ca_file: Option<&std::path::Path>,
) -> Result<Vec<&'static str>, StoreError> {
    let pool = pool(&target(url, ca_file)?, 1)?;
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
        let target = target(url, options.ca_file.as_deref())?;
        let pool = pool(&target, options.pool_size)?;
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
        let incarnation = format!("{}/{}", options.node, fresh_session_id());
        let liveness = liveness::hold(target, incarnation.clone(), options.liveness_retry).await?;
        let (jobs, rx) = mpsc::channel(options.queue.max(1));
        let inner = Arc::new(Inner {
            pool,
            incarnation,
            _liveness: liveness,
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
                 (extract(epoch FROM lease_expires - now()) * 1000)::bigint, \
                 hookline_node_alive(lease_incarnation) \
                 FROM hookline_sessions WHERE id = $1",
                &[&id.as_str()],
            )
            .await
            .map_err(|e| StoreError::db("read a lease", e))?;
        Ok(row.map(|row| Lease {
            holder: row.get(0),
            token: row.get(1),
            expires_in_ms: row.get(2),
            holder_alive: row.get(3),
        }))
    }

    /// Ends the database connection that holds the liveness lock of `id`'s lease holder (as a
    /// partition between that node and the database would), so the database takes the holder
    /// for dead; the holder connects again after [`PgStoreOptions::liveness_retry`]. Returns
    /// whether such a connection was found. For tests and operators.
    ///
    /// # Errors
    /// [`StoreError::Database`] (ending another role's connection needs the rights to).
    pub async fn terminate_liveness_of(&self, id: &SessionId) -> Result<bool, StoreError> {
        let client = self.inner.client().await?;
        let rows = client
            .query(
                "SELECT pg_terminate_backend(l.pid) FROM pg_locks l \
                 JOIN hookline_sessions s ON s.id = $1 \
                 WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 \
                   AND l.classid::bigint = (hookline_node_key(s.lease_incarnation) >> 32) & 4294967295 \
                   AND l.objid::bigint = hookline_node_key(s.lease_incarnation) & 4294967295",
                &[&id.as_str()],
            )
            .await
            .map_err(|e| StoreError::db("end a liveness connection", e))?;
        Ok(rows.iter().any(|row| row.get::<_, bool>(0)))
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

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub(crate) fn encode<T: Serialize>(
    session: &SessionId,
    items: &[T],
) -> Result<Vec<String>, StoreError> {
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

pub(crate) fn len_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

pub(crate) const INSERT_RECORDS: &str = "INSERT INTO hookline_records (session_id, seq, body) \
     SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[])";
pub(crate) const INSERT_ARCHIVE: &str = "INSERT INTO hookline_archive (session_id, seq, body) \
     SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[])";

/// Rows for one `INSERT ... unnest`: session ids, sequence numbers, bodies.
#[derive(Default)]
pub(crate) struct Rows {
    sessions: Vec<String>,
    seqs: Vec<i64>,
    bodies: Vec<String>,
}

impl Rows {
    pub(crate) fn push(&mut self, session: &SessionId, first: i64, bodies: &[String]) {
        for (i, body) in bodies.iter().enumerate() {
            self.sessions.push(session.as_str().to_owned());
            self.seqs.push(first + len_i64(i));
            self.bodies.push(body.clone());
        }
    }

    pub(crate) async fn insert(
        &self,
        tx: &impl GenericClient,
        sql: &str,
    ) -> Result<(), StoreError> {
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

pub(crate) async fn fence_one(
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
pub(crate) const FENCE_MANY_WRITE: &str = fence_many!("updated_at = now(), ");
/// [`fence_many!`] for the renewer.
pub(crate) const FENCE_MANY_RENEW: &str = fence_many!("");

/// A takeover: the lease is released, expired, or its holder is known dead (its liveness lock is
/// gone; issue 40 item 1). A holder that runs, however silent, keeps it until it expires.
const TAKE_OVER: &str = "UPDATE hookline_sessions \
     SET lease_holder = $2, lease_token = lease_token + 1, updated_at = now(), \
         lease_expires = now() + $3::bigint * interval '1 millisecond', lease_incarnation = $4 \
     WHERE id = $1 AND (lease_holder IS NULL OR lease_expires <= now() \
         OR (lease_incarnation IS NOT NULL AND lease_incarnation <> $4 \
             AND NOT hookline_node_alive(lease_incarnation))) \
     RETURNING lease_token";

/// A session's holder: its name, milliseconds left, whether it may be taken over now (as
/// [`TAKE_OVER`] decides), and whether it is this store.
const HOLDER: &str = "SELECT lease_holder, \
     (extract(epoch FROM lease_expires - now()) * 1000)::bigint, \
     lease_expires <= now() OR (lease_incarnation IS NOT NULL AND lease_incarnation <> $2 \
         AND NOT hookline_node_alive(lease_incarnation)), \
     lease_incarnation IS NOT DISTINCT FROM $2 \
     FROM hookline_sessions WHERE id = $1";

/// The holder as [`StoreError::Leased`] names it.
fn leased_by(node: &str, left_ms: Option<i64>) -> String {
    format!("node {node} for {} ms more", left_ms.unwrap_or(0))
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
                    "INSERT INTO hookline_sessions \
                     (id, info, lease_holder, lease_token, lease_expires, lease_incarnation) \
                     VALUES ($1, $2, $3, 1, now() + $4::bigint * interval '1 millisecond', $5) \
                     ON CONFLICT (id) DO NOTHING RETURNING lease_token",
                    &[
                        &id.as_str(),
                        &text,
                        &inner.options.node,
                        &inner.ttl_ms(),
                        &inner.incarnation,
                    ],
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
    ) -> Result<Option<(OpenedSession, Box<dyn SessionWriter>)>, StoreError> {
        let inner = &self.inner;
        let mut client = inner.client().await?;
        let taken = client
            .query_opt(
                TAKE_OVER,
                &[
                    &id.as_str(),
                    &inner.options.node,
                    &inner.ttl_ms(),
                    &inner.incarnation,
                ],
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
                        holder: leased_by(&holder.unwrap_or_default(), left),
                    })
                }
            };
        };
        let token: i64 = taken.get(0);
        inner.hold(id, token);
        // The takeover's UPDATE waited for any write in flight on the row; everything the
        // previous holder committed is visible now.
        // Issue 49 item 5: the archive is folded as its rows arrive, never held.
        let mut summary = ArchiveSummary::default();
        let Some((facts, records)) = read_body(&mut client, id, |e| summary.add(e)).await? else {
            return Ok(None);
        };
        let writer = PgWriter {
            id: id.clone(),
            token,
            inner: Arc::clone(inner),
            next_record: len_i64(records.len()),
            next_archive: i64::try_from(summary.entries).unwrap_or(i64::MAX),
        };
        let opened = OpenedSession {
            facts,
            records,
            summary,
            repaired: Vec::new(),
        };
        Ok(Some((opened, Box::new(writer))))
    }

    async fn read(&self, id: &SessionId) -> Result<Option<StoredSession>, StoreError> {
        let mut client = self.inner.client().await?;
        let mut archive = Vec::new();
        let body = read_body(&mut client, id, |e| archive.push(e)).await?;
        Ok(body.map(|(facts, records)| StoredSession {
            facts,
            records,
            archive,
            repaired: Vec::new(),
        }))
    }

    async fn archive_page(
        &self,
        id: &SessionId,
        offset: usize,
        limit: usize,
    ) -> Result<Option<ArchivePage>, StoreError> {
        let mut client = self.inner.client().await?;
        read::page(&mut client, id, offset, limit).await
    }

    async fn answered_approvals(
        &self,
        id: &SessionId,
        keep: usize,
    ) -> Result<Option<Vec<ApprovalRecord>>, StoreError> {
        let mut client = self.inner.client().await?;
        read::answered(&mut client, id, keep).await
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

    async fn holder(&self, id: &SessionId) -> Result<Holder, StoreError> {
        let client = self.inner.client().await?;
        let row = client
            .query_opt(HOLDER, &[&id.as_str(), &self.inner.incarnation])
            .await
            .map_err(|e| StoreError::db("read a lease", e))?;
        let Some(row) = row else {
            return Ok(Holder::Unknown);
        };
        // A released lease has no holder and no expiry: the checks on them read NULL (a
        // `bool` read of NULL would panic: issue 46 item 8 found it with a GET after a close).
        let (holder, left, gone, ours): (Option<String>, Option<i64>, Option<bool>, Option<bool>) =
            (row.get(0), row.get(1), row.get(2), row.get(3));
        let (gone, ours) = (gone.unwrap_or(false), ours.unwrap_or(false));
        Ok(match holder {
            None => Holder::Unknown,
            Some(_) if ours => Holder::Unknown,
            Some(_) if gone => Holder::Gone,
            Some(node) => Holder::Alive {
                same_node: node == self.inner.options.node,
                holder: leased_by(&node, left),
            },
        })
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
