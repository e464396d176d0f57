//! `GET /v1/events`: every session's events and the gateway's as server-sent events
//! (`event: <kind>`, `data: {"session": key|null, "event": HostEvent}`), and `event: session` with
//! a [`SessionStatus`] whenever a session's status changes (opened, in a turn, waiting for an
//! approval, idle, closed). Statuses are compared on each event of a session and once a second
//! for all of them, so a change without an event (a turn ending) is seen within a second.
//!
//! A caller sees only the sessions it may see (issue 48, `Principal::may_see`), and the gateway's
//! own events (no session) only as an admin. The stream does not outlive its credential: when a
//! JWT's `exp` passes or an API key is revoked or expires, a last `event: unauthorized` with
//! `{"reason": ...}` is sent and the stream ends.

use crate::openapi::errors::Unauthorized;
use std::collections::HashMap;
use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::stream;
use hookline_messages::session::SessionId;
use tokio::sync::broadcast;

use super::turn::tagged;
use crate::auth::{Caller, Principal};
use crate::AppState;
use hookline_host::gateway::{Activity, FeedEvent, SessionStatus};

/// How often every session's status is compared with what the client was last told.
const STATUS_EVERY: Duration = Duration::from_secs(1);

struct Feed {
    state: AppState,
    who: Principal,
    /// Whether `who` may see each session met so far (an owner never changes).
    seen: HashMap<SessionId, bool>,
    events: broadcast::Receiver<FeedEvent>,
    told: HashMap<SessionId, SessionStatus>,
    pending: std::collections::VecDeque<Event>,
    tick: tokio::time::Interval,
    /// Resolves when the caller's credential stops being good.
    lapsed: std::pin::Pin<Box<dyn std::future::Future<Output = String> + Send>>,
    /// Set once the credential lapsed: the stream ends after what is pending.
    ending: bool,
}

impl Feed {
    /// Whether the caller may see the events of `session` (none: the gateway's).
    fn may_see(&mut self, session: Option<&SessionId>) -> bool {
        let Some(key) = session else {
            return self.who.sees_gateway();
        };
        if self.who.may_see_all() {
            return true;
        }
        if let Some(seen) = self.seen.get(key) {
            return *seen;
        }
        // A session no longer open and never met: not shown.
        let Some(handle) = self.state.gateway.session(key) else {
            return false;
        };
        let seen = self.who.may_see(handle.status().owner.as_ref());
        self.seen.insert(key.clone(), seen);
        seen
    }

    /// Queues `status` when it differs from what the client was told.
    fn tell(&mut self, status: SessionStatus) {
        if self.told.get(&status.key) == Some(&status) {
            return;
        }
        self.pending.push_back(status_event(&status));
        self.told.insert(status.key.clone(), status);
    }

    /// Compares every session; sessions gone from the gateway are told closed.
    fn sweep(&mut self) {
        let mut now = self.state.gateway.sessions();
        now.retain(|status| self.who.may_see(status.owner.as_ref()));
        let open: std::collections::HashSet<SessionId> =
            now.iter().map(|s| s.key.clone()).collect();
        let gone: Vec<SessionId> = self
            .told
            .keys()
            .filter(|k| !open.contains(*k))
            .cloned()
            .collect();
        for key in gone {
            if let Some(mut status) = self.told.remove(&key) {
                if status.activity != Activity::Closed {
                    status.activity = Activity::Closed;
                    self.pending.push_back(status_event(&status));
                }
            }
        }
        for status in now {
            self.tell(status);
        }
    }
}

fn status_event(status: &SessionStatus) -> Event {
    Event::default()
        .event("session")
        .data(serde_json::to_string(status).unwrap_or_default())
}

/// The route.
#[utoipa::path(
    get, path = "/v1/events", tag = "events",
    responses(
        (status = 200, description = "Server-sent events, until the server drains: `event: <kind>` with `{\"session\": key or null, \"event\": HostEvent}` as data for every session's events and the gateway's; `event: session` with a SessionStatus whenever a session's status changes; `event: lagged` with `{\"missed\": n}` when the client read too slowly; `event: unauthorized` with `{\"reason\": ...}` last, when the caller's JWT expires or its API key is revoked or expires.", body = String, content_type = "text/event-stream"),
        Unauthorized,
    )
)]
pub(crate) async fn feed(Caller(who): Caller, State(state): State<AppState>) -> Response {
    let mut tick = tokio::time::interval(STATUS_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let start = Feed {
        events: state.gateway.subscribe(),
        lapsed: state.auth.lapsed(&who),
        ending: false,
        state,
        who,
        seen: HashMap::new(),
        told: HashMap::new(),
        pending: std::collections::VecDeque::new(),
        tick,
    };
    let events = stream::unfold(start, |mut feed| async move {
        loop {
            if let Some(event) = feed.pending.pop_front() {
                return Some((Ok::<_, Infallible>(event), feed));
            }
            if feed.ending {
                return None;
            }
            tokio::select! {
                reason = &mut feed.lapsed => {
                    let data = serde_json::json!({ "reason": reason });
                    feed.pending.push_back(Event::default().event("unauthorized").data(data.to_string()));
                    feed.ending = true;
                }
                event = feed.events.recv() => match event {
                    Ok(FeedEvent { session, .. }) if !feed.may_see(session.as_ref()) => {}
                    Ok(FeedEvent { session, event }) => {
                        let (kind, json) = tagged(&event);
                        let data = serde_json::json!({ "session": session, "event": json });
                        feed.pending.push_back(Event::default().event(kind).data(data.to_string()));
                        if let Some(handle) = session.and_then(|k| feed.state.gateway.session(&k)) {
                            feed.tell(handle.status());
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(missed)) => {
                        let data = serde_json::json!({ "missed": missed });
                        feed.pending.push_back(Event::default().event("lagged").data(data.to_string()));
                    }
                    // The gateway is gone: the stream ends.
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
                _ = feed.tick.tick() => {
                    feed.sweep();
                    // After a drain nothing more will happen: end the stream so the listener
                    // can close.
                    if feed.pending.is_empty()
                        && feed.state.is_draining()
                        && feed.state.gateway.open_sessions() == 0
                    {
                        return None;
                    }
                }
            }
        }
    });
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}
