//! `hookline keys`: the API keys of `hookline serve` (issue 48, docs/serve.md "Auth").
//! `keys create --tenant T --role R [--name N] [--expires 30d|2027-01-01T00:00:00Z]` prints the
//! new key once on stdout (what it is on stderr); `keys list [--json]`; `keys revoke ID`. The
//! table is the store's: `api-keys.json` under a file store's root (`--store DIR`, default
//! `.hookline` here), or `hookline_api_keys` in PostgreSQL (`--store postgres://...`).
//! Every running server refuses a revoked or expired key within 2 s.
//!
//! Exit status: 0 done; 2 for bad input, an unknown key id, or a store that cannot be used.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use clap::{Args, Subcommand};

use super::serve_store::{StoreArgs, StoreChoice};
use hookline_host::store::{ApiKeyRecord, ApiKeyTable, ApiKeyView, Expiry, FileApiKeys, Role};

/// `hookline keys ...`
#[derive(Debug, Args)]
pub(crate) struct KeysArgs {
    #[command(subcommand)]
    command: KeysCommand,
    #[command(flatten)]
    store: StoreArgs,
}

#[derive(Debug, Subcommand)]
enum KeysCommand {
    /// Make a key and print it once (the store keeps only its SHA-256).
    Create {
        /// The tenant its principal belongs to.
        #[arg(long)]
        tenant: String,
        /// `client`, `operator` or `admin`.
        #[arg(long)]
        role: Role,
        /// A name for people (`web-app`).
        #[arg(long)]
        name: Option<String>,
        /// When it stops working: a duration from now (`30d`, `12h`) or a time
        /// (`2027-01-01T00:00:00Z`).
        #[arg(long, value_parser = parse_expiry)]
        expires: Option<Expiry>,
    },
    /// List every key: id, tenant, role, name, and whether it is active, revoked or expired.
    List {
        /// One JSON object per line instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a key by its id; servers refuse it within 2 s.
    Revoke {
        /// The key's id (`k...`, as `keys list` shows it).
        id: String,
    },
}

fn parse_expiry(text: &str) -> Result<Expiry, String> {
    text.parse()
}

fn millis(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Runs `hookline keys`.
pub(crate) fn run(args: KeysArgs) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("hookline keys: could not start a runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(execute(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("hookline keys: {why}");
            ExitCode::from(2)
        }
    }
}

async fn table(store: &StoreArgs) -> Result<Arc<dyn ApiKeyTable>, String> {
    if let Some(pg) = store.connect_pg().await.map_err(|e| e.to_string())? {
        return Ok(Arc::new(pg));
    }
    let dir = match &store.store {
        Some(StoreChoice::Files(dir)) => dir.clone(),
        _ => PathBuf::from(".hookline"),
    };
    Ok(Arc::new(FileApiKeys::new(&dir)))
}

async fn execute(args: KeysArgs) -> Result<(), String> {
    let table = table(&args.store).await?;
    let now = SystemTime::now();
    match args.command {
        KeysCommand::Create {
            tenant,
            role,
            name,
            expires,
        } => {
            let expires_ms = expires.map(|e| e.at_ms(millis(now)));
            let (key, record) = ApiKeyRecord::create(&tenant, role, name, expires_ms, millis(now))
                .map_err(|e| e.to_string())?;
            table.insert(&record).await.map_err(|e| e.to_string())?;
            eprintln!(
                "Key {} for tenant {}, role {}; shown once below (the store keeps only its SHA-256).",
                record.id, record.tenant, record.role
            );
            println!("{key}");
            Ok(())
        }
        KeysCommand::List { json } => {
            let keys = table.list().await.map_err(|e| e.to_string())?;
            print!("{}", render(&keys, millis(now), json));
            Ok(())
        }
        KeysCommand::Revoke { id } => {
            if table
                .revoke(&id, millis(now))
                .await
                .map_err(|e| e.to_string())?
            {
                println!("Key {id} is revoked; running servers refuse it within 2 s.");
                Ok(())
            } else {
                Err(format!(
                    "no key has the id '{id}' (see `hookline keys list`)"
                ))
            }
        }
    }
}

fn render(keys: &[ApiKeyRecord], now_ms: u64, json: bool) -> String {
    let mut out = String::new();
    if json {
        for key in keys {
            // The shape `GET /v1/keys` answers with: never the hash.
            let view = serde_json::to_string(&ApiKeyView::of(key, now_ms)).unwrap_or_default();
            out.push_str(&view);
            out.push('\n');
        }
        return out;
    }
    if keys.is_empty() {
        return "No API key yet (hookline keys create --tenant T --role R).\n".into();
    }
    out.push_str("ID              TENANT           ROLE      STATE    NAME\n");
    for key in keys {
        out.push_str(&format!(
            "{:<15} {:<16} {:<9} {:<8} {}\n",
            key.id,
            key.tenant,
            key.role.name(),
            key.state(now_ms).name(),
            key.name.as_deref().unwrap_or("-")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiries_are_durations_or_times() {
        assert!(matches!(parse_expiry("30d"), Ok(Expiry::After(_))));
        assert!(matches!(
            parse_expiry("2027-01-01T00:00:00Z"),
            Ok(Expiry::At(_))
        ));
        assert!(parse_expiry("soon").is_err());
    }

    #[test]
    fn the_list_shows_state_and_never_the_hash() -> Result<(), String> {
        let (_, mut key) = ApiKeyRecord::create("acme", Role::Client, Some("web".into()), None, 0)
            .map_err(|e| e.to_string())?;
        let table = render(std::slice::from_ref(&key), 10, false);
        assert!(table.contains("acme") && table.contains("active") && table.contains("web"));
        key.revoked_ms = Some(5);
        let json = render(std::slice::from_ref(&key), 10, true);
        assert!(json.contains("\"state\":\"revoked\"") && !json.contains("sha256"));
        Ok(())
    }
}
