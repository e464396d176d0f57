//! The soak (issue 8): many sessions at once through every hook and raw hook with the bundled
//! demo plugins and tools, for a set time; then a shutdown under that load. It checks that
//! resident memory stays flat after a warm-up, that every queue stays within its bound, that the
//! only notes are the faults the demo injects (once per session), and that the shutdown returns
//! within its budget. `hookline soak` runs it.
//!
//! The sessions go through the [`Pipeline`] directly, not through a [`Host`](crate::Host): a host
//! has one active session at a time (its methods take `&mut self`), so 10,000 sessions at once
//! would be 10,000 hosts, each with its own actors and store, which measures something else.
//! Each session makes the calls a turn makes, in the turn's order, with the same plugins and
//! tools (see `session.rs`); the shutdown is the gateway lifecycle's, the one
//! [`Host::shutdown`](crate::Host::shutdown) uses.

mod error;
mod report;
mod session;
mod watch;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::future::join_all;
use hookline_actors::coordinator::DEFAULT_MAX_PENDING;
use hookline_actors::events::EventBusConfig;
use hookline_actors::lifecycle::{GatewayConfig, Lifecycle, SharedState, ShutdownRequest};
use hookline_actors::{Pipeline, PipelineError};
use hookline_messages::event::GatewayStartupContext;
use hookline_messages::hook::HookKind;
use hookline_messages::note::{Note, SkipReason};
use hookline_messages::session::{ApprovalMode, SessionId, SessionInfo};
use tokio::sync::Semaphore;

pub use error::SoakError;
pub use report::{
    Check, Memory, NoteCount, ShutdownMeasured, SoakReport, MAX_MEMORY_GROWTH_PERCENT,
    SHUTDOWN_SLACK_MS,
};
pub use watch::{resident_bytes, QueuePeak, QueuePeaks};

use crate::demo::{example_plugins, example_tools};
use crate::tools::ToolContext;
use session::{run_session, Rig, SessionRun, NOTES_FILE};

/// Told about progress while the load runs: the same trait `hookline bench` uses.
pub use crate::bench::Progress;

/// Tool runs at once (see [`Rig`]).
const TOOL_RUNS: usize = 8;

/// How long the soak waits for the shared state to close after the shutdown returned.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// What a soak runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SoakConfig {
    /// Sessions in flight at once (default 10,000).
    pub sessions: usize,
    /// How long the load runs before the shutdown (default 10 s).
    pub duration: Duration,
    /// The coordinator's bound on admitted calls.
    pub max_pending: usize,
    /// The event bus queue's capacity; `None`: one place per session. Every session enqueues one
    /// `message:received` at about the same moment (the coordinator batches their calls, so
    /// sessions advance together), so a smaller queue drops events by design (SPEC G3.1), and
    /// the drop note fails the notes check.
    pub event_queue: Option<usize>,
    /// The lifecycle's bounds; the shutdown must return within `shutdown_wait` +
    /// `session_end_budget`.
    pub gateway: GatewayConfig,
}

impl Default for SoakConfig {
    fn default() -> Self {
        Self {
            sessions: 10_000,
            duration: Duration::from_secs(10),
            max_pending: DEFAULT_MAX_PENDING,
            event_queue: None,
            gateway: GatewayConfig::default(),
        }
    }
}

/// A slot is warm once it has finished this many sessions.
const WARM_SESSIONS: u64 = 2;

impl SoakConfig {
    /// The warm-up: the first half of the run. Under 10,000 sessions the queues' high-water
    /// marks (and the allocator's pools with them) keep rising for several seconds; measured
    /// over 40 s, resident memory grows +2.9 % after the first 8 s (`docs/reliability.md`).
    /// The report also says whether every session slot had finished [`WARM_SESSIONS`] sessions
    /// by then.
    pub fn warmup(&self) -> Duration {
        self.duration / 2
    }
}

/// The notes the demo plugins cause in every session, in the order a turn meets them: `flaky`'s
/// `on_user_message` fails, and `guard` adds an image to a text-only turn's tool result.
pub fn injected_notes() -> Vec<Note> {
    vec![
        Note::skipped(
            "flaky",
            HookKind::OnUserMessage,
            SkipReason::failed("flaky is offline."),
        ),
        Note::PluginImagesIgnored,
    ]
}

