//! The session store `hookline serve` runs on (issue 14 item 1): `--store DIR` (or nothing) keeps
//! the file store; `--store postgres://...` connects a [`PgStore`] that several nodes share, with
//! this node's name and lease timings (`--node`, `--lease-ttl-ms`, `--lease-renew-ms`),
//! `--migrate` to apply the schema first, `--no-group-commit` to commit each append alone, and
//! `--database-ca` for TLS (`sslmode` in the URL; hookline_postgres::connect).

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use hookline_postgres::{PgStore, PgStoreOptions};

/// The default lease TTL, milliseconds.
const DEFAULT_LEASE_TTL_MS: u64 = 30_000;
/// The shortest lease TTL accepted: a lease must outlive a renewal round trip.
const MIN_LEASE_TTL_MS: u64 = 100;
/// How long connecting to the database may take at start.
const CONNECT_WAIT: Duration = Duration::from_secs(15);

/// Where sessions are stored: `--store`'s two forms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum StoreChoice {
    /// The file store in this directory.
    Files(PathBuf),
    /// The PostgreSQL store at this URL.
    Postgres(String),
}

/// Parses `--store`: a `postgres://` or `postgresql://` URL, else a directory.
pub(crate) fn parse_store(text: &str) -> Result<StoreChoice, String> {
    if text.trim().is_empty() {
        return Err("give a directory or a postgres:// URL".into());
    }
    let lower = text.to_ascii_lowercase();
    if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
        Ok(StoreChoice::Postgres(text.to_owned()))
    } else {
        Ok(StoreChoice::Files(PathBuf::from(text)))
    }
}

/// The store options of `hookline serve`.
#[derive(Clone, Debug, Args)]
pub(crate) struct StoreArgs {
    /// The store: a directory (default: `.hookline` under the workspace root) or a PostgreSQL
    /// URL (`postgres://user:password@host:5432/db`) that several nodes share.
    #[arg(long, value_name = "DIR|URL", value_parser = parse_store)]
    pub(crate) store: Option<StoreChoice>,
    /// With a PostgreSQL store: apply missing schema migrations before serving.
    #[arg(long)]
    migrate: bool,
    /// With a PostgreSQL store: this node's name, stored as the holder of its leases
    /// (default: the host name and the process id).
    #[arg(long, value_name = "NAME")]
    node: Option<String>,
    /// With a PostgreSQL store: how long a session's lease lasts without renewal, in
    /// milliseconds; another node takes a dead node's sessions over after at most this long.
    #[arg(long, value_name = "MS", default_value_t = DEFAULT_LEASE_TTL_MS)]
    lease_ttl_ms: u64,
    /// With a PostgreSQL store: how often held leases are renewed, in milliseconds
    /// (default: a third of the TTL).
    #[arg(long, value_name = "MS")]
    lease_renew_ms: Option<u64>,
    /// With a PostgreSQL store: commit each append in a transaction of its own instead of
    /// committing appends that arrive together at once (for measuring).
    #[arg(long)]
    no_group_commit: bool,
    /// With a PostgreSQL store: the CA certificates (PEM) that `sslmode=verify-ca` and
    /// `verify-full` in the URL trust (default: the URL's `sslrootcert`, else the public web
    /// roots).
    #[arg(long, value_name = "FILE")]
    database_ca: Option<PathBuf>,
}

/// Why the store could not be set up.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreSetupError {
    /// A PostgreSQL option without a PostgreSQL store.
    #[error("{0} applies only to a PostgreSQL store; give --store postgres://...")]
    NeedsPostgres(&'static str),
    /// A lease TTL too short to renew.
    #[error(
        "--lease-ttl-ms must be at least {MIN_LEASE_TTL_MS}, and --lease-renew-ms shorter than it"
    )]
    LeaseTimings,
    /// The database could not be used.
    #[error("cannot use the PostgreSQL store at {url}: {reason}")]
    Postgres {
        /// The URL without its password.
        url: String,
        /// Why, with the causes the driver gave ("connection refused").
        reason: String,
    },
    /// Connecting took longer than the start may wait.
    #[error("cannot use the PostgreSQL store at {url}: no connection within {} s", CONNECT_WAIT.as_secs())]
    ConnectTimeout {
        /// The URL without its password.
        url: String,
    },
}

impl StoreArgs {
    /// These options, with `store` (the config file's) when `--store` was not given.
    pub(crate) fn or_store(&self, store: Option<StoreChoice>) -> Self {
        Self {
            store: self.store.clone().or(store),
            ..self.clone()
        }
    }

    /// Whether the store is PostgreSQL.
    pub(crate) fn is_postgres(&self) -> bool {
        matches!(self.store, Some(StoreChoice::Postgres(_)))
    }

    /// `--node` as given (none: the default, unique to this process).
    pub(crate) fn node_name(&self) -> Option<&str> {
        self.node.as_deref()
    }

    /// These options with `node` as this node's name unless `--node` gave one: a successor
    /// keeps its predecessor's name, so the leases held by that name move with it.
    pub(crate) fn or_node(&self, node: Option<String>) -> Self {
        Self {
            node: self.node.clone().or(node),
            ..self.clone()
        }
    }

    /// The directory of the file store when one was given.
    pub(crate) fn store_dir(&self) -> Option<&PathBuf> {
        match &self.store {
            Some(StoreChoice::Files(dir)) => Some(dir),
            _ => None,
        }
    }

