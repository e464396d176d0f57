//! `hookline bench`: measures hook latency and throughput through the pipeline, beside the
//! direct-call loop measured in the same run; `--memory` measures the cost of idle sessions.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use super::progress::Bar;
use clap::{Args, ValueEnum};
use hookline_messages::hook::HookKind;
use serde::Serialize;

use crate::bench::{
    idle_sessions, run_on_arbiters, BenchHook, BenchReport, Compared, Measured, PeerFigures, Plan,
    Progress, Ran, Source,
};

/// Where the plugins come from.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum SourceArg {
    /// In-process appender plugins (`--plugin-count` of them).
    InProcess,
    /// `--plugin-count` external Rust echo plugins, one process each (`hookline-bench-echo`).
    ExternalRust,
    /// `--plugin-count` external Python echo plugins, one process each.
    ExternalPython,
    /// `--plugin-count` WebAssembly echo guests loaded into the process (`benches/plugins/echo.wat`),
    /// beside in-process, external Rust and external Python plugins and the raw pipe.
    Wasm,
    /// The shipped examples: rust-guard (Rust) and house-rules (Python).
    Examples,
}

mod set;

/// Options of `hookline bench`.
#[derive(Debug, Args)]
pub(super) struct BenchArgs {
    /// Where the plugins come from.
    #[arg(long, value_enum, default_value = "in-process")]
    source: SourceArg,
    /// The hook each call runs: `on_user_message` (the default), `on_prompt` or
    /// `on_tool_call`. With `--plugins DIR`: any of the sixteen hooks (raw hooks too), repeatable;
    /// default every hook the set implements.
    #[arg(long, value_name = "HOOK", value_parser = set::parse_hook)]
    hook: Vec<HookKind>,
    /// Plugins each call goes through (ignored with `--source examples`).
    // `--plugins N`, a number, is its old, deprecated spelling (`super::deprecated`).
    #[arg(long, value_name = "N", default_value_t = 8)]
    plugin_count: usize,
    /// Sessions in flight at once, summed over the arbiters.
    #[arg(long, default_value_t = 1)]
    sessions: usize,
    /// Arbiters: the pipeline's shards, each with its own coordinator, plugin actors and share
    /// of the sessions (the peers run one chain per arbiter). Default: one per core.
    #[arg(long)]
    arbiters: Option<usize>,
    /// Offered load in calls per second (open loop, driven from a thread of its own); without
    /// it, a closed loop.
    #[arg(long)]
    rate: Option<u64>,
    /// Measure the closed-loop maximum first, then offer half of it in an open loop and report
    /// that (the p99-at-half-load target).
    #[arg(long, conflicts_with = "rate")]
    at_half_load: bool,
    /// The pipeline's admission bound per shard (default: the pipeline's).
    #[arg(long)]
    max_pending: Option<usize>,
    /// Closed loop: callers of this many sessions each make their calls with one
    /// `Pipeline::call_many`, answered per batch (as a server holding many sessions' calls would);
    /// open loop: the calls due at once go out with one `call_many` (at most this many). Without
    /// it, one `Pipeline::call` per call.
    #[arg(long)]
    call_many: Option<usize>,
    /// Skip the peers of closed-loop runs: the actor peers (naive chain, relay chain, batched
    /// relay) of in-process ones, the pipe peers (raw echo, Python json echo) of external ones,
    /// the other kinds of plugin and the raw pipe of WebAssembly ones.
    #[arg(long)]
    no_peers: bool,
    /// How long to run, in seconds.
    #[arg(long, default_value_t = 3.0)]
    duration: f64,
    /// Closed loop: split the run into this many rounds, each running hookline and then every
    /// peer for `--duration / N`, and merge each one's rounds. On a shared machine whose speed
    /// comes and goes in spells (the single call's p50 is bimodal on a virtual machine), the
    /// spells then fall on all of them alike.
    /// Default 1; with `--plugins DIR`, 5 (its baselines weigh the noise of the rounds).
    #[arg(long, conflicts_with_all = ["rate", "at_half_load"])]
    rounds: Option<u32>,
    /// Measure resident memory per open idle session instead (`--idle-sessions` of them).
    #[arg(long)]
    memory: bool,
    /// Idle sessions opened by `--memory`.
    #[arg(long, default_value_t = 100_000)]
    idle_sessions: usize,
    /// Where the shipped example plugins are (for `--source examples`; default
    /// `examples/plugins` under the current directory when run from a checkout, else that of the
    /// checkout this binary was built from).
    #[arg(long, value_name = "DIR")]
    examples_dir: Option<PathBuf>,
    /// Print one JSON report instead of text.
    #[arg(long)]
    json: bool,
    /// Install the Prometheus recorder first, as `hookline serve` does, so the figures include
    /// what the pipeline's metrics cost (without it every metric is a no-op).
    #[arg(long)]
    metrics: bool,
    /// A plugin set from disk instead (`--plugins DIR`, baselines).
    #[command(flatten)]
    set: set::SetArgs,
}

