//! `hookline bench --plugins DIR`: the options of a plugin set's benchmark and its baselines
//! (the run itself is `crate::bench::plugin_set`).
//!
//! Exit status: 0 with a report; 1 when `--fail-above` finds a hook or a plugin slower than the
//! baseline by more than PCT beyond the noise; 2 on bad input (no plugins, a plugin that failed
//! to load, a hook no plugin implements, a baseline of another plugin set or version).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use hookline_messages::hook::HookKind;

use super::super::plugin_dirs::PluginDirs;
use super::super::progress::Bar;
use super::super::replay::{open as open_store, read_sessions};
use super::super::serve_store::parse_store;
use super::BenchArgs;
use crate::bench::plugin_set::{self, SetPlan, SetReport, Values};
use crate::bench::BenchHook;

/// The options of a plugin set's benchmark.
#[derive(Debug, Args)]
pub(super) struct SetArgs {
    /// Benchmark the plugin set of this directory, loaded as `hookline run` loads its user
    /// plugins directory (pinned order, trust, disabled plugins, every kind), through every hook
    /// it implements (or each `--hook`).
    // `--plugins-dir DIR` is its old, deprecated spelling (`super::super::deprecated`).
    #[arg(
        long = "plugins",
        value_name = "DIR",
        conflicts_with_all = [
            "rate", "at_half_load", "call_many", "memory", "metrics", "source", "plugin_count",
            "no_peers",
        ]
    )]
    pub(super) plugins_dir: Option<PathBuf>,
    /// With `--plugins DIR`: overlay this workspace's `.hookline/plugins`, as `hookline run` does
    /// (its plugins run only when trusted). Without it, only the directory's plugins run.
    #[arg(long, value_name = "DIR", requires = "plugins_dir")]
    workspace: Option<PathBuf>,
    /// With `--plugins DIR`: plugin names to load first, in this order (comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "NAMES",
        requires = "plugins_dir"
    )]
    order: Vec<String>,
    /// With `--plugins DIR`: the trust file workspace plugins must be trusted in (default
    /// `$HOOKLINE_HOME/trust.json` or `~/.hookline/trust.json`).
    #[arg(long, value_name = "FILE", requires = "plugins_dir")]
    trust_file: Option<PathBuf>,
    /// With `--plugins DIR`: the values each hook is called with, from a JSON file (an object
    /// keyed by hook name, each a value or an array of values; docs/performance.md).
    #[arg(long, value_name = "FILE", requires = "plugins_dir")]
    values: Option<PathBuf>,
    /// With `--plugins DIR`: take each hook's values from recorded sessions (every session of
    /// the store, or the ones named), as `hookline replay` reads them: a directory holding
    /// `sessions/` or a PostgreSQL URL, then session ids.
    #[arg(
        long,
        value_name = "DIR|URL [SESSION...]",
        num_args = 1..,
        requires = "plugins_dir"
    )]
    from_store: Vec<String>,
    /// With `--plugins DIR`: write the report to FILE, as a baseline for `--baseline`.
    #[arg(long, value_name = "FILE", requires = "plugins_dir")]
    save_baseline: Option<PathBuf>,
    /// With `--plugins DIR`: compare with the baseline in FILE (same plugin set, hookline
    /// version, sessions and arbiters), per hook and per plugin.
    #[arg(long, value_name = "FILE", requires = "plugins_dir")]
    baseline: Option<PathBuf>,
    /// With `--baseline`: exit 1 when a hook or a plugin is slower than the baseline by more
    /// than PCT percent beyond the noise of both runs.
    #[arg(long, value_name = "PCT", requires = "baseline")]
    fail_above: Option<f64>,
}

/// A hook name as `--hook` takes it.
pub(super) fn parse_hook(text: &str) -> Result<HookKind, String> {
    text.parse().map_err(|_| {
        let names: Vec<&str> = HookKind::ALL.iter().map(|h| h.wire_name()).collect();
        format!("'{text}' is not a hook; the hooks are {}", names.join(", "))
    })
}

