//! `hookline bench --plugins DIR`: a plugin set from disk, loaded as `hookline run` and
//! `hookline serve` load it (discovery, order, trust, disabled plugins, every kind), run through
//! every hook it implements (or the ones asked for) at N sessions in flight. Per hook: the whole
//! call beside the bare pipeline (the same calls with no plugin) and the direct loop (the
//! plugins' hooks called from a plain loop), all in the same run; per plugin: its latency as the
//! pipeline's own metrics time it ([`PluginTimes`]), its share of the call and its skips.
//!
//! The run is split into rounds, each running every hook once (the set, then the bare pipeline,
//! then the direct loop), so the machine's fast and slow spells fall on all of them alike and
//! each figure has one value per round: the noise a [baseline comparison](compare) weighs.

mod baseline;
mod defaults;
mod recorder;
mod report;
mod typed;
mod values;

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use hookline_actors::plugin::PluginRegistration;
use hookline_actors::Pipeline;
use hookline_host::loading::{load, LoadOptions, LoadReport, PluginState};
use hookline_messages::hook::{HookKind, HookSet};

pub use baseline::{
    check_same, compare, load as load_baseline, save as save_baseline, Compared, Comparison,
    Verdict,
};
pub use recorder::{PluginHook, PluginTimes, Taken};
pub use report::{Figures, HookFigures, PluginFigures, PluginSet, SetPlugin, SetReport, FORMAT};
pub use values::{HookValues, Origin, Values};

use super::driver::{Measured, Progress};
use super::sharded::on_thread;
use typed::{typed, HookRun};

/// What to run.
#[derive(Clone, Debug)]
pub struct SetPlan {
    /// Where the plugins are, as `hookline run` takes them.
    pub options: LoadOptions,
    /// The hooks to run; empty: every hook the set implements.
    pub hooks: Vec<HookKind>,
    /// What each hook is called with.
    pub values: Values,
    /// Sessions in flight.
    pub sessions: usize,
    /// The pipeline's shards.
    pub arbiters: usize,
    /// The whole run's length.
    pub duration: Duration,
    /// Rounds (at least 1).
    pub rounds: u32,
    /// The pipeline's admission bound per shard.
    pub max_pending: Option<usize>,
}

/// Why a plugin set could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum SetError {
    /// Bad input: no plugins, a plugin that did not load, a hook no plugin implements, a value
    /// that is not the hook's.
    #[error("{0}")]
    Input(String),
    /// The run itself failed (a pipeline that stopped).
    #[error("the benchmark failed: {0}")]
    Run(String),
}

/// Loads the set, runs it and reports.
///
/// # Errors
/// [`SetError`].
pub fn run(plan: SetPlan, progress: &dyn Progress) -> Result<SetReport, SetError> {
    let duration = plan.duration;
    // The recorder goes in before any pipeline starts: the plugin actors bind their handles then.
    let times = PluginTimes::installed().ok_or_else(|| {
        SetError::Input("another metrics recorder is installed: plugins cannot be timed".into())
    })?;
    on_thread(duration, progress, move || {
        Ok(actix::System::new().block_on(measure(plan, times)))
    })
    .map_err(SetError::Run)?
}

async fn measure(plan: SetPlan, times: std::sync::Arc<PluginTimes>) -> Result<SetReport, SetError> {
    let loaded = load(&plan.options).await;
    let result = match checked(&plan, &loaded) {
        Ok(hooks) => measure_loaded(&plan, &loaded, &hooks, &times).await,
        Err(error) => Err(error),
    };
    loaded.shutdown().await;
    result
}

/// Where the set was looked for, for messages.
fn searched(options: &LoadOptions) -> String {
    let dirs: Vec<String> = [&options.user_dir, &options.workspace_dir]
        .into_iter()
        .flatten()
        .map(|d| format!("'{}'", d.display()))
        .collect();
    dirs.join(" and ")
}

/// The hooks to run, once the set is known to have loaded whole.
fn checked(plan: &SetPlan, loaded: &LoadReport) -> Result<Vec<HookKind>, SetError> {
    let dirs = searched(&plan.options);
    if loaded.statuses.is_empty() {
        return Err(SetError::Input(format!("there are no plugins in {dirs}")));
    }
    let failed: Vec<String> = loaded
        .statuses
        .iter()
        .filter(|s| matches!(s.state, PluginState::Skipped(_)))
        .flat_map(|s| s.notes())
        .map(|note| note.to_string())
        .collect();
    if !failed.is_empty() {
        return Err(SetError::Input(format!(
            "a plugin failed to load, so the set cannot be measured as it runs: {}",
            failed.join(" ")
        )));
    }
    if loaded.plugins.is_empty() {
        return Err(SetError::Input(format!(
            "every plugin in {dirs} is disabled: there is nothing to run"
        )));
    }
    let implemented = loaded
        .registrations()
        .iter()
        .fold(HookSet::empty(), |set, p| set.union(p.implements()));
    if plan.hooks.is_empty() {
        return Ok(implemented.iter().collect());
    }
    for hook in &plan.hooks {
        if !implemented.contains(*hook) {
            let list: Vec<&str> = implemented.iter().map(HookKind::wire_name).collect();
            return Err(SetError::Input(format!(
                "no plugin of the set implements {} (it implements {})",
                hook.wire_name(),
                list.join(", ")
            )));
        }
    }
    let named = HookKind::ALL.iter().copied();
    Ok(named.filter(|hook| plan.hooks.contains(hook)).collect())
}