impl BenchArgs {
    fn rounds(&self) -> u32 {
        self.rounds.unwrap_or(1)
    }
}

/// Runs the benchmark and prints its report.
pub(super) fn run(args: &BenchArgs) -> ExitCode {
    if args.metrics {
        // Before any actor starts: the pipeline binds its metric handles at start.
        hookline_server::install_recorder();
    }
    if args.memory {
        let report =
            actix::System::new().block_on(idle_sessions(args.idle_sessions, args.plugin_count));
        return print(report, args.json);
    }
    if !(args.duration.is_finite() && args.duration > 0.0 && args.duration <= 3600.0) {
        eprintln!("hookline bench: --duration must be between 0 and 3600 seconds");
        return ExitCode::from(2);
    }
    if args.arbiters.is_some_and(|a| a == 0 || a > 64) {
        eprintln!("hookline bench: --arbiters must be between 1 and 64");
        return ExitCode::from(2);
    }
    if args.rounds.is_some_and(|r| r == 0 || r > 1000) {
        eprintln!("hookline bench: --rounds must be between 1 and 1000");
        return ExitCode::from(2);
    }
    if let Some(dir) = &args.set.plugins_dir {
        return set::run(args, dir);
    }
    let Some(hook) = set::classic_hook(&args.hook) else {
        eprintln!(
            "hookline bench: without --plugins DIR, --hook is one of on_user_message, on_prompt \
and on_tool_call"
        );
        return ExitCode::from(2);
    };
    let examples_dir = match args.source {
        SourceArg::Examples => match examples_dir(args.examples_dir.as_deref()) {
            Ok(dir) => dir,
            Err(error) => {
                eprintln!("hookline bench: {error}");
                return ExitCode::from(2);
            }
        },
        _ => PathBuf::new(),
    };
    let mut plan = plan(args, hook, examples_dir);
    let bar = Bar::new("benchmarking", plan.duration, args.json);
    let (measured, peers) = if args.rounds() > 1 {
        match in_rounds(args, &plan, &bar) {
            Ok((measured, peers)) => (Ok(measured), Ok(peers)),
            Err(error) => (Err(error), Ok(Vec::new())),
        }
    } else {
        let mut measured = run_on_arbiters(&plan, &bar);
        if args.at_half_load {
            if let Ok((closed, _)) = &measured {
                let rate = (closed.calls as f64 / closed.elapsed.as_secs_f64()) / 2.0;
                plan.rate = Some(rate as u64);
                measured = run_on_arbiters(&plan, &bar);
            }
        }
        (measured, with_peers(args, &plan))
    };
    bar.finish();
    let report = measured.and_then(|(measured, ran)| {
        let plugins = ran.plugins;
        // The baseline runs after the pipelines stopped, on this thread, at the same plugin count.
        let direct = plan.hook.direct_baseline(plugins, 2_000_000);
        let mut report = BenchReport::new(
            plan.hook.name(),
            plugins,
            plan.sessions,
            plan.rate,
            &measured,
            direct,
        )
        .on(source_name(args.source), plan.arbiters)
        .in_rounds(args.rounds());
        report.plugin_memory = ran.memory;
        for (peer, measured) in peers? {
            let figures = PeerFigures::new(peer.name(), &measured, &report)
                .with_step_multiple(peer.gives_step_multiple());
            report.peers.push(figures);
        }
        Ok(report)
    });
    print(report, args.json)
}

/// hookline's run (with the plugins each call went through) and its peers' runs.
type Runs = ((Measured, Ran), Vec<(Compared, Measured)>);

