//! `hookline replay [SESSION...] [--store DIR|postgres://...] [--plugins DIR] [--workspace DIR]
//! [--json] [--jobs N]` (issue 25): runs stored sessions' turns again against the plugins found
//! as `hookline run` finds them (the bundled demo plugins when none is found, unless
//! `--no-demo-plugins`), with a recorded model, recorded tools and recorded approvals, and says
//! per session and in total whether the replay reproduced the recording. Nothing runs for real
//! and nothing is written (`docs/replay.md`).
//!
//! Exit status: 0 when no session differs, 1 when some do, 2 on bad input (an unreadable store,
//! an unknown session), with an English sentence.

mod latency;
mod report;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use clap::Args;
use futures::StreamExt as _;
use hookline_host::replay::{Replayer, SessionReplay};
use hookline_host::store::{FileStore, FileStoreOptions, SessionStore, StoredSession};
use hookline_messages::session::SessionId;
use hookline_postgres::{PgStore, PgStoreOptions};

use super::plugin_dirs::PluginDirs;
use super::progress::Bar;
use super::serve_store::{parse_store, StoreChoice};
use report::Report;

/// Arguments of `hookline replay`.
#[derive(Debug, Args)]
pub(crate) struct ReplayArgs {
    /// The sessions to replay (default: every stored session).
    sessions: Vec<String>,
    /// The store: a directory holding `sessions/` (default: `.hookline` under the workspace) or
    /// a PostgreSQL URL (`postgres://user:password@host:5432/db`). Only read.
    #[arg(long, value_name = "DIR|URL", value_parser = parse_store)]
    store: Option<StoreChoice>,
    /// Where the plugins to replay against are found, as for `hookline run` (`--plugins DIR`
    /// is the user plugins directory).
    #[command(flatten)]
    dirs: PluginDirs,
    /// Never run the bundled demo plugins, even when no plugin is found on disk.
    #[arg(long)]
    no_demo_plugins: bool,
    /// A tools directory, as for `hookline run` (only the tools' specs are used: no tool runs).
    #[arg(long, value_name = "DIR")]
    tools: Option<PathBuf>,
    /// Print one machine-readable JSON document instead of the summary.
    #[arg(long)]
    json: bool,
    /// Sessions replayed at once.
    #[arg(long, value_name = "N", default_value_t = 4)]
    jobs: usize,
}

/// Why a replay could not start (exit 2).
#[derive(Debug, thiserror::Error)]
pub(super) enum ReplayError {
    #[error("{0}.")]
    Input(String),
}

