//! A batch's walk through the plugins: the waterfall of SPEC P1.1, P1.2 and R0.3, for many
//! sessions' calls at once.
//!
//! A call that a plugin could not finish inline leaves the batch: it continues on its own from the
//! next plugin once its task ends, so it never holds up the rest of the batch.

use std::sync::Arc;

use actix::Addr;
use futures::future::BoxFuture;
use hookline_messages::hook::Hook;
use hookline_messages::note::{Note, SkipReason};
use hookline_messages::session::SessionId;
use tracing::Instrument;

use super::batch::Pending;
use super::{Completed, PipelineCoordinator, ReplyTo, Step};
use crate::plugin::{CallResult, Dispatch, Invoke, Invoked, Reply};

/// One call's result, ready for the coordinator to answer.
pub(crate) struct Done<H: Dispatch> {
    pub(crate) session: SessionId,
    pub(crate) value: H::Value,
    pub(crate) notes: Vec<Note>,
    pub(crate) changed_by: Vec<Arc<str>>,
    pub(crate) failed: Vec<Arc<str>>,
    pub(crate) reply: ReplyTo<H>,
}

/// Sends the calls through `steps[from..]` in order, one message per plugin, and reports them to
/// the coordinator when they are through. Each call sees its own previous accepted value; a
/// failing or refused plugin is skipped for that call with a note and the value before it stands
/// (SPEC P1.4, P1.5).
pub(crate) fn run_from<H: Dispatch>(
    steps: Arc<[Step]>,
    from: usize,
    mut slots: Vec<Slot<H>>,
    coordinator: Addr<PipelineCoordinator>,
) -> BoxFuture<'static, ()> {
    Box::pin(async move {
        for (index, step) in steps.iter().enumerate().skip(from) {
            let inputs = slots
                .iter()
                .map(|slot| (slot.call.cx.clone(), slot.call.value.clone()))
                .collect();
            // A closed mailbox answers nothing: every call then reads as `Unavailable` below.
            let answers = step
                .addr
                .send(Invoke::<H>::new(inputs))
                .await
                .unwrap_or_default();
            let mut answers = answers.into_iter();
            let mut staying = Vec::with_capacity(slots.len());
            for mut slot in slots {
                match answers
                    .next()
                    .unwrap_or(Invoked::Done(Err(SkipReason::Unavailable)))
                {
                    Invoked::Done(result) => {
                        slot.absorb(step, result);
                        staying.push(slot);
                    }
                    Invoked::Later(task) => {
                        let (steps, coordinator) = (steps.clone(), coordinator.clone());
                        let span = tracing::debug_span!(
                            "hook",
                            hook = H::KIND.wire_name(),
                            session = %slot.call.cx.session_id
                        );
                        let resume = async move {
                            let result = task.await.unwrap_or(Err(SkipReason::Unavailable));
                            slot.absorb(&steps[index], result);
                            run_from(steps.clone(), index + 1, vec![slot], coordinator).await;
                        };
                        actix_rt::spawn(resume.instrument(span));
                    }
                }
            }
            slots = staying;
            if slots.is_empty() {
                return;
            }
        }
        let done = slots.into_iter().map(Slot::done).collect();
        // `do_send` ignores the mailbox bound on purpose: completions are already bounded by
        // `max_pending`, and waiting on a full mailbox here could deadlock.
        coordinator.do_send(Completed::<H> { done });
    })
}

/// One call on its way through the plugins.
pub(crate) struct Slot<H: Dispatch> {
    call: Pending<H>,
    notes: Vec<Note>,
    changed_by: Vec<Arc<str>>,
    failed: Vec<Arc<str>>,
}

impl<H: Dispatch> Slot<H> {
    pub(crate) fn new(call: Pending<H>) -> Self {
        Self {
            call,
            notes: Vec::new(),
            changed_by: Vec::new(),
            failed: Vec::new(),
        }
    }

    /// Takes one plugin's reply: applies an admitted replacement or records why it is skipped.
    fn absorb(&mut self, step: &Step, result: CallResult<H::Value>) {
        let reason = match result {
            Ok(Reply::Keep) => return,
            // SPEC P2.1, P2.4, P2.6: whatever a read-only hook returns changes nothing.
            Ok(Reply::Replace(_)) if H::READ_ONLY => return,
            Ok(Reply::Replace(proposed)) => {
                match H::admit(&self.call.context, &self.call.value, proposed) {
                    Ok(applied) => {
                        if applied.value != self.call.value {
                            self.changed_by.push(step.name.clone());
                            self.call.value = applied.value;
                        }
                        self.notes.extend(applied.notice);
                        return;
                    }
                    Err(refusal) => SkipReason::Refused(refusal),
                }
            }
            Err(reason) => reason,
        };
        metrics::counter!(
            "hookline_hook_skips_total",
            "hook" => <H as Hook>::KIND.wire_name(),
            "reason" => reason.label()
        )
        .increment(1);
        let note = Note::skipped(step.name.as_ref(), H::KIND, reason);
        tracing::warn!(session = %self.call.cx.session_id, "{note}");
        self.notes.push(note);
        // Every skip, noted or not yet: fail-closed guards decide on this list, not on the
        // deduplicated notes.
        self.failed.push(step.name.clone());
    }

    fn done(self) -> Done<H> {
        Done {
            session: self.call.cx.session_id,
            value: self.call.value,
            notes: self.notes,
            changed_by: self.changed_by,
            failed: self.failed,
            reply: self.call.reply,
        }
    }
}