/// Hookline's closed loop and then its peers, `--rounds` times for `--duration / rounds` each,
/// every implementation's rounds merged.
fn in_rounds(args: &BenchArgs, plan: &Plan, bar: &Bar) -> Result<Runs, String> {
    let round = Plan {
        duration: plan.duration / args.rounds(),
        ..plan.clone()
    };
    let mut merged: Option<Runs> = None;
    for index in 0..args.rounds() {
        // The bar counts hookline's time over all rounds, as it does in one run.
        let progress = Later {
            inner: bar,
            after: round.duration * index,
        };
        let (part, plugins) = run_on_arbiters(&round, &progress)?;
        let parts = with_peers(args, &round)?;
        match &mut merged {
            None => merged = Some(((part, plugins), parts)),
            Some(((into, _), peers)) => {
                into.extend(&part);
                for ((_, into), (_, part)) in peers.iter_mut().zip(&parts) {
                    into.extend(part);
                }
            }
        }
    }
    merged.ok_or_else(|| "no round ran".into())
}

/// Progress of a part that starts `after` into the whole.
struct Later<'a, P> {
    inner: &'a P,
    after: Duration,
}

impl<P: Progress> Progress for Later<'_, P> {
    fn tick(&self, done: Duration, total: Duration) {
        self.inner.tick(self.after + done, total);
    }
}

/// The peers of a closed-loop run on `on_user_message` ([`Compared::of`]), measured right after
/// it.
fn with_peers(args: &BenchArgs, plan: &Plan) -> Result<Vec<(Compared, Measured)>, String> {
    if args.no_peers {
        return Ok(Vec::new());
    }
    Compared::of(plan)
        .into_iter()
        .map(|peer| peer.run(plan).map(|m| (peer, m)))
        .collect()
}

fn plan(args: &BenchArgs, hook: BenchHook, examples_dir: PathBuf) -> Plan {
    Plan {
        source: match args.source {
            SourceArg::InProcess => Source::InProcess,
            SourceArg::ExternalRust => Source::ExternalRust,
            SourceArg::ExternalPython => Source::ExternalPython,
            SourceArg::Wasm => Source::Wasm,
            SourceArg::Examples => Source::Examples,
        },
        plugins: args.plugin_count,
        hook,
        sessions: args.sessions,
        rate: args.rate,
        duration: Duration::from_secs_f64(args.duration),
        arbiters: args
            .arbiters
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from)),
        max_pending: args.max_pending,
        batch: args.call_many.map(|n| n.max(1)),
        examples_dir,
    }
}

/// The example plugins' directory this binary was built beside (`examples/plugins` of its
/// checkout), where `cargo install --path .` leaves them.
const BUILT_EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/plugins");

/// Where `--source examples` finds the shipped examples (`rust-guard/`, `house-rules/`): the
/// directory given, else `examples/plugins` under the current directory (a checkout), else
/// that of the checkout this binary was built from. Absolute: each plugin process starts in
/// its own directory.
///
/// # Errors
/// A sentence naming `--examples-dir` when none of them holds the examples.
fn examples_dir(given: Option<&Path>) -> Result<PathBuf, String> {
    let holds =
        |dir: &Path| dir.join("house-rules/plugin.py").is_file() && dir.join("rust-guard").is_dir();
    let absolute = |dir: &Path| std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    if let Some(dir) = given {
        return if holds(dir) {
            Ok(absolute(dir))
        } else {
            Err(format!(
                "'{}' does not hold the example plugins (rust-guard/ and house-rules/plugin.py); \
                 give --examples-dir the examples/plugins directory of a hookline checkout",
                dir.display()
            ))
        };
    }
    let candidates = [
        PathBuf::from("examples/plugins"),
        PathBuf::from(BUILT_EXAMPLES),
    ];
    if let Some(dir) = candidates.iter().find(|dir| holds(dir)) {
        return Ok(absolute(dir));
    }
    Err(format!(
        "the example plugins were not found in {} nor in {}; give --examples-dir the \
         examples/plugins directory of a hookline checkout",
        absolute(&candidates[0]).display(),
        absolute(&candidates[1]).display()
    ))
}

fn source_name(source: SourceArg) -> &'static str {
    match source {
        SourceArg::InProcess => "in-process",
        SourceArg::ExternalRust => "external-rust",
        SourceArg::ExternalPython => "external-python",
        SourceArg::Wasm => "wasm",
        SourceArg::Examples => "examples",
    }
}

fn print<R: Serialize + std::fmt::Display>(report: Result<R, String>, json: bool) -> ExitCode {
    let report = match report {
        Ok(report) => report,
        Err(error) => {
            eprintln!("hookline bench: {error}");
            return ExitCode::FAILURE;
        }
    };
    if !json {
        println!("{report}");
        return ExitCode::SUCCESS;
    }
    match serde_json::to_string_pretty(&report) {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("hookline bench: {error}");
            ExitCode::FAILURE
        }
    }
}
