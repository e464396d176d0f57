//! `hookline soak`: many sessions at once through every hook with the demo plugins, then a
//! shutdown under that load; exits 1 when a check fails (see [`crate::soak`]).

use std::process::ExitCode;
use std::time::Duration;

use super::progress::Bar;
use clap::Args;

use crate::soak::{run_soak, SoakConfig};

/// Options of `hookline soak`.
#[derive(Debug, Args)]
pub(super) struct SoakArgs {
    /// Sessions in flight at once.
    #[arg(long, default_value_t = 10_000)]
    sessions: usize,
    /// How long the load runs before the shutdown, in seconds.
    #[arg(long, default_value_t = 40.0)]
    duration: f64,
    /// The event bus queue's capacity (default: one place per session).
    #[arg(long)]
    event_queue: Option<usize>,
    /// Print one JSON report instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs the soak and prints its report.
pub(super) fn run(args: &SoakArgs) -> ExitCode {
    if !(args.duration.is_finite() && args.duration > 0.0 && args.duration <= 3600.0) {
        eprintln!("hookline soak: --duration must be between 0 and 3600 seconds");
        return ExitCode::from(2);
    }
    if args.sessions == 0 || args.sessions > 1_000_000 {
        eprintln!("hookline soak: --sessions must be between 1 and 1000000");
        return ExitCode::from(2);
    }
    let config = SoakConfig {
        sessions: args.sessions,
        duration: Duration::from_secs_f64(args.duration),
        event_queue: args.event_queue,
        ..SoakConfig::default()
    };
    let bar = Bar::new("soaking", config.duration, args.json);
    let runtime = match soak_runtime() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("hookline soak: cannot start a runtime: {error}");
            return ExitCode::from(2);
        }
    };
    let report = actix::System::with_tokio_rt(move || runtime).block_on(run_soak(&config, &bar));
    bar.finish();
    let report = match report {
        Ok(report) => report,
        Err(error) => {
            eprintln!("hookline soak: {error}");
            return ExitCode::from(2);
        }
    };
    if args.json {
        match serde_json::to_string_pretty(&report) {
            Ok(json) => println!("{json}"),
            Err(error) => {
                eprintln!("hookline soak: {error}");
                return ExitCode::from(2);
            }
        }
    } else {
        println!("{report}");
    }
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The soak's runtime: actix's current-thread runtime with a bounded blocking pool. The file
/// store creates, opens and compacts sessions on that pool (several `fsync`s each, which the
/// journal merges when they run side by side) and file tools run there; with the default pool
/// (up to 512 threads) resident memory measured the threads' allocator arenas filling up for
/// the first seconds rather than the host.
fn soak_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(SOAK_BLOCKING_THREADS)
        .build()
}

/// Threads in the soak runtime's blocking pool.
const SOAK_BLOCKING_THREADS: usize = 32;
