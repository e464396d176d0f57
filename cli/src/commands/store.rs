//! `hookline store`: administer a session store. `hookline store migrate --database-url URL`
//! applies the PostgreSQL store's embedded migrations (`migrations/*.sql`, issue 14 item 1) and
//! says which it applied. Exit status: 0 done (also when nothing was missing), 2 when the
//! database could not be reached or a migration failed (nothing of that run is kept).

use std::process::ExitCode;

use clap::{Args, Subcommand};

use hookline_postgres::migrate_url;

/// `hookline store ...`
#[derive(Debug, Args)]
pub(crate) struct StoreArgs {
    #[command(subcommand)]
    command: StoreCommand,
}

#[derive(Debug, Subcommand)]
enum StoreCommand {
    /// Apply the PostgreSQL store's schema migrations that the database does not have yet.
    Migrate {
        /// The database, as a libpq URL (postgres://user:password@host:5432/db) or key=value
        /// string. Defaults to $HOOKLINE_DATABASE_URL.
        #[arg(long)]
        database_url: Option<String>,
        /// The CA certificates (PEM) that `sslmode=verify-ca` and `verify-full` in the URL
        /// trust (default: the URL's `sslrootcert`, else the public web roots).
        #[arg(long, value_name = "FILE")]
        database_ca: Option<std::path::PathBuf>,
    },
}

/// Runs `hookline store`.
pub(crate) fn run(args: StoreArgs) -> ExitCode {
    match args.command {
        StoreCommand::Migrate {
            database_url,
            database_ca,
        } => match database_url.or_else(|| std::env::var("HOOKLINE_DATABASE_URL").ok()) {
            Some(url) => migrate(&url, database_ca.as_deref()),
            None => {
                eprintln!(
                    "hookline store migrate: give the database with --database-url URL \
                         (or $HOOKLINE_DATABASE_URL)"
                );
                ExitCode::from(2)
            }
        },
    }
}

fn migrate(url: &str, ca_file: Option<&std::path::Path>) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("hookline store migrate: could not start a runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(migrate_url(url, ca_file)) {
        Ok(applied) if applied.is_empty() => {
            println!("The schema is current; no migration was needed.");
            ExitCode::SUCCESS
        }
        Ok(applied) => {
            for name in &applied {
                println!("applied {name}");
            }
            println!(
                "Applied {} migration(s); the schema is current.",
                applied.len()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("hookline store migrate: {}", e.with_causes());
            ExitCode::from(2)
        }
    }
}
