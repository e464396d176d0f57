//! [`Job`]: one hook call, the same value from admission to answer (the caller's session, the
//! rule's facts, the value moving through the plugins, the notes, and where the answer goes),
//! and the [`Outcome`] it ends in.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use hookline_messages::hook::{Hook, HookContext, Reply};
use hookline_messages::note::{Note, SkipReason};
use hookline_messages::session::SessionId;
use thin_vec::ThinVec;

use super::answer::{CallAnswer, ReplyTo};
use super::draft::{save, Appended, Draft, Written};
use super::steps::{Marks, Steps};

/// A job's slot before its coordinator gives it one.
pub(crate) const NO_SLOT: u32 = u32::MAX;

/// One hook call on its way: admitted by the coordinator, carried through the plugin actors in
/// batches (moved, never copied), answered by the last one (or by the coordinator when it has
/// notes to filter).
pub(crate) struct Job<H: Hook> {
    pub(crate) cx: HookContext,
    pub(crate) facts: H::Context,
    pub(crate) value: H::Value,
    /// The session's slot in its shard's table ([`NO_SLOT`] until admitted, unless the caller
    /// held a `SessionKey`): the finished call is released by it, not by its id.
    pub(crate) slot: u32,
    /// The value the call was admitted with, once a plugin changed it: moved aside by the first
    /// replacement, or, when only appends changed it, the text's length before them (no copy:
    /// [`Outcome::before`] rebuilds it on demand).
    original: Before<H::Value>,
    pub(crate) reply: ReplyTo<H>,
    /// The call's notes: none on nearly every call, so a thin vector (one word, no allocation
    /// while empty) keeps the job small.
    pub(crate) notes: ThinVec<Note>,
    /// Steps (indexes into the hook's step list) whose replacement changed the value.
    pub(crate) changed: Marks,
    /// Steps skipped on this call.
    pub(crate) failed: Marks,
    /// The call's span (`hook call`, a child of the caller's), so a plugin's logs and steps stay
    /// under the call that caused them; out of line, and only when a subscriber wants it (a
    /// batch's jobs stay small enough to stay in cache).
    span: Option<Box<tracing::Span>>,
}

impl<H: Hook> Job<H> {
    /// A call for `session` (its slot in its shard's table, or [`NO_SLOT`] when the coordinator
    /// is to find it) on `value`. Inline, so a caller building a batch builds each job where it
    /// goes (a job is 150 bytes: each move of it is a copy).
    #[inline(always)]
    pub(crate) fn new(
        session: SessionId,
        slot: u32,
        facts: H::Context,
        value: H::Value,
        reply: ReplyTo<H>,
    ) -> Self {
        // Built only when some subscriber may want `info` spans (a static level check first:
        // with none, or one at `warn`, a call builds no span at all).
        let span = if tracing::level_enabled!(tracing::Level::INFO) {
            enabled(tracing::info_span!(
                "hook call",
                hook = H::KIND.wire_name(),
                session = %session,
                changed_by = tracing::field::Empty,
                skipped = tracing::field::Empty,
            ))
        } else {
            None
        };
        Self {
            cx: HookContext {
                session_id: session,
            },
            facts,
            value,
            slot,
            original: Before::Unchanged,
            reply,
            notes: ThinVec::new(),
            changed: Marks::default(),
            failed: Marks::default(),
            span,
        }
    }

    /// The span of step `at` (plugin `name`) on this call: a child of the call's span, with the
    /// hook and the plugin; [`Job::record_step`] adds the outcome once the step is through.
    #[inline]
    pub(crate) fn step_span(&self, name: &str) -> Option<tracing::Span> {
        // Without a subscriber for the call, a step has no span at all: nothing to build, enter,
        // record or drop (issue 24 item 3: off costs nothing measurable on the batch path, one
        // step per plugin per call). The check stays inline in the plugin's loop; the span is
        // built out of line.
        let call = self.span.as_deref()?;
        Some(step_span::<H>(call, name))
    }