/// Runs the command.
pub(crate) fn run(args: &ReplayArgs) -> ExitCode {
    // Installed before any pipeline starts: the plugin actors resolve their histograms then.
    let latencies = latency::table();
    let system = actix::System::new();
    match system.block_on(replay(args, latencies)) {
        Ok(report) => {
            let text = if args.json {
                serde_json::to_string_pretty(&report).unwrap_or_default()
            } else {
                report::human(&report)
            };
            // A closed stdout (`| head`) is not this command's failure.
            let _ = writeln!(std::io::stdout().lock(), "{text}");
            if report.differing > 0 {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(error) => {
            eprintln!("hookline replay: {error}");
            ExitCode::from(2)
        }
    }
}

type Latencies = Option<Arc<crate::bench::plugin_set::PluginTimes>>;

async fn replay(args: &ReplayArgs, latencies: Latencies) -> Result<Report, ReplayError> {
    if args.jobs == 0 {
        return Err(ReplayError::Input("--jobs must be at least 1".into()));
    }
    let options = args.dirs.load_options().map_err(ReplayError::Input)?;
    let store = open_store(args).await?;
    let sessions = read_sessions(&*store, &args.sessions).await?;
    if let Some(dir) = args.tools.as_ref().filter(|dir| !dir.is_dir()) {
        let dir = dir.display();
        return Err(ReplayError::Input(format!("'{dir}' is not a directory")));
    }
    let builder = super::run::plugins(&options, args.tools.as_deref(), args.no_demo_plugins).await;
    let replayer = builder
        .start_replay()
        .map_err(|e| ReplayError::Input(format!("the plugins could not start: {e}")))?;
    if let Some(table) = &latencies {
        latency::reset(table);
    }
    let replayer = Arc::new(replayer);
    let started = Instant::now();
    let outcome = replay_all(&replayer, sessions, args).await;
    let elapsed = started.elapsed();
    replayer.shutdown().await;
    let replays = outcome?;
    let latency = latencies.as_deref().map(latency::read).unwrap_or_default();
    Ok(Report::new(replays, elapsed, latency))
}

/// Replays every session, `--jobs` at a time, each on its pipeline shard's thread; results
/// in store order.
async fn replay_all(
    replayer: &Arc<Replayer>,
    sessions: Vec<StoredSession>,
    args: &ReplayArgs,
) -> Result<Vec<SessionReplay>, ReplayError> {
    let turns: usize = sessions.iter().map(Replayer::turns_of).sum();
    let bar = Bar::counting("replaying turns", turns as u64, args.json);
    let done = std::cell::Cell::new(0u64);
    let replays: Vec<_> = futures::stream::iter(sessions)
        .map(|stored| {
            let turns = Replayer::turns_of(&stored) as u64;
            let id = stored.facts.session_id.clone();
            let replay = replayer.replay_on_shard(stored);
            let (done, bar) = (&done, &bar);
            async move {
                let replay = replay.await;
                done.set(done.get() + turns);
                bar.set(done.get());
                replay.map_err(|e| {
                    ReplayError::Input(format!("session {id} could not be replayed: {e}"))
                })
            }
        })
        .buffered(args.jobs)
        .collect()
        .await;
    bar.finish();
    replays.into_iter().collect()
}

/// The store `--store` names (default: `.hookline` under the workspace), opened to read only.
async fn open_store(args: &ReplayArgs) -> Result<Arc<dyn SessionStore>, ReplayError> {
    let choice = args.store.clone().unwrap_or_else(|| {
        let workspace = args
            .dirs
            .workspace
            .clone()
            .unwrap_or_else(|| PathBuf::from("."));
        StoreChoice::Files(workspace.join(".hookline"))
    });
    open(choice).await
}

/// The store `choice` names, opened to read only (`hookline bench --from-store` reads the
/// same way).
pub(super) async fn open(choice: StoreChoice) -> Result<Arc<dyn SessionStore>, ReplayError> {
    match choice {
        StoreChoice::Files(root) => open_files(&root),
        StoreChoice::Postgres(url) => {
            let store = PgStore::connect(&url, PgStoreOptions::default())
                .await
                .map_err(|e| ReplayError::Input(format!("the store could not be opened: {e}")))?;
            Ok(Arc::new(store))
        }
    }
}

/// The file store at `root`; one that does not exist is refused rather than created.
fn open_files(root: &Path) -> Result<Arc<dyn SessionStore>, ReplayError> {
    if !root.join("sessions").is_dir() {
        let root = root.display();
        return Err(ReplayError::Input(format!(
            "there is no session store at '{root}' (no sessions directory)"
        )));
    }
    let store = FileStore::open(root, FileStoreOptions::default())
        .map_err(|e| ReplayError::Input(format!("the store could not be opened: {e}")))?;
    Ok(Arc::new(store))
}

/// The sessions named (every stored one when none is), read without taking their leases.
pub(super) async fn read_sessions(
    store: &dyn SessionStore,
    named: &[String],
) -> Result<Vec<StoredSession>, ReplayError> {
    let unreadable = |e| ReplayError::Input(format!("the store could not be read: {e}"));
    let ids = if named.is_empty() {
        store.sessions().await.map_err(unreadable)?
    } else {
        named
            .iter()
            .map(|id| SessionId::from(id.as_str()))
            .collect()
    };
    let mut sessions = Vec::with_capacity(ids.len());
    for id in ids {
        match store.read(&id).await {
            Ok(Some(stored)) => sessions.push(stored),
            Ok(None) => {
                return Err(ReplayError::Input(format!(
                    "there is no session '{id}' in the store"
                )))
            }
            Err(e) => {
                return Err(ReplayError::Input(format!(
                    "session '{id}' could not be read: {e}"
                )))
            }
        }
    }
    Ok(sessions)
}