/// The one hook of a run without `--plugins DIR` (default `on_user_message`); `None` when the
/// hooks given are not one of its three.
pub(super) fn classic_hook(hooks: &[HookKind]) -> Option<BenchHook> {
    match hooks {
        [] | [HookKind::OnUserMessage] => Some(BenchHook::OnUserMessage),
        [HookKind::OnPrompt] => Some(BenchHook::OnPrompt),
        [HookKind::OnToolCall] => Some(BenchHook::OnToolCall),
        _ => None,
    }
}

/// Runs the plugin set of `dir` and prints its report.
pub(super) fn run(args: &BenchArgs, dir: &Path) -> ExitCode {
    match run_set(args, dir) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("hookline bench: {error}");
            ExitCode::from(2)
        }
    }
}

fn run_set(args: &BenchArgs, dir: &Path) -> Result<ExitCode, String> {
    let set = &args.set;
    if set
        .fail_above
        .is_some_and(|pct| !(pct.is_finite() && pct >= 0.0))
    {
        return Err("--fail-above must be a percentage of 0 or more".into());
    }
    let rounds = args.rounds.unwrap_or(5);
    if rounds < 2 {
        return Err(
            "--plugins DIR needs at least 2 rounds (the noise is weighed from them)".into(),
        );
    }
    let mut options = PluginDirs {
        user_dir: Some(dir.to_path_buf()),
        workspace: set.workspace.clone(),
        order: set.order.clone(),
        trust_file: set.trust_file.clone(),
        verbose: false,
    }
    .load_options()?;
    // The directory given is the set; a workspace joins it only when asked for.
    options.workspace_dir = set.workspace.as_ref().map(|w| w.join(".hookline/plugins"));
    // A bad baseline (another format or version) fails before anything runs.
    let baseline = match &set.baseline {
        Some(file) => Some((plugin_set::load_baseline(file)?, file)),
        None => None,
    };
    let plan = SetPlan {
        options,
        hooks: args.hook.clone(),
        values: values(set)?,
        sessions: args.sessions.max(1),
        arbiters: args
            .arbiters
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, usize::from)),
        duration: Duration::from_secs_f64(args.duration),
        rounds,
        max_pending: args.max_pending,
    };
    let bar = Bar::new("benchmarking", plan.duration, args.json);
    let report = plugin_set::run(plan, &bar);
    bar.finish();
    let mut report = report.map_err(|e| e.to_string())?;
    if let Some(file) = &set.save_baseline {
        plugin_set::save_baseline(&report, file)?;
    }
    if let Some((base, file)) = baseline {
        plugin_set::check_same(&base, &report, file)?;
        report.comparison = Some(plugin_set::compare(&base, &report, file, set.fail_above));
    }
    print(&report, args.json)?;
    let failed = report.comparison.as_ref().is_some_and(|c| c.failed);
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The defaults, with the values file's and the recorded sessions' over them.
fn values(set: &SetArgs) -> Result<Values, String> {
    let mut values = Values::default();
    if let Some(file) = &set.values {
        values = values.with_file(file)?;
    }
    if let Some((store, sessions)) = set.from_store.split_first() {
        let choice = parse_store(store).map_err(|e| format!("--from-store: {e}"))?;
        let recorded = actix::System::new().block_on(async {
            let store = open_store(choice).await?;
            read_sessions(&*store, sessions).await
        });
        let recorded = recorded.map_err(|e| e.to_string())?;
        if recorded.is_empty() {
            return Err(format!("--from-store: there are no sessions in '{store}'"));
        }
        values = values.with_recorded(&recorded);
    }
    Ok(values)
}

fn print(report: &SetReport, json: bool) -> Result<(), String> {
    use std::io::Write as _;
    let text = if json {
        serde_json::to_string_pretty(report).map_err(|e| e.to_string())?
    } else {
        report.to_string()
    };
    // A closed stdout (`| head`) is not this command's failure.
    let _ = writeln!(std::io::stdout().lock(), "{text}");
    Ok(())
}
