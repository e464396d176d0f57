//! A session taken over while one of its turns waited for an approval (issue 40 item 3): the
//! turn goes on here before the session serves requests. The open that took it over is
//! answered as soon as the approval waits again, so an answer sent with the takeover (the
//! approval's POST reaching this node) finds it, and `GET /v1/approvals` and the session's status
//! list it; the turn's events go to the session's live feed (nobody waits for its answer).

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::{oneshot, watch};

use super::session::{refresh_status, Moved};
use super::status::{Activity, SessionStatus};
use super::Opened;
use crate::session::Conversation;
use crate::state::HostError;
use crate::store::StoreError;

/// What continuing the waiting turn left.
pub(super) struct Continued {
    /// Whether the open's caller took the answer.
    pub(super) sent: bool,
    /// Whether the session was lost to another node meanwhile (it is dropped).
    pub(super) lost: bool,
}

/// Continues the conversation's waiting turn, answering `opened` with `answer` once the
/// approval waits (or the turn ended without asking).
pub(super) async fn continue_waiting(
    conversation: &mut Conversation,
    status: &watch::Sender<SessionStatus>,
    opened: oneshot::Sender<Result<Opened, HostError>>,
    answer: Opened,
    moved: &mut Moved,
) -> Continued {
    let done = AtomicBool::new(false);
    let mut watching = status.subscribe();
    status.send_modify(|s| s.activity = Activity::Turn);
    let continuing = async {
        let result = moved
            .unless_detached(conversation.continue_waiting_turn())
            .await;
        done.store(true, Ordering::Release);
        // Wakes the announcement when the turn ended without asking.
        status.send_modify(|_| {});
        result
    };
    let announce = async {
        let _ = watching
            .wait_for(|s| s.activity == Activity::Approval || done.load(Ordering::Acquire))
            .await;
        opened.send(Ok(answer)).is_ok()
    };
    let (result, sent) = tokio::join!(continuing, announce);
    // Its events went to the live feed as they happened.
    let _ = conversation.take_events();
    let Some(result) = result else {
        // Handed over to the server that replaces this one (issue 49): left as stored.
        status.send_modify(|s| {
            s.activity = Activity::Idle;
            refresh_status(s, conversation);
        });
        return Continued { sent, lost: false };
    };
    let lost = matches!(result, Err(HostError::Store(StoreError::LeaseLost { .. })));
    match &result {
        Err(_) if lost => conversation.abandon().await,
        Err(error) => tracing::warn!(%error, "a turn continued after a takeover failed"),
        Ok(_) => {}
    }
    status.send_modify(|s| {
        s.activity = if lost {
            Activity::Closed
        } else {
            Activity::Idle
        };
        refresh_status(s, conversation);
    });
    Continued { sent, lost }
}
