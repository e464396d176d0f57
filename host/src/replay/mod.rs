//! `hookline replay` (issue 25): run a stored session's turns again against a plugin set, with
//! nothing real, and say what changed.
//!
//! A [`Replayer`] holds the plugins (a started pipeline) and the specs of the tools they run
//! with. [`Replayer::replay`] reads one [`StoredSession`] ([`plan`]), then runs each recorded
//! turn through the ordinary turn engine (`crate::turn`, the order of `docs/turn.md`) over a
//! session held in memory only: the model answers each call with what it answered then, each
//! tool call is answered with its stored result, each approval the operator was asked is
//! answered as it was then ([`recorded`]). Nothing runs for real: no network, no tool process,
//! nothing written to a store or a workspace. It compares what the turns produced with what was
//! stored ([`compare`]): each turn's archive entries (notes among them), each outbound model
//! request, and the stored records at the end.
//!
//! What happened between turns is replayed too, before the turn that followed it (issue 34,
//! `steps.rs`): session start and end hooks, awaited gateway events (their handlers' calls, the
//! bootstrap files they hand on, their notes), side questions and compactions, each compared
//! with what was archived.
//!
//! What a replay cannot reproduce is said, never guessed: a call it cannot answer from the
//! recording is an [`Unmatched`] (and answered with a failure or a refusal). Queued and
//! detached gateway events are not replayed (see `docs/replay.md`).

mod compare;
mod plan;
mod recorded;
mod steps;

use std::sync::Arc;

use hookline_actors::{Pipeline, PipelineError};
use hookline_messages::session::SessionId;
use serde::Serialize;

pub use compare::Difference;
pub use recorded::Unmatched;

use crate::external::ExternalPlugin;
use crate::shared::{shutdown_processes, Guards};
use crate::state::{EventLog, HostError, SessionState};
use crate::store::{SessionFacts, StoredSession};
use crate::tools::ToolRegistry;
use crate::turn::{Engine, RequestTap, StopSignal, TappedChange, Turn};
use compare::{Change, Changes};
use plan::{SessionPlan, TurnPlan};
use recorded::{recorded_tools, RecordedModel, RecordedOperator, Script};

/// The plugins a replay runs stored sessions against; built by
/// [`HostBuilder::start_replay`](crate::HostBuilder::start_replay). Replays of many sessions
/// may run at once on one replayer.
pub struct Replayer {
    pipeline: Pipeline,
    tools: ToolRegistry,
    guards: Guards,
    processes: Vec<Arc<ExternalPlugin>>,
    max_model_calls: usize,
}

/// What replaying one session found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SessionReplay {
    /// The session.
    pub session: SessionId,
    /// The turns replayed.
    pub turns: usize,
    /// Every way the replay differs from the recording.
    pub differences: Vec<Difference>,
    /// The calls the recording could not answer.
    pub unmatched: Vec<Unmatched>,
}

impl SessionReplay {
    /// Whether the replay did not reproduce the recording.
    pub fn differs(&self) -> bool {
        !self.differences.is_empty() || !self.unmatched.is_empty()
    }
}

/// What [`Replayer::new`] takes.
pub(crate) struct ReplayServices {
    pub(crate) pipeline: Pipeline,
    pub(crate) tools: ToolRegistry,
    pub(crate) guards: Guards,
    pub(crate) processes: Vec<Arc<ExternalPlugin>>,
    pub(crate) max_model_calls: usize,
}

impl Replayer {
    pub(crate) fn new(services: ReplayServices) -> Self {
        Self {
            pipeline: services.pipeline,
            tools: services.tools,
            guards: services.guards,
            processes: services.processes,
            max_model_calls: services.max_model_calls,
        }
    }

    /// The number of turns [`Replayer::replay`] would run for `stored`.
    pub fn turns_of(stored: &StoredSession) -> usize {
        plan::turn_count(&stored.archive)
    }

    /// Replays `stored`'s turns and compares them with the recording. Writes nothing.
    ///
    /// # Errors
    /// [`HostError::Pipeline`] when the pipeline refuses a hook call (overloaded, stopped).
    pub async fn replay(&self, stored: &StoredSession) -> Result<SessionReplay, HostError> {
        let plan = SessionPlan::of(stored);
        let script = Script::new(plan.operator.clone());
        let tap = RequestTap::default();
        let mut engine = self.engine(&script, &tap);
        let facts = SessionFacts {
            workspace_root: plan.started.workspace_root.clone(),
            session_id: plan.started.session_id.clone(),
            approval_mode: plan.started.approval_mode,
            model: stored.facts.model.clone(),
            mode: stored.facts.mode,
            owner: stored.facts.owner.clone(),
        };
        let id = facts.session_id.clone();
        let mut session = SessionState::detached(facts, plan.seed.clone());
        let outcome = self
            .replay_turns(&plan, &script, &tap, &mut engine, &mut session)
            .await;
        // The coordinator's per-session state (note dedupe) goes with the replay.
        let _ = self.pipeline.forget_session(&id).await;
        let (mut differences, all_changes) = outcome?;
        differences.extend(compare::records(
            &stored.records,
            session.records(),
            &all_changes,
        ));
        Ok(SessionReplay {
            session: id,
            turns: plan.turn_count(),
            differences,
            unmatched: script.take_unmatched(),
        })
    }

