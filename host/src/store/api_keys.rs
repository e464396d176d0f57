//! API keys of `hookline serve` (issue 48, docs/serve.md "Auth"): who may call the server, as a
//! tenant and a role. A key is shown once, when it is made ([`ApiKeyRecord::create`]); the table
//! keeps only its SHA-256. Two tables: [`FileApiKeys`] (a JSON file under the file store's root)
//! and the PostgreSQL store's `hookline_api_keys` (hookline-postgres).
//!
//! A key reads `hlk_<id>_<secret>`: the id finds its row without comparing against every row,
//! and the whole key's SHA-256 is compared with the stored one in constant time by the server.
//!
//! ```
//! use hookline_host::store::{ApiKeyRecord, Role};
//! let (key, record) = ApiKeyRecord::create("acme", Role::Client, Some("web".into()), None, 0)
//!     .map_err(|e| e.to_string())?;
//! assert!(key.starts_with(&format!("hlk_{}_", record.id)));
//! assert_eq!(ApiKeyRecord::id_of(&key), Some(record.id.as_str()));
//! assert!(record.matches(&key));
//! # Ok::<(), String>(())
//! ```

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::StoreError;

/// The file of [`FileApiKeys`], under the store's root.
pub const API_KEYS_FILE: &str = "api-keys.json";

/// Random bytes in a key's secret (256 bits).
const SECRET_BYTES: usize = 32;

/// Random bytes in a key's id.
const ID_BYTES: usize = 6;

/// What a principal may do (issue 48): each role has every right of the ones before it.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Opens sessions in its tenant and uses the ones it opened.
    Client,
    /// Every session of its tenant, and its approvals.
    Operator,
    /// Every tenant, plus the server's plugins, metrics and gateway-wide events.
    Admin,
}

impl Role {
    /// The role's name, as configured and shown.
    pub fn name(self) -> &'static str {
        match self {
            Self::Client => "client",
            Self::Operator => "operator",
            Self::Admin => "admin",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Role {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim() {
            "client" => Ok(Self::Client),
            "operator" => Ok(Self::Operator),
            "admin" => Ok(Self::Admin),
            other => Err(format!(
                "'{other}' is not a role: use client, operator or admin"
            )),
        }
    }
}

/// One API key as stored: never the key itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyRecord {
    /// The key's id (also inside the key): what `keys revoke` names.
    pub id: String,
    /// A name for people (`web-app`), if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The tenant its principal belongs to.
    pub tenant: String,
    /// Its role.
    pub role: Role,
    /// The key's SHA-256, lowercase hex.
    pub sha256: String,
    /// When it was made, milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// When it stops working, if ever.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_ms: Option<u64>,
    /// When it was revoked, if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_ms: Option<u64>,
}

/// Why a key could not be made.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The tenant name is not usable.
    #[error("'{0}' is not a tenant name: use 1 to 64 letters, digits, '-', '_' or '.'")]
    BadTenant(String),
    /// The system's random source failed.
    #[error("the system's random source failed: {0}")]
    Random(String),
}

impl ApiKeyRecord {
    /// Makes a key: returns it (to show once) and the record to store.
    ///
    /// # Errors
    /// [`KeyError`]: a tenant name that is not one, or no randomness.
    pub fn create(
        tenant: &str,
        role: Role,
        name: Option<String>,
        expires_ms: Option<u64>,
        now_ms: u64,
    ) -> Result<(String, Self), KeyError> {
        if !valid_tenant(tenant) {
            return Err(KeyError::BadTenant(tenant.to_owned()));
        }
        let mut bytes = [0u8; ID_BYTES + SECRET_BYTES];
        getrandom::fill(&mut bytes).map_err(|e| KeyError::Random(e.to_string()))?;
        let (id, secret) = bytes.split_at(ID_BYTES);
        let id = format!("k{}", hex(id));
        let key = format!("hlk_{id}_{}", hex(secret));
        let record = Self {
            sha256: sha256_hex(&key),
            id,
            name,
            tenant: tenant.to_owned(),
            role,
            created_ms: now_ms,
            expires_ms,
            revoked_ms: None,
        };
        Ok((key, record))
    }

    /// The id a key names (`hlk_<id>_<secret>`), if it has that shape.
    pub fn id_of(key: &str) -> Option<&str> {
        let rest = key.strip_prefix("hlk_")?;
        let (id, secret) = rest.split_once('_')?;
        (!id.is_empty() && !secret.is_empty()).then_some(id)
    }

    /// Whether `key` is this record's key: SHA-256 compared in constant time.
    pub fn matches(&self, key: &str) -> bool {
        use subtle::ConstantTimeEq;
        let offered = Sha256::digest(key.as_bytes());
        let Some(stored) = unhex(&self.sha256) else {
            return false;
        };
        offered.as_slice().ct_eq(&stored).into()
    }

