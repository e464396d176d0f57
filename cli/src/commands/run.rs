//! `hookline run [SCENARIO] [--json] [--plugins DIR] [--workspace DIR] [--order A,B]
//! [--trust-file FILE] [--tools DIR] [--no-demo-plugins]
//! [--provider openai --base-url URL --model NAME [--api-key-env VAR]]`:
//! plays a scenario (default: the bundled demo) with the plugins on disk, then prints the
//! conversation, each hook's effect and the notes in order, or with `--json` one
//! machine-readable report. The run shuts the host down when it ends, also on Ctrl-C
//! (SPEC P3.13, G2): the bounded `gateway:shutdown` wait, the active session's end hooks, then the
//! shared state (the pipeline, the plugin processes, the store's open files).
//!
//! Plugins are found and loaded exactly as `hookline hooks` finds them (one place builds the load
//! options: `super::plugin_dirs`): the user plugins directory (`--plugins`, formerly `--user-dir`,
//! still accepted with a deprecation; default `$HOOKLINE_HOME/plugins`, else
//! `~/.hookline/plugins`) overlaid by
//! `<workspace>/.hookline/plugins` (`--workspace`, default the current directory), pinned by
//! `--order`, workspace plugins only once trusted in the trust file. When neither directory holds
//! a plugin, the bundled in-process demo plugins (and their `word_count` tool) run instead, unless
//! `--no-demo-plugins`; the run says so in one line on stderr. A scenario without its own workspace runs in a fresh
//! `$TMPDIR/hookline-run-<pid>` directory, removed when the run ends.
//!
//! With `--provider openai`, the scenario's user turns go to a real model
//! (`docs/providers.md`) and its scripted model replies are ignored.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use hookline_messages::scenario::Scenario;

use super::plugin_dirs::PluginDirs;
use super::provider::{ProviderArgs, Recorded};
use super::render::{human, report, Report};
use hookline_host::approval::ScriptedOperator;
use hookline_host::demo::{example_plugins, WordCount, DEMO_NAME, DEMO_SCENARIO};
use hookline_host::producers::ResetPolicy;
use hookline_host::provider::{Provider, ScriptedProvider};
use hookline_host::scenario::{first_model, load, parse, play, Played, ScenarioError, Script};
use hookline_host::session::{Clock as _, HostError, ManualClock, SystemClock};
use hookline_host::tools::fence::resolve;
use hookline_host::tools::ToolRegistry;
use hookline_host::{Host, HostBuilder};

