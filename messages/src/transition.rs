//! Session begin and end transitions as a pure function (SPEC P3.10 to P3.13).
//!
//! The host decides which session comes next (a fresh id for `/clear`, the stored one for
//! `/resume`, ...); this function decides which `on_session_ended` and `on_session_started` calls
//! that means, and in which order. The session lifecycle actor runs them.

use serde::{Deserialize, Serialize};

use crate::session::SessionInfo;

/// Why the active session changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// Plugins were loaded and a session opened (SPEC P3.10).
    Open,
    /// `/new`: a fresh session in the same workspace.
    New,
    /// `/clear`: a fresh session replaces the conversation (SPEC P3.11).
    Clear,
    /// `/resume <id>`: a stored session becomes active, possibly in another workspace
    /// (SPEC P3.11, P3.12).
    Resume,
    /// `/fork`: a copy of the session becomes active (SPEC P3.11).
    Fork,
    /// `/cd <dir>`: the host reloads in another directory (SPEC P3.11).
    Cd,
    /// `/space <name>`: the host reloads in another named workspace (SPEC P3.11).
    Space,
}

/// What happens to the active session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum SessionEvent {
    /// `next` becomes the active session.
    Activate {
        /// Why.
        cause: Cause,
        /// The session that becomes active.
        next: SessionInfo,
    },
    /// The active session closes: the host closes it or the process ends (SPEC P3.11, P3.13).
    Close,
}

/// One hook call the lifecycle runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "hook", rename_all = "kebab-case")]
pub enum Transition {
    /// `on_session_ended` for the session being left, with its workspace (SPEC P3.11).
    Ended(SessionInfo),
    /// `on_session_started` for the session that became active (SPEC P3.10).
    Started(SessionInfo),
}

/// The active session after `event`, and the end and start calls it takes, in order.
///
/// A session is "another" when its id or its workspace differs: re-activating the very session
/// that is active changes nothing, and a resume that also changes workspace is exactly one end
/// and one start (SPEC P3.12).
pub fn transition(
    active: Option<&SessionInfo>,
    event: SessionEvent,
) -> (Option<SessionInfo>, Vec<Transition>) {
    match (active, event) {
        (None, SessionEvent::Close) => (None, Vec::new()),
        (Some(left), SessionEvent::Close) => (None, vec![Transition::Ended(left.clone())]),
        (Some(left), SessionEvent::Activate { next, .. }) if same(left, &next) => {
            (Some(left.clone()), Vec::new())
        }
        (Some(left), SessionEvent::Activate { next, .. }) => (
            Some(next.clone()),
            vec![Transition::Ended(left.clone()), Transition::Started(next)],
        ),
        (None, SessionEvent::Activate { next, .. }) => {
            (Some(next.clone()), vec![Transition::Started(next)])
        }
    }
}

fn same(a: &SessionInfo, b: &SessionInfo) -> bool {
    a.session_id == b.session_id && a.workspace_root == b.workspace_root
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::ApprovalMode;

    fn info(ws: &str, id: &str) -> SessionInfo {
        SessionInfo {
            workspace_root: ws.into(),
            session_id: id.into(),
            approval_mode: ApprovalMode::AskAboveRead,
        }
    }

    fn activate(cause: Cause, next: SessionInfo) -> SessionEvent {
        SessionEvent::Activate { cause, next }
    }

    #[test]
    fn opening_starts_and_closing_ends_the_session_being_left() {
        let (active, steps) = transition(None, activate(Cause::Open, info("/w", "s1")));
        assert_eq!(steps, [Transition::Started(info("/w", "s1"))]);
        let (active, steps) = transition(active.as_ref(), SessionEvent::Close);
        assert_eq!(active, None);
        assert_eq!(steps, [Transition::Ended(info("/w", "s1"))]);
        assert!(transition(None, SessionEvent::Close).1.is_empty());
    }

    #[test]
    fn a_resume_that_changes_workspace_is_one_end_and_one_start() {
        let left = info("/a", "s1");
        let (active, steps) = transition(Some(&left), activate(Cause::Resume, info("/b", "s0")));
        assert_eq!(active, Some(info("/b", "s0")));
        assert_eq!(
            steps,
            [
                Transition::Ended(info("/a", "s1")),
                Transition::Started(info("/b", "s0"))
            ]
        );
    }

    #[test]
    fn resuming_the_active_session_changes_nothing() {
        let left = info("/a", "s1");
        let (active, steps) = transition(Some(&left), activate(Cause::Resume, left.clone()));
        assert_eq!(active, Some(left));
        assert!(steps.is_empty());
    }
}