/// The quantile each round is compared by: the 10th percentile, the figure a loaded machine
/// moves least (its delays only add to a call), so a shift of the bulk of the calls shows and the
/// machine's slow spells do not.
const ROUND_QUANTILE: f64 = 0.10;

/// One hook's rounds so far.
#[derive(Default)]
struct Accum {
    call: Option<Measured>,
    rounds: Vec<u64>,
    bare: Option<Measured>,
    direct: Option<Measured>,
    plugins: BTreeMap<String, PluginAccum>,
}

#[derive(Default)]
struct PluginAccum {
    latency: Option<Histogram<u64>>,
    rounds: Vec<u64>,
    skips: BTreeMap<String, u64>,
}

fn extend(into: &mut Option<Measured>, part: Measured) {
    match into {
        Some(into) => into.extend(&part),
        None => *into = Some(part),
    }
}

impl Accum {
    /// Adds one round's per-plugin figures of `hook`.
    fn add_plugins(&mut self, hook: HookKind, taken: BTreeMap<PluginHook, Taken>) {
        for ((plugin, name), taken) in taken {
            if name != hook.wire_name() {
                continue;
            }
            let into = self.plugins.entry(plugin).or_default();
            if let Some(latency) = taken.latency {
                into.rounds.push(latency.value_at_quantile(ROUND_QUANTILE));
                match &mut into.latency {
                    Some(all) => {
                        let _ = all.add(&latency);
                    }
                    None => into.latency = Some(latency),
                }
            }
            for (reason, count) in taken.skips {
                *into.skips.entry(reason).or_default() += count;
            }
        }
    }
}

/// The loaded set's rounds, and its report.
async fn measure_loaded(
    plan: &SetPlan,
    loaded: &LoadReport,
    hooks: &[HookKind],
    times: &PluginTimes,
) -> Result<SetReport, SetError> {
    let runs = hooks
        .iter()
        .map(|hook| typed(*hook, plan.values.of(*hook)).map(|run| (*hook, run)))
        .collect::<Result<Vec<_>, _>>()
        .map_err(SetError::Input)?;
    let registrations = loaded.registrations();
    let pipeline = start(plan, registrations.clone())?;
    let bare = match start(plan, Vec::new()) {
        Ok(bare) => bare,
        Err(error) => {
            pipeline.stop().await;
            return Err(error);
        }
    };
    let accums = rounds(plan, &runs, &registrations, (&pipeline, &bare), times).await;
    let load_notes = pipeline
        .load_notes()
        .iter()
        .map(ToString::to_string)
        .collect();
    pipeline.stop().await;
    bare.stop().await;
    let accums = accums?;
    let figures = hooks
        .iter()
        .zip(accums)
        .map(|(hook, accum)| hook_figures(*hook, accum, &registrations, &plan.values))
        .collect();
    Ok(SetReport {
        format: FORMAT,
        hookline_version: env!("CARGO_PKG_VERSION").to_owned(),
        plugin_set: plugin_set(plan, loaded),
        sessions: plan.sessions,
        arbiters: plan.arbiters,
        rounds: plan.rounds,
        duration_s: plan.duration.as_secs_f64(),
        hooks: figures,
        load_notes,
        comparison: None,
    })
}

fn start(plan: &SetPlan, plugins: Vec<PluginRegistration>) -> Result<Pipeline, SetError> {
    let mut builder = Pipeline::builder()
        .plugins(plugins)
        .shards(plan.arbiters.max(1));
    if let Some(bound) = plan.max_pending {
        builder = builder.max_pending(bound);
    }
    builder.start().map_err(|e| SetError::Run(e.to_string()))
}