/// Runs the soak on the current actix system and reports what it measured and checked.
///
/// # Errors
/// [`SoakError`] when the soak cannot start (its workspace, the demo's tools or plugins). A
/// failed check is not an error: it is in the report.
pub async fn run_soak(
    config: &SoakConfig,
    progress: &dyn Progress,
) -> Result<SoakReport, SoakError> {
    let workspace = tempfile::tempdir().map_err(SoakError::Workspace)?;
    std::fs::write(workspace.path().join(NOTES_FILE), "three little words")
        .map_err(SoakError::Workspace)?;
    // One shard: the sessions, the clock and the shutdown share the one arbiter the soak runs
    // on, as the issue 8 bounds were set for. With a second shard the load's replies keep this
    // thread busy and the shutdown's timers fire late (its budget measured 3x over).
    let pipeline = Pipeline::builder()
        .plugins(example_plugins())
        .shards(1)
        .max_pending(config.max_pending)
        .event_bus(EventBusConfig {
            queue_capacity: config.event_queue.unwrap_or(config.sessions).max(1),
            ..EventBusConfig::default()
        })
        .start()?;
    let closed = Arc::new(SoakState::default());
    let gateway = Lifecycle::start(pipeline.clone(), closed.clone(), config.gateway);
    gateway
        .startup(GatewayStartupContext {
            cfg: Default::default(),
            deps: serde_json::Value::Null,
            workspace_dir: workspace.path().display().to_string(),
        })
        .await?;
    let rig = Rig {
        pipeline: pipeline.clone(),
        tools: Arc::new(example_tools()?),
        tool_context: ToolContext {
            workspace_root: workspace.path().to_path_buf(),
            // Each session's own id and mode replace these when its tool runs.
            session_id: "soak".into(),
            approval_mode: Default::default(),
        },
        tool_runs: Semaphore::new(TOOL_RUNS),
    };
    let load = Load::default();
    let sampling = Rc::new(Cell::new(false));
    let sampler = actix_rt::spawn(watch::sample_queues(pipeline.clone(), sampling.clone()));
    let started = Instant::now();
    let workers = join_all((0..config.sessions.max(1)).map(|slot| load.worker(&rig, slot)));
    let (_, (memory, shutdown)) =
        futures::join!(workers, load.clock(config, &gateway, &closed, progress));
    let elapsed = started.elapsed();
    sampling.set(true);
    let queues = sampler.await.unwrap_or_default();
    let bus_notes = pipeline.events().take_notes().await;
    let events_dropped = pipeline.events().dropped_total();
    let load_notes = pipeline.load_notes().iter().map(Note::text).collect();
    pipeline.stop().await;
    let tally = load.tally.into_inner();
    let mut report = SoakReport {
        driver: "pipeline",
        concurrent_sessions: config.sessions.max(1),
        duration_secs: config.duration.as_secs_f64(),
        sessions_completed: tally.sessions,
        hook_calls: tally.hook_calls,
        #[allow(clippy::cast_precision_loss)]
        hook_calls_per_sec: tally.hook_calls as f64 / elapsed.as_secs_f64().max(1e-9),
        pipeline_errors: tally.errors,
        memory,
        queues,
        events_dropped,
        load_notes,
        sessions_with_other_notes: tally.sessions_with_other_notes,
        notes: tally.note_counts(bus_notes),
        shutdown,
        checks: Vec::new(),
    };
    report.judge();
    Ok(report)
}

/// What the sessions share: which session each slot runs now, the stop flag, and the tally.
#[derive(Default)]
struct Load {
    /// Set once the shutdown under load has returned; each slot then finishes its session.
    stop: Cell<bool>,
    /// Slots that have finished [`WARM_SESSIONS`] sessions.
    warm_slots: Cell<usize>,
    active: RefCell<HashMap<usize, SessionInfo>>,
    tally: RefCell<Tally>,
}

impl Load {
    /// One session slot: sessions back to back, each with a new id, until the stop.
    async fn worker(&self, rig: &Rig, slot: usize) {
        let workspace_root = rig.tool_context.workspace_root.display().to_string();
        let mut generation = 0u64;
        while !self.stop.get() {
            let info = SessionInfo {
                workspace_root: workspace_root.clone(),
                session_id: SessionId::new(format!("soak-{slot}-{generation}")),
                approval_mode: ApprovalMode::default(),
            };
            self.active.borrow_mut().insert(slot, info.clone());
            // A session whose calls all answer at once never returns to the executor; yield
            // (as an active session) so the clock and the shutdown's timers keep their time.
            tokio::task::yield_now().await;
            let run = run_session(rig, &info).await;
            self.active.borrow_mut().remove(&slot);
            self.tally.borrow_mut().record(run);
            generation += 1;
            if generation == WARM_SESSIONS {
                self.warm_slots.set(self.warm_slots.get() + 1);
            }
        }
    }