    /// Whether the key works at `now_ms`.
    pub fn state(&self, now_ms: u64) -> ApiKeyState {
        if self.revoked_ms.is_some_and(|at| at <= now_ms) {
            ApiKeyState::Revoked
        } else if self.expires_ms.is_some_and(|at| at <= now_ms) {
            ApiKeyState::Expired
        } else {
            ApiKeyState::Active
        }
    }

    /// Why the key does not work at `now_ms`, if it does not: revoked or expired.
    pub fn refusal(&self, now_ms: u64) -> Option<&'static str> {
        match self.state(now_ms) {
            ApiKeyState::Revoked => Some("the key was revoked"),
            ApiKeyState::Expired => Some("the key has expired"),
            ApiKeyState::Active => None,
        }
    }
}

/// When a key stops working, as `hookline keys create --expires` and `POST /v1/keys` take it:
/// a duration from now (`30d`, `12h`) or a time (`2027-01-01T00:00:00Z`). One parser for both,
/// so the CLI and the HTTP API accept the same texts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expiry {
    /// This long after the key is made.
    After(Duration),
    /// At this time.
    At(SystemTime),
}

impl Expiry {
    /// The time it names, in ms since the Unix epoch, for a key made at `now_ms`.
    pub fn at_ms(self, now_ms: u64) -> u64 {
        match self {
            Self::After(after) => {
                now_ms.saturating_add(u64::try_from(after.as_millis()).unwrap_or(u64::MAX))
            }
            Self::At(at) => at
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        }
    }
}

impl FromStr for Expiry {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if let Ok(after) = humantime::parse_duration(text) {
            return Ok(Self::After(after));
        }
        humantime::parse_rfc3339_weak(text)
            .map(Self::At)
            .map_err(|_| {
                format!("'{text}' is neither a duration (30d) nor a time (2027-01-01T00:00:00Z)")
            })
    }
}

/// Whether a key works now, as `keys list` and `GET /v1/keys` show it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ApiKeyState {
    /// It works.
    Active,
    /// It was revoked.
    Revoked,
    /// It has expired.
    Expired,
}

impl ApiKeyState {
    /// Its name, as shown.
    pub fn name(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Revoked => "revoked",
            Self::Expired => "expired",
        }
    }
}

/// A key as it is shown (`keys list --json`, `GET /v1/keys`): the record without its hash,
/// with its state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyView {
    /// The key's id (also inside the key): what revoking names.
    pub id: String,
    /// A name for people, if given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The tenant its principal belongs to.
    pub tenant: String,
    /// Its role.
    pub role: Role,
    /// When it was made, milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// When it stops working, if ever.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_ms: Option<u64>,
    /// When it was revoked, if it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revoked_ms: Option<u64>,
    /// Whether it works now.
    pub state: ApiKeyState,
}

impl ApiKeyView {
    /// How `record` shows at `now_ms`.
    pub fn of(record: &ApiKeyRecord, now_ms: u64) -> Self {
        Self {
            id: record.id.clone(),
            name: record.name.clone(),
            tenant: record.tenant.clone(),
            role: record.role,
            created_ms: record.created_ms,
            expires_ms: record.expires_ms,
            revoked_ms: record.revoked_ms,
            state: record.state(now_ms),
        }
    }
}

/// Whether `name` may name a tenant: 1 to 64 of ASCII letters, digits, `-`, `_`, `.`.
pub fn valid_tenant(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

fn sha256_hex(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes()))
}

/// A table of API keys. Cheap to share; every method may be called from many tasks.
#[async_trait]
pub trait ApiKeyTable: Send + Sync + 'static {
    /// Adds a key.
    ///
    /// # Errors
    /// [`StoreError`] when the table cannot be written.
    async fn insert(&self, record: &ApiKeyRecord) -> Result<(), StoreError>;

    /// Every key, revoked and expired ones too, oldest first.
    ///
    /// # Errors
    /// [`StoreError`] when the table cannot be read.
    async fn list(&self) -> Result<Vec<ApiKeyRecord>, StoreError>;

    /// Revokes key `id` at `at_ms`; false when there is no such key. Revoking twice keeps the
    /// first time.
    ///
    /// # Errors
    /// [`StoreError`] when the table cannot be written.
    async fn revoke(&self, id: &str, at_ms: u64) -> Result<bool, StoreError>;
}

/// The file store's key table: `api-keys.json` under the store's root, replaced atomically
/// (a temporary file, synced, renamed) under an advisory lock, so two `hookline keys` at once
/// lose nothing.
#[derive(Clone, Debug)]
pub struct FileApiKeys {
    path: PathBuf,
}

#[derive(Default, Serialize, Deserialize)]
struct KeysFile {
    keys: Vec<ApiKeyRecord>,
}