/// Every round: each hook through the set, the bare pipeline and the direct loop in turn.
async fn rounds(
    plan: &SetPlan,
    runs: &[(HookKind, Box<dyn HookRun>)],
    registrations: &[PluginRegistration],
    (pipeline, bare): (&Pipeline, &Pipeline),
    times: &PluginTimes,
) -> Result<Vec<Accum>, SetError> {
    let run_err = |e: hookline_actors::PipelineError| SetError::Run(e.to_string());
    let slices = plan.rounds.max(1) * u32::try_from(runs.len().max(1)).unwrap_or(u32::MAX);
    let slice = plan.duration / slices;
    // A warm-up the report leaves out: processes, caches and allocators settle. A round's worth
    // per hook, at least 200 ms: a shorter one left the first hook measured slower in some
    // runs than in others (a baseline then failed against itself on a quiet machine).
    for (_, run) in runs {
        let warm = slice.max(Duration::from_millis(200));
        run.closed_loop(pipeline, plan.sessions, warm)
            .await
            .map_err(run_err)?;
    }
    times.take();
    let mut accums: Vec<Accum> = runs.iter().map(|_| Accum::default()).collect();
    for _ in 0..plan.rounds.max(1) {
        for ((hook, run), accum) in runs.iter().zip(&mut accums) {
            let call = run.closed_loop(pipeline, plan.sessions, slice / 2).await;
            let call = call.map_err(run_err)?;
            accum
                .rounds
                .push(call.histogram.value_at_quantile(ROUND_QUANTILE));
            extend(&mut accum.call, call);
            accum.add_plugins(*hook, times.take());
            let bare_run = run.closed_loop(bare, plan.sessions, slice / 4).await;
            extend(&mut accum.bare, bare_run.map_err(run_err)?);
            extend(
                &mut accum.direct,
                run.direct(registrations, slice / 4).await,
            );
        }
    }
    Ok(accums)
}

fn figures(measured: Option<&Measured>) -> Figures {
    let Some(m) = measured else {
        return Figures {
            calls: 0,
            calls_per_second: 0.0,
            p10_ns: 0,
            p50_ns: 0,
            p99_ns: 0,
            p999_ns: 0,
            mean_ns: 0.0,
        };
    };
    let h = &m.histogram;
    Figures {
        calls: m.calls,
        calls_per_second: m.calls as f64 / m.elapsed.as_secs_f64().max(f64::MIN_POSITIVE),
        p10_ns: h.value_at_quantile(0.1),
        p50_ns: h.value_at_quantile(0.5),
        p99_ns: h.value_at_quantile(0.99),
        p999_ns: h.value_at_quantile(0.999),
        mean_ns: h.mean(),
    }
}

fn hook_figures(
    hook: HookKind,
    mut accum: Accum,
    registrations: &[PluginRegistration],
    values: &Values,
) -> HookFigures {
    let call = figures(accum.call.as_ref());
    let plugins = registrations
        .iter()
        .filter(|p| p.implements().contains(hook))
        .map(|p| {
            let mine = accum.plugins.remove(p.name()).unwrap_or_default();
            let (timed, [p10, p50, p99], mean) =
                mine.latency.as_ref().map_or((0, [0; 3], 0.0), |h| {
                    let at = |q| h.value_at_quantile(q);
                    (h.len(), [at(0.1), at(0.5), at(0.99)], h.mean())
                });
            PluginFigures {
                plugin: p.name().to_owned(),
                timed,
                p10_ns: p10,
                p50_ns: p50,
                p99_ns: p99,
                mean_ns: mean,
                share: mean / call.mean_ns.max(f64::MIN_POSITIVE),
                rounds_p10_ns: mine.rounds,
                skips: mine.skips,
            }
        })
        .collect();
    HookFigures {
        hook: hook.wire_name().to_owned(),
        values: values.describe(hook),
        call,
        rounds_p10_ns: accum.rounds,
        bare_pipeline: figures(accum.bare.as_ref()),
        direct_loop: figures(accum.direct.as_ref()),
        plugins,
    }
}

fn plugin_set(plan: &SetPlan, loaded: &LoadReport) -> PluginSet {
    let registrations = loaded.registrations();
    let plugins = loaded
        .statuses
        .iter()
        .map(|status| {
            let hooks = registrations
                .iter()
                .find(|r| r.name() == status.name)
                .map(|r| {
                    r.implements()
                        .iter()
                        .map(|h| h.wire_name().to_owned())
                        .collect()
                })
                .unwrap_or_default();
            let state = match status.state {
                PluginState::Loaded => "loaded",
                PluginState::Disabled => "disabled",
                PluginState::Skipped(_) => "skipped",
            };
            SetPlugin {
                name: status.name.clone(),
                kind: status.kind.clone(),
                state: state.to_owned(),
                hooks,
            }
        })
        .collect();
    let dirs = [&plan.options.user_dir, &plan.options.workspace_dir]
        .into_iter()
        .flatten()
        .map(|d| d.display().to_string())
        .collect();
    PluginSet { dirs, plugins }
}
