//! Running one external tool call: spawn, feed stdin, read bounded stdout, under a deadline.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, Command};

use super::manifest::Manifest;
use crate::tools::{ToolContext, ToolOutput};

/// The host environment variables an external tool inherits; every other one (API keys,
/// tokens) is withheld.
pub const ALLOWED_ENV: &[&str] = &["PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR"];
/// The most stdout an external tool may write; past it the tool is killed.
pub const MAX_STDOUT_BYTES: usize = 1024 * 1024;
/// How much stderr is kept for the failure text; the rest is read and dropped.
pub const MAX_STDERR_BYTES: usize = 4 * 1024;
/// How long to wait for a killed process to be reaped.
const REAP_DEADLINE: Duration = Duration::from_secs(5);

/// The answer an external tool writes on stdout.
#[derive(Deserialize)]
struct Reply {
    text: String,
    success: bool,
}

/// What the conversation with the process produced, before the deadline.
struct Finished {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

/// Why the conversation stopped early.
enum Stopped {
    Flood,
    Io(std::io::Error),
}

/// Runs one call of the tool described by `manifest`.
pub(crate) async fn run(
    manifest: &Manifest,
    cx: &ToolContext,
    arguments: &serde_json::Value,
) -> ToolOutput {
    let name = &manifest.name;
    let mut child = match command(manifest, cx).spawn() {
        Ok(child) => child,
        Err(e) => {
            return ToolOutput::failure(format!("External tool '{name}' could not start: {e}."))
        }
    };
    let input = arguments.to_string().into_bytes();
    match tokio::time::timeout(manifest.timeout, converse(&mut child, input)).await {
        Ok(Ok(finished)) => answer(name, finished),
        Ok(Err(Stopped::Flood)) => {
            kill(&mut child).await;
            ToolOutput::failure(format!(
                "External tool '{name}' wrote more than {MAX_STDOUT_BYTES} bytes of output and was stopped."
            ))
        }
        Ok(Err(Stopped::Io(e))) => {
            kill(&mut child).await;
            ToolOutput::failure(format!(
                "External tool '{name}' could not be talked to: {e}."
            ))
        }
        Err(_) => {
            kill(&mut child).await;
            ToolOutput::failure(format!(
                "External tool '{name}' did not answer within {} and was stopped.",
                hookline_messages::note::DurationText::of(manifest.timeout)
            ))
        }
    }
}

fn command(manifest: &Manifest, cx: &ToolContext) -> Command {
    let mut command = Command::new(&manifest.command);
    command
        .args(&manifest.args)
        .current_dir(&manifest.dir)
        .env_clear()
        .envs(
            ALLOWED_ENV
                .iter()
                .filter_map(|k| std::env::var_os(k).map(|v| (*k, v))),
        )
        .env("HOOKLINE_WORKSPACE_ROOT", &cx.workspace_root)
        .env("HOOKLINE_SESSION_ID", cx.session_id.as_str())
        .env("HOOKLINE_APPROVAL_MODE", cx.approval_mode.as_str())
        .env("HOOKLINE_TOOL_NAME", &manifest.name)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    // Its own process group, so a timeout kills whatever the tool started too.
    #[cfg(unix)]
    command.process_group(0);
    command
}

/// Writes the arguments, reads stdout (capped) and stderr (kept up to a cap, drained past it)
/// at the same time, then waits for the exit.
async fn converse(child: &mut Child, input: Vec<u8>) -> Result<Finished, Stopped> {
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let (Some(stdin), Some(stdout), Some(stderr)) = (stdin, stdout, stderr) else {
        return Err(Stopped::Io(std::io::Error::other(
            "the process's pipes are missing",
        )));
    };
    let (_, stdout, stderr) = tokio::try_join!(feed(stdin, input), read_capped(stdout), async {
        Ok(read_kept(stderr).await)
    },)?;
    let status = child.wait().await.map_err(Stopped::Io)?;
    Ok(Finished {
        status,
        stdout,
        stderr,
    })
}

async fn feed(mut stdin: ChildStdin, input: Vec<u8>) -> Result<(), Stopped> {
    match stdin.write_all(&input).await {
        // A tool that does not read its arguments closes stdin early; that is its business.
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Stopped::Io(e)),
        _ => Ok(()),
    }
}

async fn read_capped(stdout: impl AsyncRead + Unpin) -> Result<Vec<u8>, Stopped> {
    let mut bytes = Vec::new();
    let limit = MAX_STDOUT_BYTES as u64 + 1;
    stdout
        .take(limit)
        .read_to_end(&mut bytes)
        .await
        .map_err(Stopped::Io)?;
    if bytes.len() > MAX_STDOUT_BYTES {
        return Err(Stopped::Flood);
    }
    Ok(bytes)
}

async fn read_kept(mut stderr: impl AsyncRead + Unpin) -> Vec<u8> {
    let (mut kept, mut chunk) = (Vec::new(), [0u8; 8192]);
    // Keep draining past the cap so the tool never blocks on a full stderr pipe.
    while let Ok(n @ 1..) = stderr.read(&mut chunk).await {
        let room = MAX_STDERR_BYTES.saturating_sub(kept.len());
        kept.extend_from_slice(&chunk[..n.min(room)]);
    }
    kept
}

/// Turns a finished process into the tool's answer.
fn answer(name: &str, finished: Finished) -> ToolOutput {
    let reply = serde_json::from_slice::<Reply>(&finished.stdout);
    match (finished.status.success(), reply) {
        (true, Ok(reply)) => ToolOutput { success: reply.success, ..ToolOutput::success(reply.text) },
        (true, Err(e)) => ToolOutput::failure(format!(
            "External tool '{name}' answered with output that is not {{\"text\": string, \"success\": bool}}: {e}."
        )),
        (false, Ok(reply)) => ToolOutput::failure(reply.text),
        (false, Err(_)) => {
            let stderr = String::from_utf8_lossy(&finished.stderr);
            ToolOutput::failure(format!(
                "External tool '{name}' failed ({}): {}",
                finished.status,
                stderr.trim()
            ))
        }
    }
}

/// Kills the tool's whole process group, then reaps it (bounded).
async fn kill(child: &mut Child) {
    #[cfg(unix)]
    if let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let _ = child.start_kill();
    let _ = tokio::time::timeout(REAP_DEADLINE, child.wait()).await;
}
