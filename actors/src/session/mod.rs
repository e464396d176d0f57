//! The session lifecycle actor: owns which session is active and runs the begin and end
//! transitions through the pipeline (SPEC P3.10 to P3.13).
//!
//! Which calls a change takes, and in which order, is the pure function
//! [`hookline_messages::transition::transition`]; this actor only keeps the active session and
//! runs the calls one change at a time. A change's calls finish before the next change's start
//! (the handler is atomic), so an end always precedes the start that follows it. The active
//! session it keeps is what the calls that ran made it: a change whose call the pipeline refused
//! (overloaded, stopped) fails at that call with [`ChangeRefused`], which carries the calls that
//! ran before it (an end that ran is not lost with the error), and the same change sent again
//! runs what had not run yet (never a start skipped, never an end twice).

use actix::{Actor, ActorFutureExt, AtomicResponse, Context, Handler, Message, WrapFuture};
use hookline_messages::hook::{OnSessionEnded, OnSessionStarted};
use hookline_messages::note::Note;
use hookline_messages::session::SessionInfo;
use hookline_messages::transition::{transition, SessionEvent, Transition};

use crate::error::PipelineError;
use crate::pipeline::Pipeline;

/// How many changes may wait in the lifecycle actor's mailbox.
const LIFECYCLE_MAILBOX_CAPACITY: usize = 64;

/// The actor that owns the active session.
pub struct SessionLifecycle {
    pipeline: Pipeline,
    active: Option<SessionInfo>,
}

impl SessionLifecycle {
    /// A lifecycle with no active session, calling hooks through `pipeline`.
    pub fn new(pipeline: Pipeline) -> Self {
        Self {
            pipeline,
            active: None,
        }
    }
}

impl Actor for SessionLifecycle {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(LIFECYCLE_MAILBOX_CAPACITY);
    }
}

/// Changes the active session: runs the end and start hooks [`transition`] says, in order.
#[derive(Debug)]
pub struct ChangeSession(pub SessionEvent);

/// One transition that ran, with the notes its hook call recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct Ran {
    /// The end or start call.
    pub transition: Transition,
    /// Notes new to that session.
    pub notes: Vec<Note>,
}

/// A change the pipeline refused at one of its calls: the calls that ran before that one (an
/// end, when the next session's start was refused), and the refusal.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{error}")]
pub struct ChangeRefused {
    /// The transitions that ran before the refused call, in order.
    pub ran: Vec<Ran>,
    /// Why the pipeline refused the call ([`PipelineError::Overloaded`]: the same change sent
    /// again runs what is left).
    pub error: PipelineError,
}

impl Message for ChangeSession {
    type Result = Result<Vec<Ran>, ChangeRefused>;
}

impl Handler<ChangeSession> for SessionLifecycle {
    type Result = AtomicResponse<Self, Result<Vec<Ran>, ChangeRefused>>;

    fn handle(
        &mut self,
        ChangeSession(event): ChangeSession,
        _: &mut Self::Context,
    ) -> Self::Result {
        let (_, steps) = transition(self.active.as_ref(), event);
        let pipeline = self.pipeline.clone();
        AtomicResponse::new(Box::pin(
            run_transitions(pipeline, steps)
                .into_actor(self)
                .map(|(ran, failed), this, _| {
                    // The active session is what the hooks that ran made it: after a call the
                    // pipeline refused (overloaded, stopped), a retry runs the rest, never skipping
                    // a start or running an end twice.
                    for step in &ran {
                        this.active = match &step.transition {
                            Transition::Ended(_) => None,
                            Transition::Started(info) => Some(info.clone()),
                        };
                    }
                    match failed {
                        Some(error) => Err(ChangeRefused { ran, error }),
                        None => Ok(ran),
                    }
                }),
        ))
    }
}

/// Runs each transition's hook, one after another, up to the first the pipeline refuses: the
/// ones that ran, and that refusal.
async fn run_transitions(
    pipeline: Pipeline,
    steps: Vec<Transition>,
) -> (Vec<Ran>, Option<PipelineError>) {
    let mut ran = Vec::with_capacity(steps.len());
    for step in steps {
        let outcome = match &step {
            Transition::Ended(info) => {
                pipeline
                    .call::<OnSessionEnded>(&info.session_id, info.clone())
                    .await
            }
            Transition::Started(info) => {
                pipeline
                    .call::<OnSessionStarted>(&info.session_id, info.clone())
                    .await
            }
        };
        match outcome {
            Ok(outcome) => ran.push(Ran {
                transition: step,
                notes: outcome.notes,
            }),
            Err(error) => return (ran, Some(error)),
        }
    }
    (ran, None)
}

/// Asks which session is active.
#[derive(Debug)]
pub struct ActiveSession;

impl Message for ActiveSession {
    type Result = Option<SessionInfo>;
}

impl Handler<ActiveSession> for SessionLifecycle {
    type Result = Option<SessionInfo>;

    fn handle(&mut self, _: ActiveSession, _: &mut Self::Context) -> Self::Result {
        self.active.clone()
    }
}
