//! One hook call's walk through the plugins: the waterfall of SPEC P1.1, P1.2 and R0.3.

use std::sync::Arc;

use hookline_messages::hook::{Hook, HookContext};
use hookline_messages::note::{Note, SkipReason};

use super::Step;
use crate::plugin::{Dispatch, Invoke, Reply};

/// What the walk produced.
pub(crate) struct Run<T> {
    pub(crate) value: T,
    pub(crate) notes: Vec<Note>,
    pub(crate) changed_by: Vec<Arc<str>>,
}

/// Sends `value` through `steps` in order. Each plugin sees the previous accepted value; a
/// failing or refused plugin is skipped with a note and the value before it stands
/// (SPEC P1.4, P1.5).
pub(crate) async fn run_chain<H: Dispatch>(
    steps: &[Step],
    cx: HookContext,
    context: H::Context,
    mut value: H::Value,
) -> Run<H::Value> {
    let mut notes = Vec::new();
    let mut changed_by = Vec::new();
    for step in steps {
        let reply = step
            .addr
            .send(Invoke::<H>::new(cx.clone(), value.clone()))
            .await;
        let reason = match reply {
            Ok(Ok(Reply::Keep)) => continue,
            // SPEC P2.1, P2.4, P2.6: whatever a read-only hook returns changes nothing.
            Ok(Ok(Reply::Replace(_))) if H::READ_ONLY => continue,
            Ok(Ok(Reply::Replace(proposed))) => match H::admit(&context, &value, proposed) {
                Ok(applied) => {
                    if applied.value != value {
                        changed_by.push(step.name.clone());
                        value = applied.value;
                    }
                    notes.extend(applied.notice);
                    continue;
                }
                Err(refusal) => SkipReason::Refused(refusal),
            },
            Ok(Err(reason)) => reason,
            Err(_mailbox_closed) => SkipReason::Unavailable,
        };
        metrics::counter!(
            "hookline_hook_skips_total",
            "hook" => <H as Hook>::KIND.wire_name(),
            "reason" => reason.label()
        )
        .increment(1);
        let note = Note::skipped(step.name.as_ref(), H::KIND, reason);
        tracing::warn!(session = %cx.session_id, "{note}");
        notes.push(note);
    }
    Run {
        value,
        notes,
        changed_by,
    }
}
