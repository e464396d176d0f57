//! The API key table of `hookline serve` on PostgreSQL (issue 48): `hookline_api_keys`
//! (migrations/0004_api_keys.sql), one row per key with its SHA-256, never the key.

use async_trait::async_trait;
use tokio_postgres::Row;

use hookline_host::store::{ApiKeyRecord, ApiKeyTable, Role, StoreError};

use crate::PgStore;

const INSERT: &str = "INSERT INTO hookline_api_keys \
    (id, name, tenant, role, sha256, created_ms, expires_ms, revoked_ms) \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";

const LIST: &str = "SELECT id, name, tenant, role, sha256, created_ms, expires_ms, revoked_ms \
    FROM hookline_api_keys ORDER BY created_ms, id";

const REVOKE: &str = "UPDATE hookline_api_keys SET revoked_ms = COALESCE(revoked_ms, $2) \
    WHERE id = $1";

fn millis(ms: u64) -> i64 {
    i64::try_from(ms).unwrap_or(i64::MAX)
}

fn unmillis(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0)
}

fn record(row: &Row) -> Result<ApiKeyRecord, StoreError> {
    let role: &str = row.get(3);
    let role: Role = role.parse().map_err(|why: String| StoreError::Io {
        path: "hookline_api_keys".into(),
        action: "read",
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, why),
    })?;
    Ok(ApiKeyRecord {
        id: row.get(0),
        name: row.get(1),
        tenant: row.get(2),
        role,
        sha256: row.get(4),
        created_ms: unmillis(row.get(5)),
        expires_ms: row.get::<_, Option<i64>>(6).map(unmillis),
        revoked_ms: row.get::<_, Option<i64>>(7).map(unmillis),
    })
}

#[async_trait]
impl ApiKeyTable for PgStore {
    async fn insert(&self, key: &ApiKeyRecord) -> Result<(), StoreError> {
        let client = self.inner.client().await?;
        client
            .execute(
                INSERT,
                &[
                    &key.id,
                    &key.name,
                    &key.tenant,
                    &key.role.name(),
                    &key.sha256,
                    &millis(key.created_ms),
                    &key.expires_ms.map(millis),
                    &key.revoked_ms.map(millis),
                ],
            )
            .await
            .map_err(|e| StoreError::db("add an API key", e))?;
        Ok(())
    }

    async fn list(&self) -> Result<Vec<ApiKeyRecord>, StoreError> {
        let client = self.inner.client().await?;
        let rows = client
            .query(LIST, &[])
            .await
            .map_err(|e| StoreError::db("list API keys", e))?;
        rows.iter().map(record).collect()
    }

    async fn revoke(&self, id: &str, at_ms: u64) -> Result<bool, StoreError> {
        let client = self.inner.client().await?;
        let changed = client
            .execute(REVOKE, &[&id, &millis(at_ms)])
            .await
            .map_err(|e| StoreError::db("revoke an API key", e))?;
        Ok(changed > 0)
    }
}
