//! Schema migrations for [`PgStore`](crate::PgStore): the SQL files of `migrations/`, embedded
//! with `include_str!`, applied in order and recorded in `hookline_migrations` (issue 14 item 1).
//! The store's code paths never run DDL; only [`migrate`] does.

use tokio_postgres::Client;

use hookline_host::store::StoreError;

/// One embedded migration.
#[derive(Clone, Copy, Debug)]
pub struct Migration {
    /// Its version: applied in increasing order, each once.
    pub version: i32,
    /// Its file name.
    pub name: &'static str,
    /// Its SQL.
    pub sql: &'static str,
}

/// Every migration, in order.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "0001_sessions.sql",
        sql: include_str!("../../migrations/0001_sessions.sql"),
    },
    Migration {
        version: 2,
        name: "0002_idempotency_keys.sql",
        sql: include_str!("../../migrations/0002_idempotency_keys.sql"),
    },
    Migration {
        version: 3,
        name: "0003_node_liveness.sql",
        sql: include_str!("../../migrations/0003_node_liveness.sql"),
    },
    Migration {
        version: 4,
        name: "0004_api_keys.sql",
        sql: include_str!("../../migrations/0004_api_keys.sql"),
    },
];

/// The schema version this build needs.
pub fn latest_version() -> i32 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// Serializes concurrent migrators (any constant; "hookline" in ASCII).
const MIGRATION_LOCK: i64 = 0x686f_6f6b_6c69_6e65;

/// The bookkeeping table; created by the migrator itself, before the first migration.
const MIGRATIONS_TABLE: &str = "CREATE TABLE IF NOT EXISTS hookline_migrations (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)";

/// Applies every migration the database does not have yet, in one transaction under an advisory
/// lock (so two nodes migrating at once apply each migration once). Returns the names applied
/// now; empty when the schema was already current.
///
/// # Errors
/// [`StoreError::Database`] when a statement fails (nothing of this run is kept).
pub async fn migrate(client: &mut Client) -> Result<Vec<&'static str>, StoreError> {
    let tx = client
        .transaction()
        .await
        .map_err(|e| StoreError::db("begin a migration", e))?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(|e| StoreError::db("lock for migration", e))?;
    tx.batch_execute(MIGRATIONS_TABLE)
        .await
        .map_err(|e| StoreError::db("create hookline_migrations", e))?;
    let mut applied = Vec::new();
    for migration in MIGRATIONS {
        let done = tx
            .query_opt(
                "SELECT 1 FROM hookline_migrations WHERE version = $1",
                &[&migration.version],
            )
            .await
            .map_err(|e| StoreError::db("read hookline_migrations", e))?;
        if done.is_some() {
            continue;
        }
        tx.batch_execute(migration.sql)
            .await
            .map_err(|e| StoreError::db("apply a migration", e))?;
        tx.execute(
            "INSERT INTO hookline_migrations (version, name) VALUES ($1, $2)",
            &[&migration.version, &migration.name],
        )
        .await
        .map_err(|e| StoreError::db("record a migration", e))?;
        applied.push(migration.name);
    }
    tx.commit()
        .await
        .map_err(|e| StoreError::db("commit migrations", e))?;
    Ok(applied)
}

/// The highest migration version the database has applied (0 when none).
///
/// # Errors
/// [`StoreError::Database`] when the query fails for another reason than a missing table.
pub async fn current_version(client: &Client) -> Result<i32, StoreError> {
    let row = client
        .query_one("SELECT to_regclass('hookline_migrations') IS NOT NULL", &[])
        .await
        .map_err(|e| StoreError::db("look for hookline_migrations", e))?;
    if !row.get::<_, bool>(0) {
        return Ok(0);
    }
    let row = client
        .query_one(
            "SELECT COALESCE(max(version), 0) FROM hookline_migrations",
            &[],
        )
        .await
        .map_err(|e| StoreError::db("read hookline_migrations", e))?;
    Ok(row.get(0))
}
