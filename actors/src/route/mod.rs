//! The messages the coordinator and the plugin actors exchange, in a module of their own that
//! both import (as actix's examples keep two actors' shared messages apart from either actor):
//! the call itself ([`Job`]), one hook's way through the plugins ([`Route`]), a batch on that way
//! ([`Relay`]), a batch's report back to its coordinator ([`Completed`]), and the caller's
//! [`Outcome`].
//!
//! A route names its plugin actors and its coordinator by [`Recipient`]s of these messages, so
//! this module imports neither actor: the coordinator (which builds routes) and the plugin actor
//! (which handles [`Relay`]) both sit above it. A plugin actor that holds the next one's address
//! itself hands a batch on with [`forward_to`] (the route's `Arc` moved, not counted, per hop).

mod answer;
mod draft;
mod job;
mod steps;

use std::sync::Arc;

use actix::dev::SendError;
use actix::{Message, Recipient};
use hookline_messages::hook::Hook;
use hookline_messages::note::SkipReason;

pub use answer::Submitted;
pub(crate) use answer::{Gather, ReplyTo, Slot};
pub use draft::Draft;
pub use job::Outcome;
pub(crate) use job::{Job, NO_SLOT};
pub use steps::Steps;

/// One hook's way through the plugins: a recipient per plugin actor that implements it, in load
/// order, their names (indexed like the steps), and the coordinator told when a batch is through.
pub(crate) struct Route<H: Hook> {
    pub(crate) steps: Box<[Recipient<Relay<H>>]>,
    pub(crate) names: Arc<[Arc<str>]>,
    pub(crate) coordinator: Recipient<Completed<H>>,
    /// The shard's number ([`crate::coordinator::Admission`]'s uid), to find what the shard
    /// shares on its thread when the batch is through.
    pub(crate) shard: u64,
}

/// Carries a batch of hook `H` calls (usually one per session) to the plugin at step `at` of the
/// hook's route; that plugin hands it on to the next.
///
/// The value of each call moves with it: plugins see it by reference and a replacement that the
/// hook's rule admits takes its place.
pub(crate) struct Relay<H: Hook> {
    pub(crate) jobs: Vec<Job<H>>,
    /// The batch's spare buffer for in-place hooks that keep the value before a write (see
    /// [`Draft`]): one per batch, reused by every plugin, not one per call.
    pub(crate) spare: Option<H::Value>,
    pub(crate) route: Arc<Route<H>>,
    pub(crate) at: usize,
}

impl<H: Hook> Message for Relay<H> {
    type Result = ();
}

/// A batch's report from the last plugin: the sessions (by slot) whose calls it answered, and the
/// calls with notes, which the coordinator answers (it keeps each session's seen notes).
pub(crate) struct Completed<H: Hook> {
    pub(crate) done: Vec<u32>,
    pub(crate) noted: Vec<Job<H>>,
    pub(crate) route: Arc<Route<H>>,
}

impl<H: Hook> Message for Completed<H> {
    type Result = ();
}

/// Hands `jobs` to the plugin at step `next` of their route, or finishes them after the last.
/// A plugin actor that has stopped is skipped for each call with a note, like a failing plugin.
pub(crate) fn forward<H: Hook>(
    jobs: Vec<Job<H>>,
    spare: Option<H::Value>,
    route: Arc<Route<H>>,
    next: usize,
) {
    if jobs.is_empty() {
        return;
    }
    let Some(step) = route.steps.get(next) else {
        return finish_batch(jobs, route);
    };
    let relay = Relay {
        jobs,
        spare,
        route: route.clone(),
        at: next,
    };
    match step.try_send(relay) {
        Ok(()) => {}
        // The batches in flight are bounded by admission (`max_pending`), so a full mailbox may
        // take one more; waiting here could deadlock two actors that feed each other.
        Err(SendError::Full(relay)) => step.do_send(relay),
        Err(SendError::Closed(mut relay)) => {
            for job in &mut relay.jobs {
                job.absorb(next, &route.names[next], Err(SkipReason::Unavailable));
            }
            forward(relay.jobs, relay.spare, route, next + 1);
        }
    }
}

/// Hands `jobs` to the plugin at step `next` of their route when the caller (the plugin actor at
/// step `next - 1`) holds that plugin's address itself: the route's `Arc` moves on with the batch
/// instead of being counted in and out at every hop, and the send is a direct one (no
/// `Recipient` indirection). Everything else (no call left, after the last step, that actor
/// stopped) is [`forward`]'s.
pub(crate) fn forward_to<H: Hook, A>(
    addr: &actix::Addr<A>,
    jobs: Vec<Job<H>>,
    spare: Option<H::Value>,
    route: Arc<Route<H>>,
    next: usize,
) where
    A: actix::Handler<Relay<H>>,
    A::Context: actix::dev::ToEnvelope<A, Relay<H>>,
{
    if jobs.is_empty() || next >= route.steps.len() {
        return forward(jobs, spare, route, next);
    }
    let relay = Relay {
        jobs,
        spare,
        route,
        at: next,
    };
    match addr.try_send(relay) {
        Ok(()) => {}
        // As in `forward`: admission bounds the batches in flight, not the mailbox.
        Err(SendError::Full(relay)) => addr.do_send(relay),
        Err(SendError::Closed(relay)) => forward(relay.jobs, relay.spare, relay.route, next),
    }
}

/// After the last plugin: calls without notes are answered here at once; calls with notes go to
/// the coordinator, which keeps each session's seen notes (SPEC P1.4). On the shard's thread (the
/// plugin actors run there) a quiet call's session with nothing queued is freed here before its
/// caller is answered, so a caller there finds it free and may admit its next call in place; the
/// rest are freed by the coordinator's report, queued right after the answers (a caller that is
/// quicker waits in its session's queue for it, in order). No report when nothing is left to it.
fn finish_batch<H: Hook>(mut jobs: Vec<Job<H>>, route: Arc<Route<H>>) {
    // Most batches have no notes at all: no second `Vec` then.
    let noted = if jobs.iter().all(|job| job.notes.is_empty()) {
        Vec::new()
    } else {
        let (quiet, noted) = jobs.into_iter().partition(|job| job.notes.is_empty());
        jobs = quiet;
        noted
    };
    // On the shard's thread the sessions with nothing queued are freed here, before the answers,
    // so a caller there finds its session free for its next call (item 4 of issue 23); the
    // others' slots are left to the coordinator (no vector when there are none).
    let done = crate::coordinator::local::finish_in_place::<H>(route.shard, &jobs);
    answer::answer_all(jobs, &route.names);
    if done.is_empty() && noted.is_empty() {
        return;
    }
    route.coordinator.do_send(Completed::<H> {
        done,
        noted,
        route: route.clone(),
    });
}
