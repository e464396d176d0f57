//! API keys as the server checks them (issue 48): a snapshot of the key table, read again every
//! [`REFRESH_EVERY`] by a task of its own, so a key revoked or expired on any node is refused on
//! every node within two seconds; expiry is also checked on each request. A key is found by the
//! id it carries, then its SHA-256 is compared in constant time ([`ApiKeyRecord::matches`]).

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock, Weak};
use std::time::Duration;

use hookline_host::store::{ApiKeyRecord, ApiKeyTable};

use super::{now_ms, Principal};
use crate::ApiError;

/// How often the table is read again.
pub(crate) const REFRESH_EVERY: Duration = Duration::from_secs(1);

type Snapshot = Arc<HashMap<String, ApiKeyRecord>>;

/// The server's copy of the key table.
#[derive(Clone)]
pub(crate) struct KeyCache {
    snapshot: Arc<RwLock<Snapshot>>,
    /// The table itself: `/v1/keys` writes it (issue 48).
    table: Arc<dyn ApiKeyTable>,
}

async fn read(table: &dyn ApiKeyTable) -> Option<Snapshot> {
    match table.list().await {
        Ok(keys) => Some(Arc::new(
            keys.into_iter().map(|k| (k.id.clone(), k)).collect(),
        )),
        Err(error) => {
            tracing::warn!(%error, "cannot read the API key table; keeping the last copy");
            None
        }
    }
}

impl KeyCache {
    /// Reads the table once and keeps it fresh on a task of the current runtime, until the
    /// cache is dropped.
    ///
    /// # Errors
    /// The store's error when the first read fails: a server never starts without knowing its
    /// keys.
    pub(crate) async fn start(
        table: Arc<dyn ApiKeyTable>,
    ) -> Result<Self, hookline_host::store::StoreError> {
        let keys = table.list().await?;
        let snapshot: Snapshot = Arc::new(keys.into_iter().map(|k| (k.id.clone(), k)).collect());
        let cache = Self {
            snapshot: Arc::new(RwLock::new(snapshot)),
            table: Arc::clone(&table),
        };
        tokio::spawn(refresh(table, Arc::downgrade(&cache.snapshot)));
        Ok(cache)
    }

    fn current(&self) -> Snapshot {
        self.snapshot
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The table the cache reads.
    pub(crate) fn table(&self) -> &Arc<dyn ApiKeyTable> {
        &self.table
    }

    /// Reads the table now, bounded as the periodic read is: after `/v1/keys` changed it, this
    /// node uses the change at once instead of at the next read (other nodes within 2 s).
    pub(crate) async fn reload(&self) {
        if let Ok(Some(fresh)) = tokio::time::timeout(REFRESH_EVERY, read(&*self.table)).await {
            *self
                .snapshot
                .write()
                .unwrap_or_else(PoisonError::into_inner) = fresh;
        }
    }

    /// Whether the table holds any key.
    pub(crate) fn any(&self) -> bool {
        !self.current().is_empty()
    }

    /// The principal of `credential` when it has a key's shape: `None` when it does not (it
    /// may be another kind of credential), else the principal or why the key is refused.
    pub(crate) fn principal(&self, credential: &str) -> Option<Result<Principal, ApiError>> {
        let id = ApiKeyRecord::id_of(credential)?;
        let snapshot = self.current();
        let Some(record) = snapshot.get(id).filter(|r| r.matches(credential)) else {
            return Some(Err(ApiError::BadCredentials(
                "the API key is not known".into(),
            )));
        };
        if let Some(why) = record.refusal(now_ms()) {
            return Some(Err(ApiError::BadCredentials(why.into())));
        }
        Some(Ok(Principal {
            tenant: record.tenant.as_str().into(),
            id: record.id.as_str().into(),
            role: record.role,
            credential: super::Credential::Key,
        }))
    }

    /// Why the key `id` is no longer good, as the last read of the table says: revoked,
    /// expired, or gone.
    pub(crate) fn lapse(&self, id: &str) -> Option<&'static str> {
        match self.current().get(id) {
            Some(record) => record.refusal(now_ms()),
            None => Some("the API key is not known"),
        }
    }
}

async fn refresh(table: Arc<dyn ApiKeyTable>, snapshot: Weak<RwLock<Snapshot>>) {
    let mut every = tokio::time::interval(REFRESH_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        // A read that hangs must not keep revocations from arriving forever: bounded.
        let fresh = tokio::time::timeout(REFRESH_EVERY, read(&*table)).await;
        let Some(cell) = snapshot.upgrade() else {
            return;
        };
        if let Ok(Some(fresh)) = fresh {
            *cell.write().unwrap_or_else(PoisonError::into_inner) = fresh;
        }
    }
}
