//! `hookline run [SCENARIO] [--json]`: plays a scenario (default: the bundled demo) with the
//! bundled example plugins, then prints the conversation, each hook's effect and the notes in
//! order, or with `--json` one machine-readable report. The session is closed when the run ends,
//! also on Ctrl-C (SPEC P3.13).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use hookline_messages::scenario::Scenario;

use super::render::{human, report, Report};
use crate::approval::ScriptedOperator;
use crate::demo::{example_plugins, example_tools, DEMO_NAME, DEMO_SCENARIO};
use crate::gateway::ResetPolicy;
use crate::provider::ScriptedProvider;
use crate::scenario::{first_model, load, parse, play, Played, ScenarioError, Script};
use crate::session::{Clock as _, Host, HostError, ManualClock, SystemClock};
use crate::tools::fence::resolve;

/// How long the run waits for the shared state to close after the shutdown's bounded waits.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// Arguments of `hookline run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The scenario file (JSON). Without it, the bundled demo runs.
    scenario: Option<PathBuf>,
    /// Print one machine-readable JSON report instead of the conversation.
    #[arg(long)]
    json: bool,
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
enum RunError {
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error("{file}: {source}")]
    Host { file: String, source: HostError },
    #[error("{file}: cannot prepare the workspace {dir}: {source}")]
    Workspace {
        file: String,
        dir: String,
        source: std::io::Error,
    },
}

/// Runs the command.
pub fn run(args: RunArgs) -> ExitCode {
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
    let tools = example_tools().map_err(|e| ScenarioError {
        file: DEMO_NAME.into(),
        problem: e.to_string(),
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
    let (run_dir, workspace) = prepare_workspace(&name, &scenario, base)?;
    let script = Script {
        provider: ScriptedProvider::new(first_model(&scenario).images),
        operator: ScriptedOperator::default(),
        clock: ManualClock::new(SystemClock.now_ms()),
    };
    let provider = &script.provider;
    let mut builder = Host::builder()
        .plugins(example_plugins())
        .tools(tools)
        .provider(Arc::new(script.provider.clone()))
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
        outcome = outcome => { outcome.map_err(host_error)?; false }
        _ = tokio::signal::ctrl_c() => true,
    };
    // SPEC P3.13, G2: the one-shot run shuts the host down when it ends, also on Ctrl-C: the
    // bounded `gateway:shutdown` wait, then the active session's end hooks.
    let reason = if interrupted {
        "interrupted"
    } else {
        "run finished"
    };
    let closed = host.shutdown(reason, None).await.map_err(host_error)?;
    played.events.extend(host.take_events());
    if interrupted {
        eprintln!("hookline run: interrupted; the session was closed.");
    }
    let report: Report =
        report(&name, &workspace, &host, provider, played.events).map_err(host_error)?;
    // SPEC G2.3: the plugin processes close once the shutdown handlers finish; a handler that
    // never does is not waited for past this bound, the process exits anyway.
    if !closed.wait(CLOSE_WAIT).await {
        eprintln!("hookline run: shutdown handlers still running; exiting without waiting.");
    }
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
