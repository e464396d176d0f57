//! `hookline bench`: measures hook latency and throughput through the pipeline, beside the
//! direct-call loop measured in the same run.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use hookline_actors::Pipeline;
use indicatif::{ProgressBar, ProgressStyle};

use crate::bench::{
    appender_plugins, direct_baseline, run_closed_loop, run_open_loop, BenchReport, Progress,
};

/// Options of `hookline bench`.
#[derive(Debug, Args)]
pub(super) struct BenchArgs {
    /// Plugins each call goes through (in-process appenders).
    #[arg(long, default_value_t = 8)]
    plugins: usize,
    /// Sessions in flight at once.
    #[arg(long, default_value_t = 1)]
    sessions: usize,
    /// Offered load in calls per second (open loop); without it, a closed loop.
    #[arg(long)]
    rate: Option<u64>,
    /// How long to run, in seconds.
    #[arg(long, default_value_t = 3.0)]
    duration: f64,
    /// Print one JSON report instead of text.
    #[arg(long)]
    json: bool,
}

struct Bar(ProgressBar);

impl Progress for Bar {
    fn tick(&self, done: Duration, _total: Duration) {
        self.0
            .set_position(u64::try_from(done.as_millis()).unwrap_or(u64::MAX));
    }
}

/// Runs the benchmark and prints its report.
pub(super) fn run(args: &BenchArgs) -> ExitCode {
    if !(args.duration.is_finite() && args.duration > 0.0 && args.duration <= 3600.0) {
        eprintln!("hookline bench: --duration must be between 0 and 3600 seconds");
        return ExitCode::from(2);
    }
    let duration = Duration::from_secs_f64(args.duration);
    let bar = progress_bar(duration, args.json);
    let measured = actix::System::new().block_on(async {
        let pipeline = Pipeline::builder()
            .plugins(appender_plugins(args.plugins))
            .start()
            .map_err(|e| e.to_string())?;
        let run = match args.rate {
            Some(rate) => run_open_loop(&pipeline, args.sessions, rate, duration, &bar).await,
            None => run_closed_loop(&pipeline, args.sessions, duration, &bar).await,
        };
        run.map_err(|e| e.to_string())
    });
    bar.0.finish_and_clear();
    let measured = match measured {
        Ok(measured) => measured,
        Err(error) => {
            eprintln!("hookline bench: {error}");
            return ExitCode::FAILURE;
        }
    };
    let direct = direct_baseline(args.plugins, 2_000_000);
    let report = BenchReport::new(
        "on_user_message",
        args.plugins,
        args.sessions,
        args.rate,
        &measured,
        direct,
    );
    if args.json {
        match serde_json::to_string_pretty(&report) {
            Ok(json) => println!("{json}"),
            Err(error) => {
                eprintln!("hookline bench: {error}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        println!("{report}");
    }
    ExitCode::SUCCESS
}

fn progress_bar(duration: Duration, hidden: bool) -> Bar {
    if hidden {
        return Bar(ProgressBar::hidden());
    }
    let bar = ProgressBar::new(u64::try_from(duration.as_millis()).unwrap_or(u64::MAX));
    if let Ok(style) = ProgressStyle::with_template("{spinner} benchmarking [{bar:30}] {elapsed}") {
        bar.set_style(style.progress_chars("=> "));
    }
    Bar(bar)
}
