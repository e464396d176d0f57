//! The runtime's cost per open idle session: resident memory (VmRSS) before and after opening
//! many pipeline sessions, each left with the coordinator's per-session state (its call queue
//! and the notes it has seen) after one call.

use std::fmt;

use futures::future::join_all;
use hookline_actors::Pipeline;
use hookline_messages::session::SessionId;
use serde::Serialize;

use super::hook::BenchHook;
use super::workload::appender_plugins;

/// Sessions opened at once while filling (each makes one call, then stays idle).
const WAVE: usize = 1000;

/// What the memory measurement found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryReport {
    /// Idle sessions opened.
    pub sessions: usize,
    /// Plugins in the pipeline.
    pub plugins: usize,
    /// Resident memory with the pipeline started and one session used, bytes.
    pub rss_before: u64,
    /// Resident memory with every session open, bytes.
    pub rss_after: u64,
    /// (after - before) / sessions.
    pub bytes_per_session: f64,
}

/// This process's resident memory (VmRSS from `/proc/self/status`), in bytes.
///
/// # Errors
/// When `/proc/self/status` cannot be read or has no `VmRSS` line (not Linux).
pub fn resident_bytes() -> Result<u64, String> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| format!("cannot read /proc/self/status: {e}"))?;
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| {
            rest.trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map(|kib| kib * 1024)
        .ok_or_else(|| "no VmRSS in /proc/self/status".into())
}

/// Opens `sessions` sessions on a pipeline of `plugins` appenders (one `on_user_message` call
/// each, then idle) and reports the resident memory they cost.
///
/// # Errors
/// A pipeline that would not start or a failed call, or no VmRSS, as text.
pub async fn idle_sessions(sessions: usize, plugins: usize) -> Result<MemoryReport, String> {
    let pipeline = Pipeline::builder()
        .plugins(appender_plugins(plugins))
        .start()
        .map_err(|e| e.to_string())?;
    let hook = BenchHook::OnUserMessage;
    let warm = SessionId::new("warm-up");
    hook.call(&pipeline, &warm)
        .await
        .map_err(|e| e.to_string())?;
    let rss_before = resident_bytes()?;
    for wave in (0..sessions).step_by(WAVE) {
        let ids: Vec<SessionId> = (wave..(wave + WAVE).min(sessions))
            .map(|i| SessionId::new(format!("idle-{i:06}")))
            .collect();
        let calls = join_all(ids.iter().map(|id| hook.call(&pipeline, id))).await;
        calls
            .into_iter()
            .collect::<Result<Vec<()>, _>>()
            .map_err(|e| e.to_string())?;
    }
    let rss_after = resident_bytes()?;
    pipeline.stop().await;
    Ok(MemoryReport {
        sessions,
        plugins,
        rss_before,
        rss_after,
        bytes_per_session: rss_after.saturating_sub(rss_before) as f64 / sessions.max(1) as f64,
    })
}

impl fmt::Display for MemoryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
        writeln!(
            f,
            "{} on a pipeline of {}",
            super::counted(self.sessions as u64, "idle session"),
            super::counted(self.plugins as u64, "plugin")
        )?;
        writeln!(f, "resident before  {:.1} MiB", mib(self.rss_before))?;
        writeln!(f, "resident after   {:.1} MiB", mib(self.rss_after))?;
        write!(f, "per session      {:.0} bytes", self.bytes_per_session)
    }
}
