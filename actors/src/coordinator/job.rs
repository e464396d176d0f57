//! [`Job`]: one hook call, the same value from admission to answer (the caller's session, the
//! rule's facts, the value moving through the plugins, the notes, and where the answer goes).

use std::sync::Arc;

use hookline_messages::hook::{Hook, HookContext};
use hookline_messages::note::{Note, SkipReason};
use hookline_messages::session::SessionId;
use tokio::sync::oneshot;

use super::Outcome;
use crate::error::PipelineError;
use crate::plugin::{Dispatch, Reply};

/// Where a call's outcome goes.
pub(crate) type ReplyTo<H> = oneshot::Sender<Result<Outcome<<H as Hook>::Value>, PipelineError>>;

/// One hook call on its way: admitted by the coordinator, carried through the plugin actors in
/// batches (moved, never copied), answered by the last one (or by the coordinator when it has
/// notes to filter).
pub(crate) struct Job<H: Dispatch> {
    pub(crate) cx: HookContext,
    pub(crate) facts: H::Context,
    pub(crate) value: H::Value,
    /// The value the call was admitted with, once a replacement changed it (moved, not copied).
    pub(crate) original: Option<H::Value>,
    pub(crate) reply: ReplyTo<H>,
    pub(crate) notes: Vec<Note>,
    /// Steps (indexes into the hook's step list) whose replacement changed the value.
    pub(crate) changed: Marks,
    /// Steps skipped on this call.
    pub(crate) failed: Marks,
    /// The caller's span, so a plugin's logs stay under the call that caused them.
    pub(crate) span: tracing::Span,
}

impl<H: Dispatch> Job<H> {
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
            original: None,
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
                        let replaced = std::mem::replace(&mut self.value, applied.value);
                        // The first change keeps what the call was given, for whoever reports
                        // the change; later ones drop the intermediate value.
                        self.original.get_or_insert(replaced);
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
    pub(crate) fn answer(self, notes: Vec<Note>, names: &[Arc<str>]) {
        let outcome = Outcome {
            value: self.value,
            notes,
            changed_by: self.changed.names(names),
            before: self.original,
            failed: self.failed.names(names),
        };
        // The caller may have stopped waiting; the call still counted, so a closed channel is fine.
        let _ = self.reply.send(Ok(outcome));
    }
}

/// A set of step indexes: one word inline (64 plugins), more words only beyond that.
#[derive(Default)]
pub(crate) struct Marks {
    low: u64,
    high: Vec<u64>,
}

impl Marks {
    pub(crate) fn insert(&mut self, step: usize) {
        if step < 64 {
            self.low |= 1 << step;
            return;
        }
        let word = step / 64 - 1;
        if self.high.len() <= word {
            self.high.resize(word + 1, 0);
        }
        self.high[word] |= 1 << (step % 64);
    }

    fn contains(&self, step: usize) -> bool {
        if step < 64 {
            return self.low & (1 << step) != 0;
        }
        self.high
            .get(step / 64 - 1)
            .is_some_and(|word| word & (1 << (step % 64)) != 0)
    }

    fn is_empty(&self) -> bool {
        self.low == 0 && self.high.iter().all(|w| *w == 0)
    }

    /// The names of the marked steps, in load order; no allocation when none is marked.
    fn names(&self, names: &[Arc<str>]) -> Vec<Arc<str>> {
        if self.is_empty() {
            return Vec::new();
        }
        let count = self.low.count_ones() + self.high.iter().map(|w| w.count_ones()).sum::<u32>();
        let mut marked = Vec::with_capacity(count as usize);
        marked.extend(
            (0..names.len())
                .filter(|step| self.contains(*step))
                .map(|step| names[step].clone()),
        );
        marked
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_name_steps_in_order_beyond_one_word() {
        let names: Vec<Arc<str>> = (0..130).map(|i| Arc::from(format!("p{i}"))).collect();
        let mut marks = Marks::default();
        for step in [129, 3, 64, 0] {
            marks.insert(step);
        }
        let named = marks.names(&names);
        let named: Vec<&str> = named.iter().map(|n| &**n).collect();
        assert_eq!(named, ["p0", "p3", "p64", "p129"]);
        assert!(Marks::default().names(&names).is_empty());
    }
}
