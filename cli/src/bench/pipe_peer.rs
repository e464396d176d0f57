//! The external path's peers (issue 35): the same number of child processes as the run has
//! plugins, each called over a pipe with the same request lines hookline writes, with no hookline
//! on the path. What any out-of-process design pays at least:
//!
//! - [`PipePeer::RawEcho`]: a trivial Rust child (`hookline-bench-echo raw`) that echoes each line
//!   unchanged: the pipe round trip alone (two process wake-ups, no JSON);
//! - [`PipePeer::PythonJson`]: a Python child (`benches/plugins/echo.py json`) that decodes each
//!   line with the standard `json` module and encodes it again: the least a Python plugin pays.
//!
//! One call goes through the children in turn (write the line, read the reply, hand it to the
//! next), on one thread with blocking I/O, as fast as a pipe chain goes. With S sessions in
//! flight, each round writes all S lines to a child in one write and reads the S replies before
//! going on to the next child: every line of a round takes the round's time.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use hookline_messages::hook::HookKind;
use hookline_messages::protocol::{HookRequest, HostMessage};
use hookline_messages::user::UserMessage;

use super::driver::{nanos, new_histogram, Measured};
use super::source::{python3, sibling_binary, PYTHON_ECHO, RUST_ECHO_BIN};
use super::workload::PAYLOAD;

/// Which pipe peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipePeer {
    /// A Rust child echoing each line unchanged.
    RawEcho,
    /// A Python child decoding and encoding each line with `json`.
    PythonJson,
}

impl PipePeer {
    /// The peer's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::RawEcho => "raw pipe echo",
            Self::PythonJson => "python json echo",
        }
    }

    fn command(self) -> Result<Command, String> {
        Ok(match self {
            Self::RawEcho => {
                let mut command = Command::new(sibling_binary(RUST_ECHO_BIN)?);
                command.arg("raw");
                command
            }
            Self::PythonJson => {
                let mut command = Command::new(python3());
                command.args(["-c", PYTHON_ECHO, "json"]);
                command
            }
        })
    }
}

/// One child of the chain.
struct Echo {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Echo {
    fn start(peer: PipePeer) -> Result<Self, String> {
        let mut child = peer
            .command()?
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{}: {e}", peer.name()))?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(format!("{}: a pipe was not opened", peer.name()));
        };
        Ok(Self {
            child,
            input,
            output: BufReader::new(output),
        })
    }

    /// Writes `lines` in one write and reads as many lines back into `replies`.
    fn round_trip(
        &mut self,
        lines: &[u8],
        count: usize,
        replies: &mut Vec<u8>,
    ) -> Result<(), String> {
        let broken = |e: std::io::Error| format!("pipe peer: {e}");
        self.input.write_all(lines).map_err(broken)?;
        self.input.flush().map_err(broken)?;
        replies.clear();
        for _ in 0..count {
            if self.output.read_until(b'\n', replies).map_err(broken)? == 0 {
                return Err("pipe peer: the child closed its output".into());
            }
        }
        Ok(())
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        // Best effort: the child is ours alone and of no use any more.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The request lines of one round: one `on_user_message` call on [`PAYLOAD`] per session, as
/// hookline writes them.
fn request_lines(sessions: usize) -> Vec<u8> {
    let mut lines = Vec::new();
    for index in 0..sessions.max(1) {
        let request = HostMessage::Hook(HookRequest {
            id: index as u64 + 1,
            hook: HookKind::OnUserMessage,
            session: format!("bench-{index}"),
            value: serde_json::to_value(UserMessage::new(PAYLOAD)).unwrap_or_default(),
            traceparent: None,
        });
        // A request of strings and numbers always encodes.
        let _ = serde_json::to_writer(&mut lines, &request);
        lines.push(b'\n');
    }
    lines
}

/// Runs `peer` as a chain of `plugins` children with `sessions` lines in flight, for `duration`,
/// on this thread.
///
/// # Errors
/// A child that would not start or broke its pipe, as text.
pub fn run_pipe_peer(
    peer: PipePeer,
    plugins: usize,
    sessions: usize,
    duration: Duration,
) -> Result<Measured, String> {
    let mut chain = (0..plugins.max(1))
        .map(|_| Echo::start(peer))
        .collect::<Result<Vec<_>, _>>()?;
    let count = sessions.max(1);
    let first = request_lines(count);
    let (mut lines, mut replies) = (Vec::new(), Vec::new());
    let mut round = |lines: &mut Vec<u8>| -> Result<(), String> {
        lines.clone_from(&first);
        for echo in &mut chain {
            echo.round_trip(lines, count, &mut replies)?;
            std::mem::swap(lines, &mut replies);
        }
        Ok(())
    };
    // One warm-up round: the children's first reads (and Python's imports) are not the pipe.
    round(&mut lines)?;
    let mut histogram = new_histogram();
    let mut calls = 0u64;
    let started = Instant::now();
    let deadline = started + duration;
    let mut sent = started;
    while sent < deadline {
        round(&mut lines)?;
        let ended = Instant::now();
        for _ in 0..count {
            // A value beyond the histogram's range is dropped from it, never a failure.
            let _ = histogram.record(nanos(ended - sent));
        }
        calls += count as u64;
        sent = ended;
    }
    Ok(Measured {
        histogram,
        calls,
        shed: 0,
        elapsed: started.elapsed(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_are_hook_requests_one_per_session() {
        let lines = request_lines(3);
        let decoded: Vec<HostMessage> = lines
            .split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
            .filter_map(|line| serde_json::from_slice(line).ok())
            .collect();
        assert_eq!(decoded.len(), 3);
        assert!(matches!(&decoded[2], HostMessage::Hook(h) if h.session == "bench-2" && h.id == 3));
    }
}
