//! Errors of the actor layer, and how a caller refused for now asks again ([`Readmit`]).

use std::time::Duration;

/// Why a hook call produced no outcome. A failing plugin is never one of these: it is skipped
/// with a note and the call still completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PipelineError {
    /// The coordinator has stopped.
    #[error("the hook pipeline has stopped")]
    Stopped,
    /// Too many calls are admitted already; retry later.
    #[error("the hook pipeline is overloaded")]
    Overloaded,
}

/// How a caller whose call was refused with [`PipelineError::Overloaded`] paces its next asks:
/// 1 ms, then twice as long after each refusal, up to 64 ms (thousands of callers refused at once
/// then ask a few dozen times a second each, not a thousand). The shutdown's session ends and the
/// host's session changes ask again this way.
#[derive(Clone, Copy, Debug)]
pub struct Readmit {
    wait: Duration,
}

impl Readmit {
    /// The first wait.
    pub const FIRST: Duration = Duration::from_millis(1);
    /// The longest wait.
    pub const AT_MOST: Duration = Duration::from_millis(64);

    /// How long to wait before the next ask; each call doubles the one after it.
    pub fn next_wait(&mut self) -> Duration {
        let wait = self.wait;
        self.wait = (wait * 2).min(Self::AT_MOST);
        wait
    }
}

impl Default for Readmit {
    fn default() -> Self {
        Self { wait: Self::FIRST }
    }
}

/// Why a pipeline could not start.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StartError {
    /// Two plugins share a name.
    #[error("two plugins are named '{0}'")]
    DuplicateName(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readmit_waits_double_from_one_millisecond_up_to_sixty_four() {
        let mut readmit = Readmit::default();
        let waits: Vec<u64> = (0..9)
            .map(|_| readmit.next_wait().as_millis() as u64)
            .collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 64, 64, 64]);
    }
}