    /// Records on `span` how step `at` ended: `skipped` (with the reason), `changed` or `kept`.
    pub(crate) fn record_step(&self, span: &tracing::Span, at: usize) {
        if span.is_disabled() {
            return;
        }
        if self.failed.contains(at) {
            span.record("outcome", "skipped");
            if let Some(Note::Skipped(skip)) = self.notes.last() {
                span.record("skip_reason", tracing::field::display(&skip.reason));
            }
        } else if self.changed.contains(at) {
            span.record("outcome", "changed");
        } else {
            span.record("outcome", "kept");
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
                        // The first change keeps what the call was given; later ones drop the
                        // value in between.
                        drop(self.original.keep(replaced));
                    }
                    self.notes.extend(applied.notice);
                    return;
                }
                Err(refusal) => SkipReason::Refused(refusal),
            },
            Err(reason) => reason,
        };
        self.skip(step, name, reason);
    }

    /// Runs an in-place hook on the value through a [`Draft`] (`run` is the hook under its panic
    /// guard; `spare` is the batch's buffer for the value before a write). A hook that wrote has
    /// its result checked by the rule: an append by the hook's rule for appends, any other write
    /// against the value before it, which the draft saved. A refused, failed or panicked one
    /// leaves the value before it (SPEC P1.4, P1.5), and so does any write to a read-only hook's
    /// value (SPEC P2.1, P2.4, P2.6).
    #[inline]
    pub(crate) fn edit(
        &mut self,
        step: usize,
        name: &str,
        spare: &mut Option<H::Value>,
        run: impl FnOnce(&HookContext, &mut Draft<'_, H::Value>) -> Result<(), SkipReason>,
    ) {
        let mut draft = Draft::new(&mut self.value, spare);
        let result = run(&self.cx, &mut draft);
        match draft.how() {
            Written::No => {
                if let Err(reason) = result {
                    self.skip(step, name, reason);
                }
            }
            Written::Appended(appended) => self.appended(step, name, spare, result, appended),
            Written::Saved => self.saved(step, name, spare, result),
        }
    }

    /// Settles an edit that only appended: checked by the hook's rule for appends, undone by
    /// truncation. A hook without such a rule has its append checked as a replacement, against
    /// the value before it rebuilt by truncation.
    fn appended(
        &mut self,
        step: usize,
        name: &str,
        spare: &mut Option<H::Value>,
        result: Result<(), SkipReason>,
        Appended { len, undo, grew }: Appended<H::Value>,
    ) {
        let reason = match result {
            Ok(()) if H::READ_ONLY => return undo(&mut self.value, len),
            Ok(()) => match H::admit_append(&self.facts, &self.value, len) {
                Some(Ok(())) => {
                    if grew {
                        self.changed.insert(step);
                        // Nothing copied: the value given is this one cut back to `len`.
                        if let Before::Unchanged = self.original {
                            self.original = Before::Appended { len, undo };
                        }
                    }
                    return;
                }
                Some(Err(refusal)) => SkipReason::Refused(refusal),
                None => {
                    save(&self.value, spare);
                    if let Some(before) = spare.as_mut() {
                        undo(before, len);
                    }
                    return self.saved(step, name, spare, Ok(()));
                }
            },
            Err(reason) => reason,
        };
        undo(&mut self.value, len);
        self.skip(step, name, reason);
    }

    /// Settles an edit whose value before it is in `spare`: the rule decides the edited value
    /// against it; a refused or failed edit puts it back.
    fn saved(
        &mut self,
        step: usize,
        name: &str,
        spare: &mut Option<H::Value>,
        result: Result<(), SkipReason>,
    ) {
        let Some(before) = spare.take() else {
            // Cannot happen (a saved draft filled the spare); the edit stands unchecked only if
            // it did not fail.
            if let Err(reason) = result {
                self.skip(step, name, reason);
            }
            return;
        };
        let edited = std::mem::replace(&mut self.value, before);
        let reason = match result {
            Ok(()) if H::READ_ONLY => {
                *spare = Some(edited);
                return;
            }
            Ok(()) => match H::admit(&self.facts, &self.value, edited) {
                Ok(applied) => {
                    let changed = applied.value != self.value;
                    let before = std::mem::replace(&mut self.value, applied.value);
                    if changed {
                        self.changed.insert(step);
                    }
                    // The first change keeps what the call was given; otherwise the value before
                    // is the next edit's spare.
                    *spare = if changed {
                        self.original.keep(before)
                    } else {
                        Some(before)
                    };
                    self.notes.extend(applied.notice);
                    return;
                }
                Err(refusal) => SkipReason::Refused(refusal),
            },
            Err(reason) => {
                *spare = Some(edited);
                reason
            }
        };
        self.skip(step, name, reason);
    }

    /// Records why step `step` is skipped: a metric, a log line, a note and a mark.
    fn skip(&mut self, step: usize, name: &str, reason: SkipReason) {
        crate::metrics::skipped(name, H::KIND, &reason);
        let note = Note::skipped(name, H::KIND, reason);
        let parent = self.span.as_deref().and_then(tracing::Span::id);
        tracing::warn!(parent: parent, session = %self.cx.session_id, "{note}");
        self.notes.push(note);
        // Every skip, noted or not yet: fail-closed guards decide on this list, not on the
        // deduplicated notes.
        self.failed.insert(step);
    }

    /// Answers the caller: the outcome, with `notes` (the ones the session has not seen) and the
    /// marked steps named. The job's fields move straight into the outcome sent (no tuple of
    /// the reply and the outcome in between: each move of an outcome is a 150-byte copy).
    ///
    /// This and [`Job::put_into`] take the job apart each in its own body on purpose: built on
    /// one shared helper (a closure given the reply and the outcome, or `put_into` returning the
    /// reply), the outcome took extra copies and `call_many` lost about a tenth (seventh pass).
    pub(crate) fn answer(self, notes: Vec<Note>, names: &Arc<[Arc<str>]>) {
        let Self {
            value,
            original,
            changed,
            failed,
            span,
            reply,
            ..
        } = self;
        if let Some(span) = span.as_deref() {
            record_named(span, &changed, &failed, names);
        }
        reply.send(Ok(Outcome::built(
            value,
            notes,
            (changed, failed),
            original,
            names,
        )));
    }

    /// Writes the call's outcome, with `notes` (those new to its session) and its marked steps
    /// named, into `place` (a gather's answer): the job's fields moved straight into the outcome
    /// built there, not through an intermediate outcome or tuple (each a 150-byte copy). The
    /// reply is dropped: it must be a slot its gather let go of to answer it here
    /// (`Gather::put_run`; an armed one, dropped here, would lock its gather again to answer
    /// `Stopped`).
    #[inline(always)]
    pub(crate) fn put_into(
        self,
        place: &mut CallAnswer<H::Value>,
        notes: Vec<Note>,
        names: &Arc<[Arc<str>]>,
    ) {
        let Self {
            value,
            original,
            changed,
            failed,
            span,
            ..
        } = self;
        if let Some(span) = span.as_deref() {
            record_named(span, &changed, &failed, names);
        }
        *place = Ok(Outcome::built(
            value,
            notes,
            (changed, failed),
            original,
            names,
        ));
    }
}

