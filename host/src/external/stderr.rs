//! A plugin's stderr: its logs, forwarded to tracing (target `hookline::plugin`, level info),
//! and, when [`ExternalConfig::echo_stderr`](super::ExternalConfig::echo_stderr) is set (the CLI's
//! `--verbose`), also written to the host's stderr as `[<plugin>] <line>`; bounded in line length
//! and in rate, and always drained so a chatty plugin never blocks on a full pipe.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::BufReader;
use tokio::process::ChildStderr;
use tokio::time::Instant;

use super::codec::{read_line, Line};

/// Longest stderr line forwarded; longer ones are replaced by a marker.
const STDERR_LINE_CAP: usize = 4096;
/// At most this many lines are forwarded per window; the rest are counted and dropped.
const LINES_PER_WINDOW: u32 = 100;
const WINDOW: Duration = Duration::from_secs(1);

/// Forwards `stderr` line by line until it closes.
pub(crate) async fn forward(plugin: Arc<str>, stderr: ChildStderr, echo: bool) {
    let mut reader = BufReader::new(stderr);
    let mut limit = RateLimit::new(Instant::now());
    loop {
        let text = match read_line(&mut reader, STDERR_LINE_CAP).await {
            Line::End => break,
            Line::TooLong => "[a stderr line over 4096 bytes was dropped]".to_owned(),
            Line::Text(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        };
        match limit.admit(Instant::now()) {
            Admit::Yes { dropped_before: 0 } => {}
            Admit::Yes { dropped_before } => {
                tracing::warn!(plugin = %plugin, "dropped {dropped_before} stderr lines (rate limit)");
            }
            Admit::No => continue,
        }
        tracing::info!(target: "hookline::plugin", plugin = %plugin, "{text}");
        if echo {
            eprintln!("[{plugin}] {text}");
        }
    }
}

enum Admit {
    Yes { dropped_before: u64 },
    No,
}

/// A fixed-window line budget.
struct RateLimit {
    window_start: Instant,
    used: u32,
    dropped: u64,
}

impl RateLimit {
    fn new(now: Instant) -> Self {
        Self {
            window_start: now,
            used: 0,
            dropped: 0,
        }
    }

    fn admit(&mut self, now: Instant) -> Admit {
        if now.duration_since(self.window_start) >= WINDOW {
            self.window_start = now;
            self.used = 0;
        }
        if self.used >= LINES_PER_WINDOW {
            self.dropped += 1;
            return Admit::No;
        }
        self.used += 1;
        Admit::Yes {
            dropped_before: std::mem::take(&mut self.dropped),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_is_cut_to_the_window_budget_and_the_drop_is_reported() {
        let start = Instant::now();
        let mut limit = RateLimit::new(start);
        let admitted = (0..1000)
            .filter(|_| matches!(limit.admit(start), Admit::Yes { .. }))
            .count();
        assert_eq!(admitted, LINES_PER_WINDOW as usize);
        match limit.admit(start + WINDOW) {
            Admit::Yes { dropped_before } => assert_eq!(dropped_before, 900),
            Admit::No => panic!("a new window admits again"),
        }
    }
}