    async fn replay_turns(
        &self,
        plan: &SessionPlan,
        script: &Arc<Script>,
        tap: &RequestTap,
        engine: &mut Engine,
        session: &mut SessionState,
    ) -> Result<(Vec<Difference>, Changes), HostError> {
        let mut differences = Vec::new();
        let mut all_changes = Changes::new();
        let tail = plan.tail.iter().map(|tail| (None, tail));
        let turns = plan.turns.iter().enumerate().map(|(i, t)| (Some(i + 1), t));
        for (number, recorded) in turns.chain(tail) {
            let mut replay = TurnReplay {
                plan,
                script,
                tap,
                engine: &mut *engine,
                session: &mut *session,
            };
            let (found, changes) = self.replay_turn(&mut replay, number, recorded).await?;
            differences.extend(found);
            all_changes.extend(changes);
        }
        Ok((differences, all_changes))
    }

    /// Replays one turn (`None`: what followed the last turn) with what happened before it.
    async fn replay_turn(
        &self,
        replay: &mut TurnReplay<'_>,
        number: Option<usize>,
        recorded: &TurnPlan,
    ) -> Result<(Vec<Difference>, Changes), HostError> {
        let script = replay.script;
        script.begin_turn(number.unwrap_or(replay.plan.turns.len() + 1), recorded);
        if let Some(mode) = recorded.approval_mode {
            replay.session.restore_approval_mode(mode);
        }
        if let Some(text) = &recorded.bootstrap {
            replay.session.restore_bootstrap(text.clone());
        }
        let mut turn = Turn {
            engine: &mut *replay.engine,
            session: &mut *replay.session,
        };
        self.run_steps(&recorded.steps, &mut turn, script).await?;
        // What happened between turns is compared as the recording's is: the entries of the
        // steps and the notes a replay makes again in the same place.
        let mut replayed = plan::compared(turn.session.take_archived(), replay.plan.events);
        if let Some(input) = &recorded.input {
            turn.user_turn(input.clone()).await?;
            replayed.extend(turn.session.take_archived());
        }
        // Nobody reads a replay's events: they go, and the tap says what changed.
        drop(replay.engine.events.take());
        let tapped = std::mem::take(
            &mut *replay
                .tap
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        let changes = changes_of(tapped.changes);
        let handlers = self.pipeline.events().subscribed();
        let mut differences =
            compare::entries(number, &recorded.recorded, &replayed, &changes, handlers);
        let requests = compare::recorded_requests(&recorded.recorded);
        // A recording that predates stored requests has none to compare.
        if !requests.is_empty() {
            differences.extend(compare::requests(
                number,
                &requests,
                &tapped.requests,
                &changes,
            ));
        }
        Ok((differences, changes))
    }

    /// [`Replayer::replay`] on the arbiter of the session's pipeline shard, as a gateway runs
    /// its sessions: replays spread over the shards' threads (both cores), each next to the
    /// coordinator its hook calls go to.
    ///
    /// # Errors
    /// As [`Replayer::replay`]; [`PipelineError::Stopped`] when the shard's arbiter has
    /// stopped.
    pub async fn replay_on_shard(
        self: &Arc<Self>,
        stored: StoredSession,
    ) -> Result<SessionReplay, HostError> {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let replayer = self.clone();
        let arbiter = self.pipeline.arbiter_for(&stored.facts.session_id);
        let spawned = arbiter.spawn(async move {
            let _ = answer.send(replayer.replay(&stored).await);
        });
        if !spawned {
            return Err(PipelineError::Stopped.into());
        }
        answered.await.map_err(|_| PipelineError::Stopped)?
    }

    fn engine(&self, script: &Arc<Script>, tap: &RequestTap) -> Engine {
        Engine {
            pipeline: self.pipeline.clone(),
            tools: Arc::new(recorded_tools(&self.tools, script)),
            provider: Arc::new(RecordedModel(script.clone())),
            operator: Arc::new(RecordedOperator(script.clone())),
            max_model_calls: self.max_model_calls,
            // What each hook handed on reaches the tap, not the events.
            events: EventLog::default(),
            guards: self.guards.clone(),
            stop: Arc::new(StopSignal::default()),
            tap: Some(tap.clone()),
            digests: crate::turn::RequestDigests::default(),
            usage: hookline_messages::model::UsageTotals::default(),
            // Only a detached session's archive reads it.
            clock: Arc::new(crate::shared::SystemClock),
            // Nothing a replay does reaches a store (its session is detached).
            durable_steps: false,
        }
    }

    /// Stops the pipeline and shuts the plugin processes down (each step bounded).
    pub async fn shutdown(&self) {
        self.pipeline.stop().await;
        shutdown_processes(&self.processes).await;
    }
}

/// What replaying one turn of a session works on.
struct TurnReplay<'a> {
    plan: &'a SessionPlan,
    script: &'a Arc<Script>,
    tap: &'a RequestTap,
    engine: &'a mut Engine,
    session: &'a mut SessionState,
}

/// The hooks that changed a value in a turn, from the tap.
fn changes_of(tapped: Vec<TappedChange>) -> Changes {
    tapped
        .into_iter()
        .map(|change| Change {
            hook: change.hook,
            by: change.by,
            after: change.after.unwrap_or_default(),
        })
        .collect()
}