impl FileApiKeys {
    /// The table of the store rooted at `root`.
    pub fn new(root: &Path) -> Self {
        Self {
            path: root.join(API_KEYS_FILE),
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn read(path: &Path) -> Result<KeysFile, StoreError> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| StoreError::Io {
                path: path.to_path_buf(),
                action: "read",
                source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(KeysFile::default()),
            Err(e) => Err(StoreError::io(path, "read", e)),
        }
    }

    /// Reads, changes and writes the file back under the lock.
    fn change<T>(path: &Path, edit: impl FnOnce(&mut KeysFile) -> T) -> Result<T, StoreError> {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, "create", e))?;
        let lock_path = path.with_extension("lock");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| StoreError::io(&lock_path, "open", e))?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| StoreError::io(&lock_path, "lock", e.into()))?;
        let mut file = Self::read(path)?;
        let answer = edit(&mut file);
        let bytes = serde_json::to_vec_pretty(&file).map_err(|e| StoreError::Io {
            path: path.to_path_buf(),
            action: "encode",
            source: std::io::Error::other(e),
        })?;
        let mut temp =
            tempfile::NamedTempFile::new_in(dir).map_err(|e| StoreError::io(dir, "create", e))?;
        std::io::Write::write_all(&mut temp, &bytes)
            .and_then(|()| temp.as_file().sync_all())
            .map_err(|e| StoreError::io(temp.path(), "write", e))?;
        temp.persist(path)
            .map_err(|e| StoreError::io(path, "rename", e.error))?;
        super::log::sync_dir(dir)?;
        Ok(answer)
    }
}

#[async_trait]
impl ApiKeyTable for FileApiKeys {
    async fn insert(&self, record: &ApiKeyRecord) -> Result<(), StoreError> {
        let (path, record) = (self.path.clone(), record.clone());
        blocking(move || Self::change(&path, |file| file.keys.push(record))).await
    }

    async fn list(&self) -> Result<Vec<ApiKeyRecord>, StoreError> {
        let path = self.path.clone();
        blocking(move || Self::read(&path).map(|file| file.keys)).await
    }

    async fn revoke(&self, id: &str, at_ms: u64) -> Result<bool, StoreError> {
        let (path, id) = (self.path.clone(), id.to_owned());
        blocking(move || {
            Self::change(&path, |file| {
                let found = file.keys.iter_mut().find(|k| k.id == id);
                found
                    .map(|key| key.revoked_ms = Some(key.revoked_ms.unwrap_or(at_ms)))
                    .is_some()
            })
        })
        .await
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
        Err(StoreError::io(
            Path::new("."),
            "join",
            std::io::Error::other(e),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_matches_only_itself_and_names_its_id() -> Result<(), KeyError> {
        let (key, record) = ApiKeyRecord::create("acme", Role::Operator, None, None, 5)?;
        assert!(record.matches(&key));
        assert!(!record.matches(&format!("{key}x")));
        assert!(!record.matches(""));
        assert_eq!(ApiKeyRecord::id_of(&key), Some(record.id.as_str()));
        assert!(!record.sha256.contains(&key[10..]));
        assert_eq!(ApiKeyRecord::id_of("hlk__x"), None);
        assert_eq!(ApiKeyRecord::id_of("Bearer"), None);
        Ok(())
    }

    #[test]
    fn expiries_are_durations_or_times() {
        assert_eq!(
            "1h".parse::<Expiry>().map(|e| e.at_ms(1_000)),
            Ok(3_601_000)
        );
        assert_eq!(
            "1970-01-01T00:00:02Z".parse::<Expiry>().map(|e| e.at_ms(9)),
            Ok(2_000)
        );
        assert!("soon".parse::<Expiry>().is_err());
    }

    #[test]
    fn bad_tenants_are_refused() {
        assert!(ApiKeyRecord::create("a/b", Role::Client, None, None, 0).is_err());
        assert!(ApiKeyRecord::create("", Role::Client, None, None, 0).is_err());
    }

    #[test]
    fn revoked_and_expired_keys_say_why() -> Result<(), KeyError> {
        let (_, mut record) = ApiKeyRecord::create("t", Role::Client, None, Some(100), 0)?;
        assert_eq!(record.refusal(99), None);
        assert_eq!(record.refusal(100), Some("the key has expired"));
        record.revoked_ms = Some(50);
        assert_eq!(record.refusal(60), Some("the key was revoked"));
        Ok(())
    }

    #[tokio::test]
    async fn the_file_table_keeps_hashes_and_revocations() -> Result<(), Box<dyn std::error::Error>>
    {
        let dir = tempfile::tempdir()?;
        let table = FileApiKeys::new(dir.path());
        assert!(table.list().await?.is_empty());
        let (key, record) = ApiKeyRecord::create("t", Role::Admin, Some("ops".into()), None, 1)?;
        table.insert(&record).await?;
        let text = std::fs::read_to_string(table.path())?;
        assert!(!text.contains(&key), "the key itself is never stored");
        assert!(table.revoke(&record.id, 7).await?);
        assert!(table.revoke(&record.id, 9).await?);
        assert!(!table.revoke("nope", 9).await?);
        let listed = table.list().await?;
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].revoked_ms, Some(7));
        Ok(())
    }
}
