//! [`Job`]: one hook call, the same value from admission to answer (the caller's session, the
//! rule's facts, the value moving through the plugins, the notes, and where the answer goes),
//! and the [`Outcome`] it ends in.

use std::sync::Arc;

use hookline_messages::hook::{Hook, HookContext, Reply};
use hookline_messages::note::{Note, SkipReason};
use hookline_messages::session::SessionId;
use tokio::sync::oneshot;

use super::steps::{Marks, Steps};
use crate::error::PipelineError;

/// Where a call's outcome goes.
pub(crate) type ReplyTo<H> = oneshot::Sender<Result<Outcome<<H as Hook>::Value>, PipelineError>>;

/// One hook call on its way: admitted by the coordinator, carried through the plugin actors in
/// batches (moved, never copied), answered by the last one (or by the coordinator when it has
/// notes to filter).
pub(crate) struct Job<H: Hook> {
    pub(crate) cx: HookContext,
    pub(crate) facts: H::Context,
    pub(crate) value: H::Value,
    pub(crate) reply: ReplyTo<H>,
    pub(crate) notes: Vec<Note>,
    /// Steps (indexes into the hook's step list) whose replacement changed the value.
    pub(crate) changed: Marks,
    /// Steps skipped on this call.
    pub(crate) failed: Marks,
    /// The caller's span, so a plugin's logs stay under the call that caused them.
    pub(crate) span: tracing::Span,
}

impl<H: Hook> Job<H> {
    /// A call for `session` on `value`.
    pub(crate) fn new(
        session: SessionId,
        facts: H::Context,
        value: H::Value,
        reply: ReplyTo<H>,
    ) -> Self {
        Self {
            cx: HookContext {
                session_id: session,
            },
            facts,
            value,
            reply,
            notes: Vec::new(),
            changed: Marks::default(),
            failed: Marks::default(),
            span: tracing::Span::current(),
        }
    }

    pub(crate) fn session(&self) -> &SessionId {
        &self.cx.session_id
    }

    /// Takes step `step`'s reply: applies an admitted replacement or records why the step is
    /// skipped (SPEC P1.4, P1.5). The value before it stands when it is skipped.
    pub(crate) fn absorb(
        &mut self,
        step: usize,
        name: &str,
        result: Result<Reply<H::Value>, SkipReason>,
    ) {
        let reason = match result {
            Ok(Reply::Keep) => return,
            // SPEC P2.1, P2.4, P2.6: whatever a read-only hook returns changes nothing.
            Ok(Reply::Replace(_)) if H::READ_ONLY => return,
            Ok(Reply::Replace(proposed)) => match H::admit(&self.facts, &self.value, proposed) {
                Ok(applied) => {
                    if applied.value != self.value {
                        self.changed.insert(step);
                        self.value = applied.value;
                    }
                    self.notes.extend(applied.notice);
                    return;
                }
                Err(refusal) => SkipReason::Refused(refusal),
            },
            Err(reason) => reason,
        };
        crate::metrics::skipped(name, H::KIND, &reason);
        let note = Note::skipped(name, H::KIND, reason);
        tracing::warn!(parent: &self.span, session = %self.cx.session_id, "{note}");
        self.notes.push(note);
        // Every skip, noted or not yet: fail-closed guards decide on this list, not on the
        // deduplicated notes.
        self.failed.insert(step);
    }

    /// The outcome, with `notes` (the ones the session has not seen) and the marked steps named.
    pub(crate) fn answer(self, notes: Vec<Note>, names: &Arc<[Arc<str>]>) {
        let outcome = Outcome {
            value: self.value,
            notes,
            changed_by: Steps::new(self.changed, names),
            failed: Steps::new(self.failed, names),
        };
        // The caller may have stopped waiting; the call still counted, so a closed channel is fine.
        let _ = self.reply.send(Ok(outcome));
    }
}

/// What a hook call produced: the final value, the notes new to this session, and which plugins
/// changed the value (in load order).
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome<T> {
    /// The value after every plugin that implements the hook.
    pub value: T,
    /// Notes recorded by this call that the session has not seen before (SPEC P1.4: once per
    /// session, not once per call).
    pub notes: Vec<Note>,
    /// Plugins whose accepted replacement changed the value (SPEC R5.7 needs this for raw hooks).
    /// A step mask named on demand: no vector per call.
    pub changed_by: Steps,
    /// Plugins skipped on this call (error, panic, timeout, undecodable or refused reply), in
    /// load order, whether or not the session had seen the note before. Fail-closed guards
    /// decide on it.
    pub failed: Steps,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_that_keeps_its_value_names_no_step() {
        let (reply, _answer) = oneshot::channel();
        let mut job = Job::<hookline_messages::hook::OnUserMessage>::new(
            SessionId::new("s"),
            (),
            hookline_messages::user::UserMessage::new("hi"),
            reply,
        );
        job.absorb(0, "keep", Ok(Reply::Keep));
        assert!(job.changed.is_empty() && job.failed.is_empty());
    }
}