/// Records on a call's span which plugins changed its value and which were skipped.
#[cold]
fn record_named(span: &tracing::Span, changed: &Marks, failed: &Marks, names: &Arc<[Arc<str>]>) {
    let named = |marks: &Marks| {
        let steps = Steps::new(marks.clone(), names);
        steps.iter().map(|n| &**n).collect::<Vec<_>>().join(",")
    };
    span.record("changed_by", named(changed));
    span.record("skipped", named(failed));
}

/// The span of one plugin's step (plugin `name`) on the call whose span is `call`.
#[cold]
#[inline(never)]
fn step_span<H: Hook>(call: &tracing::Span, name: &str) -> tracing::Span {
    tracing::info_span!(
        parent: call,
        "plugin step",
        hook = H::KIND.wire_name(),
        plugin = name,
        outcome = tracing::field::Empty,
        skip_reason = tracing::field::Empty,
    )
}

/// What a call keeps of the value it was given once a plugin changed it.
pub(crate) enum Before<T> {
    /// No plugin changed it (the value is the one given).
    Unchanged,
    /// Only appends changed it: the value given is the value's text cut back to `len`.
    Appended { len: usize, undo: fn(&mut T, usize) },
    /// A replacement or a write changed it: the value given, moved aside (boxed: a job carries
    /// one word for it, not a second value, on every call that keeps or appends).
    Kept(Box<T>),
}

impl<T> Before<T> {
    /// Keeps `replaced` (the value a change replaced) when it is the value given; hands it back
    /// otherwise (a value in between, or nothing more to keep). After appends, the value given
    /// is `replaced` cut back.
    fn keep(&mut self, mut replaced: T) -> Option<T> {
        match *self {
            Self::Kept(_) => Some(replaced),
            Self::Unchanged => {
                *self = Self::Kept(Box::new(replaced));
                None
            }
            Self::Appended { len, undo } => {
                undo(&mut replaced, len);
                *self = Self::Kept(Box::new(replaced));
                None
            }
        }
    }
}

impl<T: Clone> Clone for Before<T> {
    fn clone(&self) -> Self {
        match self {
            Self::Unchanged => Self::Unchanged,
            Self::Appended { len, undo } => Self::Appended {
                len: *len,
                undo: *undo,
            },
            Self::Kept(value) => Self::Kept(value.clone()),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Before<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unchanged => f.write_str("Unchanged"),
            Self::Appended { len, .. } => f.debug_struct("Appended").field("len", len).finish(),
            Self::Kept(value) => f.debug_tuple("Kept").field(value).finish(),
        }
    }
}

/// `span`, boxed, when a subscriber wants it (no allocation without one).
fn enabled(span: tracing::Span) -> Option<Box<tracing::Span>> {
    (!span.is_disabled()).then(|| Box::new(span))
}