/// How long the run waits for the shared state to close after the shutdown's bounded waits.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// Arguments of `hookline run`.
#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The scenario file (JSON). Without it, the bundled demo runs.
    scenario: Option<PathBuf>,
    /// Print one machine-readable JSON report instead of the conversation.
    #[arg(long)]
    json: bool,
    /// Where plugins are found, as for `hookline hooks` (the scenario's workspace is separate).
    #[command(flatten)]
    dirs: PluginDirs,
    /// Never run the bundled demo plugins, even when no plugin is found on disk.
    #[arg(long)]
    no_demo_plugins: bool,
    /// A tools directory: one subdirectory per external tool, each with a `tool.json`. External
    /// tools are hooked and approved like every other tool. None by default.
    #[arg(long, value_name = "DIR")]
    tools: Option<PathBuf>,
    #[command(flatten)]
    provider: ProviderArgs,
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
enum RunError {
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error("{file}: {source}")]
    Host { file: String, source: HostError },
    #[error("'{}' is not a directory", .0.display())]
    NotADirectory(PathBuf),
    #[error(transparent)]
    Model(#[from] super::provider::ModelSetupError),
    #[error(transparent)]
    Config(#[from] super::config::ConfigError),
    #[error("{0}")]
    Options(String),
    #[error("{file}: cannot prepare the workspace {dir}: {source}")]
    Workspace {
        file: String,
        dir: String,
        source: std::io::Error,
    },
}

/// Runs the command.
pub(crate) fn run(args: RunArgs) -> ExitCode {
    let system = actix::System::new();
    match system.block_on(run_async(&args)) {
        Ok(output) => {
            // A closed stdout (`| head`) is not this command's failure.
            let _ = writeln!(std::io::stdout().lock(), "{output}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("hookline run: {error}");
            ExitCode::from(2)
        }
    }
}

async fn run_async(args: &RunArgs) -> Result<String, RunError> {
    if let Some(dir) = args.tools.as_ref().filter(|dir| !dir.is_dir()) {
        return Err(RunError::NotADirectory(dir.clone()));
    }
    let options = args.dirs.load_options().map_err(RunError::Options)?;
    let (builder, demo) =
        plugins_or_demo(&options, args.tools.as_deref(), args.no_demo_plugins).await;
    if demo {
        // Said, so that nobody takes the demo's plugins for their own (issue 46 item 6).
        eprintln!(
            "hookline run: no plugin found in {}; running the bundled demo plugins \
             (--no-demo-plugins runs none).",
            PluginDirs::searched(&options)
        );
    }
    match prepare(args, &builder) {
        Ok(prepared) => play_run(args, builder, prepared).await,
        Err(error) => {
            // Nothing ran: the plugin processes still go down in order.
            builder.shutdown_plugins().await;
            Err(error)
        }
    }
}

/// The builder with the plugins on disk, or the bundled demo plugins when none was found (and
/// `no_demo` is false), the built-in tools and the external tools of `tools`.
pub(super) async fn plugins(
    options: &hookline_host::loading::LoadOptions,
    tools: Option<&Path>,
    no_demo: bool,
) -> HostBuilder {
    plugins_or_demo(options, tools, no_demo).await.0
}

/// [`plugins`], and whether the bundled demo plugins were taken because none was found.
async fn plugins_or_demo(
    options: &hookline_host::loading::LoadOptions,
    tools: Option<&Path>,
    no_demo: bool,
) -> (HostBuilder, bool) {
    let report = hookline_host::loading::load(options).await;
    let demo = report.statuses.is_empty() && !no_demo;
    (plugin_builder(report, tools, demo), demo)
}

/// A builder with the built-in tools, the plugins `report` loaded, the bundled demo plugins and
/// their tool when `demo` is true, and the external tools of `tools`. `hookline serve` builds
/// its gateway the same way (with the demo plugins only when `--demo-plugins` asks for them).
pub(super) fn plugin_builder(
    report: hookline_host::loading::LoadReport,
    tools: Option<&Path>,
    demo: bool,
) -> HostBuilder {
    let mut builder = Host::builder()
        .tools(ToolRegistry::with_builtins())
        .loaded_plugins(report);
    if let Some(dir) = tools {
        builder = builder.external_tools(dir);
    }
    if demo {
        builder
            .plugins(example_plugins())
            .tool(Arc::new(WordCount::new()))
    } else {
        builder
    }
}

/// A checked scenario, its prepared workspace, and the real model if one was asked for.
struct Prepared {
    name: String,
    scenario: Scenario,
    workspace: PathBuf,
    run_dir: PathBuf,
    model: Option<Arc<dyn Provider>>,
}

/// Reads the scenario (checked against the tools `builder`'s host will have) and prepares its
/// workspace.
fn prepare(args: &RunArgs, builder: &HostBuilder) -> Result<Prepared, RunError> {
    let (tools, _) = builder.tool_registry().map_err(|source| RunError::Host {
        file: args
            .scenario
            .as_ref()
            .map_or_else(|| DEMO_NAME.to_owned(), |f| f.display().to_string()),
        source,
    })?;
    let (name, scenario, base) = match &args.scenario {
        Some(file) => (
            file.display().to_string(),
            load(file, &tools)?,
            file.parent().map(Path::to_path_buf),
        ),
        None => (
            DEMO_NAME.to_owned(),
            parse(Path::new(DEMO_NAME), DEMO_SCENARIO, &tools)?,
            None,
        ),
    };
    let config = args.provider.config()?;
    let model = args.provider.build(config.as_ref(), &tools)?;
    let mut scenario = scenario;
    if model.is_some() {
        // A real model answers: the scripted replies are not used (issue 12 item 6).
        for step in &mut scenario.steps {
            step.replies.clear();
        }
    }
    let (run_dir, workspace) = prepare_workspace(&name, &scenario, base)?;
    Ok(Prepared {
        name,
        scenario,
        workspace,
        run_dir,
        model,
    })
}

async fn play_run(
    args: &RunArgs,
    builder: HostBuilder,
    prepared: Prepared,
) -> Result<String, RunError> {
    let Prepared {
        name,
        scenario,
        workspace,
        run_dir,
        model,
    } = prepared;
    let script = Script {
        provider: ScriptedProvider::new(first_model(&scenario).images),
        operator: ScriptedOperator::default(),
        clock: ManualClock::new(SystemClock.now_ms()),
    };
    let model = model.unwrap_or_else(|| Arc::new(script.provider.clone()));
    let (model, sent) = Recorded::new(model);
    let mut builder = builder
        .provider(Arc::new(model))
        .operator(Arc::new(script.operator.clone()))
        .clock(Arc::new(script.clock.clone()))
        .workspace(&workspace)
        .spaces_root(&run_dir)
        .approval_mode(scenario.approval_mode);
    if let Some(policy) = scenario.reset_policy {
        builder = builder.reset_policy(ResetPolicy {
            idle_after: policy.idle_after_ms.map(Duration::from_millis),
            daily_at_hour_utc: policy.daily_at_hour_utc,
        });
    }
    if let Some(limit) = scenario.compact_after {
        builder = builder.compact_after(limit);
    }
    let host_error = |source| RunError::Host {
        file: name.clone(),
        source,
    };
    let mut host = builder.start().map_err(host_error)?;
    let mut played = Played::default();
    let outcome = async {
        host.open().await?;
        play(&mut host, &script, &scenario, &mut played).await
    };
    let interrupted = tokio::select! {
        outcome = outcome => outcome.map(|()| false),
        _ = tokio::signal::ctrl_c() => Ok(true),
    };
    // SPEC P3.13, G2: the one-shot run shuts the host down when it ends, also on Ctrl-C or after
    // a failed step: the bounded `gateway:shutdown` wait, then the active session's end hooks.
    let reason = match interrupted {
        Ok(true) => "interrupted",
        Ok(false) => "run finished",
        Err(_) => "run failed",
    };
    let closed = host.shutdown(reason, None).await;
    played.events.extend(host.take_events());
    let requests = sent
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone();
    let report = report(&name, &workspace, &host, requests, played.events);
    // SPEC G2.3: the shared state closes once the shutdown handlers finish; a handler that never
    // does is not waited for past this bound, and the process exits anyway.
    let closed = closed.map(|closed| closed.wait(CLOSE_WAIT));
    if !closed.map_err(host_error)?.await {
        eprintln!("hookline run: shutdown handlers still running; exiting without waiting.");
    }
    if interrupted.map_err(host_error)? {
        eprintln!("hookline run: interrupted; the session was closed.");
    }
    if scenario.workspace.is_none() {
        // The fresh `hookline-run-<pid>` directory is the run's own: leave nothing behind.
        if let Err(error) = std::fs::remove_dir_all(&run_dir) {
            eprintln!(
                "hookline run: could not remove {}: {error}",
                run_dir.display()
            );
        }
    }
    let report: Report = report.map_err(host_error)?;
    Ok(if args.json {
        serde_json::to_string_pretty(&report).unwrap_or_default()
    } else {
        human(&report)
    })
}

/// The workspace the scenario runs in: its `workspace` (relative to the scenario file), or a
/// fresh directory; the scenario's files are written into it. Returns (spaces root, workspace).
fn prepare_workspace(
    name: &str,
    scenario: &Scenario,
    base: Option<PathBuf>,
) -> Result<(PathBuf, PathBuf), RunError> {
    let (run_dir, workspace) = match &scenario.workspace {
        Some(dir) => {
            let ws = base.unwrap_or_default().join(dir);
            (ws.parent().map(Path::to_path_buf).unwrap_or_default(), ws)
        }
        None => {
            let run_dir = std::env::temp_dir().join(format!("hookline-run-{}", std::process::id()));
            (run_dir.clone(), run_dir.join("workspace"))
        }
    };
    let fail = |dir: &Path, source| RunError::Workspace {
        file: name.into(),
        dir: dir.display().to_string(),
        source,
    };
    std::fs::create_dir_all(&workspace).map_err(|e| fail(&workspace, e))?;
    for (path, content) in &scenario.files {
        let target = resolve(&workspace, path)
            .map_err(|e| {
                fail(
                    &workspace,
                    std::io::Error::other(format!("file '{path}': {e}")),
                )
            })?
            .path;
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| fail(parent, e))?;
        }
        std::fs::write(&target, content).map_err(|e| fail(&target, e))?;
    }
    Ok((run_dir, workspace))
}