    /// Times the load: memory after the warm-up and at the end, then the shutdown under load.
    async fn clock(
        &self,
        config: &SoakConfig,
        gateway: &Lifecycle,
        state: &SoakState,
        progress: &dyn Progress,
    ) -> (Memory, ShutdownMeasured) {
        let started = Instant::now();
        let end = started + config.duration;
        let mut memory = Memory::default();
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        while Instant::now() < end {
            tick.tick().await;
            let elapsed = started.elapsed();
            let all_warm = self.warm_slots.get() >= config.sessions.max(1);
            // Sessions advance together (the coordinator batches their calls), so memory swings
            // with the wave: compare the highest sample of the warm-up's last tenth of the run
            // with the highest sample of the run's last tenth.
            let window = config.duration / 10;
            // A tick the load delayed past the warm-up window still takes the warm-up sample.
            let warm_sample_due = elapsed <= config.warmup() || memory.after_warmup_bytes.is_none();
            if elapsed + window >= config.warmup() && warm_sample_due {
                memory.after_warmup_bytes = max_sample(memory.after_warmup_bytes);
                memory.warmup_ms = millis(config.warmup());
                memory.warmup_complete = all_warm;
            } else if elapsed + window >= config.duration {
                memory.at_end_bytes = max_sample(memory.at_end_bytes);
            }
            progress.tick(elapsed.min(config.duration), config.duration);
        }
        memory.at_end_bytes = max_sample(memory.at_end_bytes);
        let shutdown = self.shut_down(config, gateway, state).await;
        self.stop.set(true);
        (memory, shutdown)
    }

    /// The gateway shutdown while every slot is mid-session: the active sessions get their
    /// session-end hooks from it, under its budget.
    async fn shut_down(
        &self,
        config: &SoakConfig,
        gateway: &Lifecycle,
        state: &SoakState,
    ) -> ShutdownMeasured {
        let active_sessions: Vec<SessionInfo> = self.active.borrow().values().cloned().collect();
        let budget = config.gateway.shutdown_wait + config.gateway.session_end_budget;
        let mut measured = ShutdownMeasured {
            active_sessions: active_sessions.len(),
            budget_ms: millis(budget),
            ..ShutdownMeasured::default()
        };
        let started = Instant::now();
        let request = ShutdownRequest {
            reason: "soak".into(),
            restart_expected_ms: None,
            active_sessions,
        };
        let result = gateway.shutdown(request).await;
        measured.elapsed_ms = millis(started.elapsed());
        match result {
            Ok(report) => {
                measured.notes = report.notes.iter().map(Note::text).collect();
                measured.shared_state_closed =
                    report.closed.wait(CLOSE_WAIT).await && state.closed.load(Ordering::Acquire);
            }
            Err(error) => measured.error = Some(error.to_string()),
        }
        measured
    }
}

/// Counts over every finished session.
#[derive(Default)]
struct Tally {
    sessions: u64,
    hook_calls: u64,
    errors: u64,
    notes: HashMap<Note, u64>,
    sessions_with_other_notes: u64,
}

impl Tally {
    fn record(&mut self, run: Result<SessionRun, PipelineError>) {
        let run = match run {
            Ok(run) => run,
            Err(_) => {
                self.errors += 1;
                return;
            }
        };
        self.sessions += 1;
        self.hook_calls += run.hook_calls;
        if run.notes != injected_notes() {
            self.sessions_with_other_notes += 1;
        }
        for note in run.notes {
            *self.notes.entry(note).or_default() += 1;
        }
    }

    /// Every note by kind and text, with the bus's own notes (a drop note would be one).
    fn note_counts(mut self, bus_notes: Vec<Note>) -> Vec<NoteCount> {
        for note in bus_notes {
            *self.notes.entry(note).or_default() += 1;
        }
        let injected = injected_notes();
        let mut counts: BTreeMap<(String, String), NoteCount> = BTreeMap::new();
        for (note, count) in self.notes {
            let kind = note_kind(&note);
            let text = note.text();
            counts.insert(
                (kind.clone(), text.clone()),
                NoteCount {
                    kind,
                    text,
                    count,
                    injected: injected.contains(&note),
                },
            );
        }
        counts.into_values().collect()
    }
}

/// A note's `kind` tag, as the store writes it.
fn note_kind(note: &Note) -> String {
    serde_json::to_value(note)
        .ok()
        .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(String::from))
        .unwrap_or_else(|| "unknown".into())
}

/// The soak's shared state: it only records that the lifecycle closed it (SPEC G2.3).
#[derive(Default)]
struct SoakState {
    closed: AtomicBool,
}

#[async_trait]
impl SharedState for SoakState {
    async fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }
}

/// The higher of `so_far` and the resident memory now.
fn max_sample(so_far: Option<u64>) -> Option<u64> {
    match (so_far, resident_bytes()) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