/// What a hook call produced: the final value, the notes new to this session, which plugins
/// changed the value (in load order), and the value the call was given when they did
/// ([`Outcome::before`]).
#[derive(Clone, Debug)]
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
    /// What the call keeps of the value it was given (see [`Outcome::before`]).
    pub(crate) before: Before<T>,
}

impl<T> Outcome<T> {
    /// The outcome of a call that ended with `value`, `notes`, its (changed, skipped) steps
    /// marked and named through `names`, and what it kept of the value it was given.
    #[inline(always)]
    fn built(
        value: T,
        notes: Vec<Note>,
        (changed, failed): (Marks, Marks),
        before: Before<T>,
        names: &Arc<[Arc<str>]>,
    ) -> Self {
        Self {
            value,
            notes,
            changed_by: Steps::new(changed, names),
            failed: Steps::new(failed, names),
            before,
        }
    }
}

impl<T: Clone> Outcome<T> {
    /// The value the hook was given, when a plugin changed it (`None` when none did).
    ///
    /// Nothing is copied for it while the call runs: a replacement moves the value given aside,
    /// and when only appends changed it (`Draft::append`) the call keeps just the text's length
    /// before them, so this rebuilds it (one copy, here, for a caller that asks).
    pub fn before(&self) -> Option<Cow<'_, T>> {
        match &self.before {
            Before::Unchanged => None,
            Before::Appended { len, undo } => {
                let mut before = self.value.clone();
                undo(&mut before, *len);
                Some(Cow::Owned(before))
            }
            Before::Kept(value) => Some(Cow::Borrowed(&**value)),
        }
    }

    /// Takes the value the hook was given out of the outcome, when a plugin changed it (`None`
    /// when none did, or once taken).
    pub fn take_before(&mut self) -> Option<T> {
        match std::mem::replace(&mut self.before, Before::Unchanged) {
            Before::Unchanged => None,
            Before::Appended { len, undo } => {
                let mut before = self.value.clone();
                undo(&mut before, len);
                Some(before)
            }
            Before::Kept(value) => Some(*value),
        }
    }
}

/// Outcomes are equal when their values, notes, steps and values given are.
impl<T: Clone + PartialEq> PartialEq for Outcome<T> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
            && self.notes == other.notes
            && self.changed_by == other.changed_by
            && self.failed == other.failed
            && self.before() == other.before()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookline_messages::hook::{HookKind, OnUserMessage};
    use hookline_messages::note::Refusal;
    use hookline_messages::user::UserMessage;
    use tokio::sync::oneshot;

    #[test]
    fn a_job_that_keeps_its_value_names_no_step() {
        let (reply, _answer) = oneshot::channel();
        let mut job = Job::<hookline_messages::hook::OnUserMessage>::new(
            SessionId::new("s"),
            NO_SLOT,
            (),
            hookline_messages::user::UserMessage::new("hi"),
            ReplyTo::One(reply),
        );
        job.absorb(0, "keep", Ok(Reply::Keep));
        assert!(job.changed.is_empty() && job.failed.is_empty());
    }

    /// `on_user_message`'s value and rule without its rule for appends.
    struct NoAppendRule;

    impl Hook for NoAppendRule {
        type Value = UserMessage;
        type Context = ();
        const KIND: HookKind = HookKind::OnUserMessage;

        fn admit(
            cx: &(),
            before: &UserMessage,
            proposed: UserMessage,
        ) -> Result<hookline_messages::hook::Applied<UserMessage>, Refusal> {
            OnUserMessage::admit(cx, before, proposed)
        }
    }

    #[test]
    fn an_append_to_a_hook_without_a_rule_for_appends_is_checked_as_a_replacement() {
        let (reply, _answer) = oneshot::channel();
        let mut job = Job::<NoAppendRule>::new(
            SessionId::new("s"),
            NO_SLOT,
            (),
            UserMessage::new(""),
            ReplyTo::One(reply),
        );
        let mut spare = None;
        job.edit(0, "blank", &mut spare, |_, draft| {
            draft.append(" ");
            Ok(())
        });
        assert_eq!(job.value, UserMessage::new(""));
        assert_eq!(
            job.notes,
            [Note::skipped(
                "blank",
                HookKind::OnUserMessage,
                SkipReason::Refused(Refusal::EmptyUserMessage)
            )]
        );
        job.edit(1, "tag", &mut spare, |_, draft| {
            draft.append("tag");
            Ok(())
        });
        assert_eq!(job.value, UserMessage::new("tag"));
        assert!(matches!(&job.original, Before::Kept(before) if **before == UserMessage::new("")));
        assert!(job.changed.contains(1) && !job.changed.contains(0));
    }
}
