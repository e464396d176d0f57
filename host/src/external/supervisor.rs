//! Keeps one plugin process alive: a crash fails its calls in flight, then the process is
//! restarted with back-off; after `max_crashes` within `window` the plugin is disabled
//! (SPEC L1: started once and never unloaded, only restarted after a crash).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use hookline_messages::note::SkipReason;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::connection::{Connection, Exit};
use super::faults::FaultLog;
use super::ExternalConfig;
use crate::loading::{LiveState, LiveStatus, StateReason};

/// When a crashed plugin is restarted, and when it is given up on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RestartPolicy {
    /// Crashes within `window` that disable the plugin (default 3).
    pub max_crashes: u32,
    /// The window crashes are counted in (default 5 minutes).
    pub window: Duration,
    /// The wait before the first restart; it doubles with each crash in the window (default 100 ms).
    pub first_backoff: Duration,
    /// The longest wait before a restart (default 5 s).
    pub max_backoff: Duration,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        Self {
            max_crashes: 3,
            window: Duration::from_secs(300),
            first_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
        }
    }
}

impl RestartPolicy {
    /// The skip reason calls get once the plugin is disabled.
    pub fn disabled_reason(&self) -> SkipReason {
        SkipReason::Disabled {
            crashes: self.max_crashes,
            window_secs: self.window.as_secs(),
        }
    }

    fn backoff(&self, crashes: usize) -> Duration {
        let doublings = u32::try_from(crashes.saturating_sub(1))
            .unwrap_or(u32::MAX)
            .min(16);
        self.first_backoff
            .saturating_mul(1 << doublings)
            .min(self.max_backoff)
    }
}

/// Where the plugin's process is.
#[derive(Clone)]
pub(crate) enum State {
    /// Running; calls go to this connection.
    Running(Arc<Connection>),
    /// Crashed and waiting to restart; calls wait (under their deadline).
    Restarting,
    /// Crashed too often; calls are skipped at once.
    Disabled,
    /// Shut down by the host.
    Stopped,
}

/// Shared between the plugin handle and its supervisor task.
pub(crate) struct Control {
    pub(crate) state: watch::Sender<State>,
    pub(crate) stopping: AtomicBool,
    /// Faults pinned on the plugin, kept across restarts.
    pub(crate) faults: Arc<FaultLog>,
    /// What `state` last became, why and since when (`GET /v1/plugins`).
    live: Mutex<LiveStatus>,
}

impl Control {
    /// Moves to `state`, recording why and since when.
    fn set(&self, state: State, live: LiveState, reason: Option<StateReason>) {
        *self.live.lock().unwrap_or_else(PoisonError::into_inner) = LiveStatus {
            state: live,
            reason,
            since: SystemTime::now(),
        };
        self.state.send_replace(state);
    }

    /// The state now, why and since when. A running process whose output has ended is
    /// `exited` until the supervisor restarts or suspends it.
    pub(crate) fn live(&self) -> LiveStatus {
        let ended = matches!(&*self.state.borrow(), State::Running(c) if c.is_closed());
        let live = self
            .live
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if ended && live.state == LiveState::Loaded {
            return LiveStatus {
                state: LiveState::Exited,
                reason: Some(StateReason::Ended),
                since: SystemTime::now(),
            };
        }
        live
    }
}

/// Starts the supervisor task for a process that has just said hello.
pub(crate) fn supervise(
    config: Arc<ExternalConfig>,
    connection: Arc<Connection>,
    lifecycle: JoinHandle<Exit>,
    faults: Arc<FaultLog>,
) -> Arc<Control> {
    let control = Arc::new(Control {
        state: watch::Sender::new(State::Running(connection)),
        stopping: AtomicBool::new(false),
        faults,
        live: Mutex::new(LiveStatus::loaded(SystemTime::now())),
    });
    tokio::spawn(run(config, control.clone(), lifecycle));
    control
}

async fn run(config: Arc<ExternalConfig>, control: Arc<Control>, mut lifecycle: JoinHandle<Exit>) {
    let policy = config.restart;
    let mut crashes: VecDeque<Instant> = VecDeque::new();
    loop {
        // A panicked lifecycle task is as good as a crash.
        if lifecycle.await.unwrap_or(Exit::Crashed) == Exit::Requested {
            control.set(
                State::Stopped,
                LiveState::Exited,
                Some(StateReason::ShutDown),
            );
            return;
        }
        loop {
            let now = Instant::now();
            crashes.push_back(now);
            crashes.retain(|at| now.duration_since(*at) < policy.window);
            let exits = u32::try_from(crashes.len()).unwrap_or(u32::MAX);
            if exits >= policy.max_crashes {
                tracing::warn!(plugin = %config.name, "plugin disabled: {}", policy.disabled_reason());
                let reason = StateReason::ExitedTooOften {
                    failures: exits,
                    window: policy.window,
                };
                control.set(State::Disabled, LiveState::Suspended, Some(reason));
                return;
            }
            tracing::warn!(plugin = %config.name, crashes = crashes.len(), "plugin crashed; restarting");
            let reason = StateReason::Restarting {
                exits,
                limit: policy.max_crashes,
                window: policy.window,
            };
            control.set(State::Restarting, LiveState::Restarting, Some(reason));
            tokio::time::sleep(policy.backoff(crashes.len())).await;
            if control.stopping.load(Ordering::Acquire) {
                control.set(
                    State::Stopped,
                    LiveState::Exited,
                    Some(StateReason::ShutDown),
                );
                return;
            }
            match Connection::start(&config, control.faults.clone()).await {
                Ok((connection, _hello, next)) => {
                    if control.stopping.load(Ordering::Acquire) {
                        connection.request_stop();
                    }
                    control.set(State::Running(connection), LiveState::Loaded, None);
                    lifecycle = next;
                    break;
                }
                Err(error) => tracing::warn!(plugin = %config.name, "restart failed: {error}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        let policy = RestartPolicy::default();
        assert_eq!(policy.backoff(1), Duration::from_millis(100));
        assert_eq!(policy.backoff(2), Duration::from_millis(200));
        assert_eq!(policy.backoff(40), Duration::from_secs(5));
    }
}