    /// Connects the PostgreSQL store when `--store` names one; `None` keeps the file store.
    /// It holds the sessions and the API key table (issue 48).
    ///
    /// # Errors
    /// [`StoreSetupError`]: PostgreSQL options without PostgreSQL, bad lease timings, a bad URL,
    /// an unreachable database, or a schema that is behind (without `--migrate`).
    pub(crate) async fn connect_pg(&self) -> Result<Option<PgStore>, StoreSetupError> {
        let Some(StoreChoice::Postgres(url)) = &self.store else {
            return self.no_postgres_options().map(|()| None);
        };
        let options = self.pg_options()?;
        let shown = redact(url);
        match tokio::time::timeout(CONNECT_WAIT, PgStore::connect(url, options)).await {
            Ok(Ok(store)) => Ok(Some(store)),
            Ok(Err(error)) => Err(StoreSetupError::Postgres {
                url: shown,
                reason: error.with_causes(),
            }),
            Err(_) => Err(StoreSetupError::ConnectTimeout { url: shown }),
        }
    }

    fn no_postgres_options(&self) -> Result<(), StoreSetupError> {
        let given = [
            (self.migrate, "--migrate"),
            (self.node.is_some(), "--node"),
            (self.lease_ttl_ms != DEFAULT_LEASE_TTL_MS, "--lease-ttl-ms"),
            (self.lease_renew_ms.is_some(), "--lease-renew-ms"),
            (self.no_group_commit, "--no-group-commit"),
            (self.database_ca.is_some(), "--database-ca"),
        ];
        match given.iter().find(|(set, _)| *set) {
            Some((_, flag)) => Err(StoreSetupError::NeedsPostgres(flag)),
            None => Ok(()),
        }
    }

    /// The PostgreSQL store's options from the flags.
    pub(crate) fn pg_options(&self) -> Result<PgStoreOptions, StoreSetupError> {
        let ttl = self.lease_ttl_ms;
        let renew = self.lease_renew_ms.unwrap_or(ttl / 3);
        if ttl < MIN_LEASE_TTL_MS || renew == 0 || renew >= ttl {
            return Err(StoreSetupError::LeaseTimings);
        }
        Ok(PgStoreOptions {
            node: self.node.clone().unwrap_or_else(default_node),
            lease_ttl: Duration::from_millis(ttl),
            renew_every: Some(Duration::from_millis(renew)),
            group_commit: !self.no_group_commit,
            migrate: self.migrate,
            ca_file: self.database_ca.clone(),
            ..PgStoreOptions::default()
        })
    }
}

/// `<host name>-<pid>`: unique among the nodes of one machine and across machines.
fn default_node() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "node".into());
    format!("{host}-{}", std::process::id())
}

/// The URL with any password replaced by `***`, for messages.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, tail) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***@{host}{tail}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        store: StoreArgs,
    }

    fn args(argv: &[&str]) -> StoreArgs {
        let mut all = vec!["serve"];
        all.extend_from_slice(argv);
        match Cli::try_parse_from(all) {
            Ok(cli) => cli.store,
            Err(error) => panic!("{error}"),
        }
    }

    #[test]
    fn a_postgres_url_selects_postgres_and_anything_else_a_directory() {
        assert_eq!(
            parse_store("postgres://u@h/db"),
            Ok(StoreChoice::Postgres("postgres://u@h/db".into()))
        );
        assert_eq!(
            parse_store("postgresql://h/db"),
            Ok(StoreChoice::Postgres("postgresql://h/db".into()))
        );
        assert_eq!(
            parse_store("data/store"),
            Ok(StoreChoice::Files("data/store".into()))
        );
        assert!(parse_store(" ").is_err());
    }

    #[test]
    fn lease_flags_become_store_options_with_renewal_a_third_of_the_ttl() {
        let options = args(&[
            "--store",
            "postgres://h/db",
            "--node",
            "a",
            "--lease-ttl-ms",
            "900",
        ])
        .pg_options()
        .map_err(|e| e.to_string());
        let options = match options {
            Ok(options) => options,
            Err(error) => panic!("{error}"),
        };
        assert_eq!(options.node, "a");
        assert_eq!(options.lease_ttl, Duration::from_millis(900));
        assert_eq!(options.renew_every, Some(Duration::from_millis(300)));
        assert!(options.group_commit && !options.migrate);
    }

    #[test]
    fn a_renewal_not_shorter_than_the_ttl_is_refused() {
        let bad = args(&["--lease-ttl-ms", "1000", "--lease-renew-ms", "1000"]).pg_options();
        assert!(matches!(bad, Err(StoreSetupError::LeaseTimings)));
        assert!(matches!(
            args(&["--lease-ttl-ms", "10"]).pg_options(),
            Err(StoreSetupError::LeaseTimings)
        ));
    }

    #[tokio::test]
    async fn postgres_flags_without_a_postgres_store_are_refused() {
        let refused = args(&["--store", "dir", "--migrate"]).connect_pg().await;
        assert_eq!(
            refused.err().map(|e| e.to_string()).as_deref(),
            Some("--migrate applies only to a PostgreSQL store; give --store postgres://...")
        );
        assert!(matches!(args(&[]).connect_pg().await, Ok(None)));
    }

    #[tokio::test]
    async fn a_bad_url_is_a_sentence_naming_it_without_its_password() {
        let error = args(&["--store", "postgres://u:secret@h:notaport/db"])
            .connect_pg()
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            error
                .starts_with("cannot use the PostgreSQL store at postgres://u:***@h:notaport/db: "),
            "{error}"
        );
        assert!(!error.contains("secret"), "{error}");
    }

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redact("postgres://u:pw@h:5/db?x=1"),
            "postgres://u:***@h:5/db?x=1"
        );
        assert_eq!(redact("postgres://u@h/db"), "postgres://u@h/db");
        assert_eq!(redact("postgres://h"), "postgres://h");
    }
}
