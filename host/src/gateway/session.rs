//! One gateway session: a [`Conversation`] owned by a task of its own (on one of the gateway's
//! arbiters), driven through a bounded inbox by cloneable [`SessionHandle`]s. Requests of one
//! session run one at a time, in the order they arrived (SPEC P: one session's calls in order);
//! sessions never wait for each other. Stopping a turn and answering an approval do not queue
//! behind the turn: they go straight to the stop signal and the approvals table.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hookline_messages::model::UsageTotals;
use hookline_messages::note::Note;
use hookline_messages::record::{Decision, Record};
use hookline_messages::session::SessionId;
use hookline_messages::user::StopReason;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use super::approvals::{Approvals, NotWaiting};
use super::status::{Activity, SessionStatus};
use super::RequestError;
use crate::producers::InboundMessage;
use crate::session::{CommandOrigin, Conversation, SessionCommand};
use crate::state::{Detail, HostError, HostEvent};
use crate::store::StoreError;
use crate::turn::{StopSignal, UserInput};
use hookline_messages::note::SessionEnding;

/// What one user turn produced.
#[derive(Clone, Debug, PartialEq)]
pub struct TurnReport {
    /// The session the turn ran in.
    pub session_id: Option<SessionId>,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// Everything it reported, in order.
    pub events: Vec<HostEvent>,
    /// Token usage of this turn's answered model calls (a compaction before it included),
    /// when the provider reported any.
    pub usage: Option<UsageTotals>,
    /// The model its calls went to (the session's, else the provider's default), if named.
    pub model: Option<String>,
}

/// What one session command produced.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandReport {
    /// Everything it reported, in order.
    pub events: Vec<HostEvent>,
    /// Token usage of the model calls it made (`/compact`), when the provider reported any.
    pub usage: Option<UsageTotals>,
    /// The model those calls went to, if named.
    pub model: Option<String>,
}

/// A page of a session's stored records.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordsPage {
    /// The active session.
    pub session_id: Option<SessionId>,
    /// How many records it stores in all.
    pub total: usize,
    /// The records from the page's offset on.
    pub records: Vec<Record>,
}

pub(super) type Reply<T> = oneshot::Sender<Result<T, HostError>>;

/// A request to a session's task.
pub(super) enum Request {
    Turn(UserInput, Detail, Reply<TurnReport>),
    Command(SessionCommand, Option<CommandOrigin>, Reply<CommandReport>),
    Inbound(Box<InboundMessage>, Reply<Vec<HostEvent>>),
    Records {
        offset: usize,
        limit: usize,
        reply: oneshot::Sender<RecordsPage>,
    },
    Close(Reply<Vec<HostEvent>>),
    Shutdown {
        restart_expected: bool,
        notes: Arc<[Note]>,
        reply: Reply<Vec<HostEvent>>,
    },
    /// A note to archive now (a drain that stopped the session's turn).
    Note(Note),
    /// Answered once every request queued before it has run (a hand-over waits for it).
    Barrier(Reply<()>),
}

/// A handle to one gateway session. Cheap to clone.
#[derive(Clone)]
pub struct SessionHandle {
    pub(super) key: SessionId,
    /// Each request with the span of the caller that sent it: the session's task runs it under
    /// that span, so a turn asked for over HTTP is a child of the request's span.
    pub(super) requests: mpsc::Sender<(Request, tracing::Span)>,
    pub(super) status: watch::Receiver<SessionStatus>,
    pub(super) live: broadcast::Sender<Arc<HostEvent>>,
    pub(super) approvals: Arc<Approvals>,
    pub(super) stop: Arc<StopSignal>,
    /// The gateway's drain flag: once raised, turns and commands are refused.
    pub(super) draining: Arc<AtomicBool>,
    /// Raised when the session starts moving to the server that replaces this one (issue 49):
    /// new turns and commands are refused ([`RequestError::Moving`]).
    pub(super) moving: Arc<AtomicBool>,
    /// Raised to drop the turn that waits for an approval, left stored for the new server.
    pub(super) detach: Arc<watch::Sender<bool>>,
}

impl std::fmt::Debug for SessionHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionHandle")
            .field("key", &self.key)
            .field("status", &*self.status.borrow())
            .finish_non_exhaustive()
    }
}

impl SessionHandle {
    /// The id the gateway knows this session by (its first session id).
    pub fn key(&self) -> &SessionId {
        &self.key
    }

    /// Its status now.
    pub fn status(&self) -> SessionStatus {
        self.status.borrow().clone()
    }

    /// A receiver of its status as it changes.
    pub fn watch_status(&self) -> watch::Receiver<SessionStatus> {
        self.status.clone()
    }

    /// Its events from now on, as they happen (a bounded feed: a receiver that falls behind is
    /// told how many it missed).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<HostEvent>> {
        self.live.subscribe()
    }

    /// Runs one user turn (after any turn or command queued before it).
    ///
    /// # Errors
    /// [`RequestError`]: the session's queue is full, it has ended, or the host failed.
    pub async fn turn(&self, input: UserInput) -> Result<TurnReport, RequestError> {
        self.turn_with(input, Detail::Changes).await
    }

    /// As [`SessionHandle::turn`], with `hook-changed` events saying as much as `detail` asks
    /// (the full values before and after only with [`Detail::Full`]).
    ///
    /// # Errors
    /// As [`SessionHandle::turn`].
    pub async fn turn_with(
        &self,
        input: UserInput,
        detail: Detail,
    ) -> Result<TurnReport, RequestError> {
        self.admit()?;
        self.ask(|reply| Request::Turn(input, detail, reply)).await
    }

    /// Runs a session command; `origin` defaults to the gateway's chat path.
    ///
    /// # Errors
    /// As [`SessionHandle::turn`].
    pub async fn command(
        &self,
        command: SessionCommand,
        origin: Option<CommandOrigin>,
    ) -> Result<Vec<HostEvent>, RequestError> {
        Ok(self.command_report(command, origin).await?.events)
    }

    /// As [`SessionHandle::command`], with the usage of the model calls the command made.
    ///
    /// # Errors
    /// As [`SessionHandle::turn`].
    pub async fn command_report(
        &self,
        command: SessionCommand,
        origin: Option<CommandOrigin>,
    ) -> Result<CommandReport, RequestError> {
        if command == SessionCommand::Stop && self.is_moving() {
            // A turn still running here while the session moves is stopped all the same; the
            // command itself goes to the successor (issue 49).
            self.stop.raise();
        }
        self.admit()?;
        if command == SessionCommand::Stop {
            // `/stop` reaches the turn in flight at once; the command itself (its event) queues.
            self.stop.raise();
        } else if command.ends_session() {
            // The session is left once the turn in flight ends: an approval that turn waits for
            // would never be answered (issue 34 item 2).
            self.stop.end_session(SessionEnding::Replaced);
        }
        self.ask(|reply| Request::Command(command, origin, reply))
            .await
    }

    /// An inbound chat message for this session (`message:received`, queued to subscribers).
    ///
    /// # Errors
    /// As [`SessionHandle::turn`].
    pub async fn inbound(&self, message: InboundMessage) -> Result<Vec<HostEvent>, RequestError> {
        self.ask(|reply| Request::Inbound(Box::new(message), reply))
            .await
    }

    /// Requests waiting in its inbox now (not the one running).
    pub fn queued(&self) -> usize {
        self.requests.max_capacity() - self.requests.capacity()
    }

    /// Says the session ends once its turn in flight does: an approval that turn waits for is
    /// denied at once (a drain, issue 34 item 2).
    pub(super) fn end_session(&self, by: SessionEnding) {
        self.stop.end_session(by);
    }

    /// Stops the turn in flight, if any, as `/stop` does, without queueing.
    pub fn stop_turn(&self) {
        self.stop.raise();
    }

    /// Answers the approval waiting for `call_id`.
    ///
    /// # Errors
    /// [`NotWaiting`] when no approval waits for that call.
    pub fn answer_approval(&self, call_id: &str, decision: Decision) -> Result<(), NotWaiting> {
        self.approvals.answer(call_id, decision)
    }

    /// Answers as [`SessionHandle::answer_approval`], naming who answered (issue 48: archived
    /// with the decision).
    ///
    /// # Errors
    /// As [`SessionHandle::answer_approval`].
    pub fn answer_approval_as(
        &self,
        call_id: &str,
        decision: Decision,
        by: Option<String>,
    ) -> Result<(), NotWaiting> {
        self.approvals.answer_as(call_id, decision, by)
    }

    /// The call ids whose approval waits for an answer.
    pub fn pending_approvals(&self) -> Vec<String> {
        self.approvals.pending()
    }

    /// The approvals waiting for an answer in full (call, tool, arguments, risk, authority,
    /// summary, deadline), soonest deadline first.
    pub fn approvals(&self) -> Vec<super::PendingApproval> {
        self.approvals.pending_in_full()
    }

    /// A page of the active session's stored records.
    ///
    /// # Errors
    /// As [`SessionHandle::turn`].
    pub async fn records(&self, offset: usize, limit: usize) -> Result<RecordsPage, RequestError> {
        let (reply, answer) = oneshot::channel();
        self.send(Request::Records {
            offset,
            limit,
            reply,
        })?;
        answer.await.map_err(|_| self.ended())
    }

    /// Ends the session: its end hooks run (SPEC P3.11), and the task stops.
    ///
    /// # Errors
    /// As [`SessionHandle::turn`].
    pub async fn close(&self) -> Result<Vec<HostEvent>, RequestError> {
        // An approval the turn in flight waits for is denied at once with a note, not left to
        // time out behind the close (issue 34 item 2).
        self.stop.end_session(SessionEnding::Close);
        self.ask(Request::Close).await
    }

    /// Whether the session's task has ended (closed, shut down, or dropped because another
    /// node took the session over).
    pub fn has_ended(&self) -> bool {
        self.requests.is_closed()
    }

    /// Waits until every request queued before this call has run (a hand-over's barrier).
    pub(super) async fn barrier(&self) {
        let (reply, answer) = oneshot::channel();
        let caller = tracing::Span::current();
        if self
            .requests
            .send((Request::Barrier(reply), caller))
            .await
            .is_ok()
        {
            let _ = answer.await;
        }
    }

    /// Whether the session is moving (or has moved) to the server that replaces this one.
    pub fn is_moving(&self) -> bool {
        self.moving.load(Ordering::Acquire)
    }

    /// Starts moving the session out: new turns and commands are refused from now on.
    pub(super) fn start_moving(&self) {
        self.moving.store(true, Ordering::Release);
    }

    /// Drops the turn waiting for an approval, leaving it stored as it waits (issue 49); false
    /// when no approval waits now.
    pub(super) fn detach_waiting_turn(&self) -> bool {
        if !self.approvals.detach() {
            return false;
        }
        self.detach.send_replace(true);
        true
    }

    fn admit(&self) -> Result<(), RequestError> {
        if self.moving.load(Ordering::Acquire) {
            Err(RequestError::Moving)
        } else if self.draining.load(Ordering::Acquire) {
            Err(RequestError::Draining)
        } else {
            Ok(())
        }
    }

    pub(super) async fn ask<T>(
        &self,
        request: impl FnOnce(Reply<T>) -> Request,
    ) -> Result<T, RequestError> {
        let (reply, answer) = oneshot::channel();
        self.send(request(reply))?;
        match answer.await {
            Ok(result) => result.map_err(RequestError::Host),
            Err(_) => Err(self.ended()),
        }
    }

    pub(super) fn send(&self, request: Request) -> Result<(), RequestError> {
        let caller = tracing::Span::current();
        self.requests
            .try_send((request, caller))
            .map_err(|e| match e {
                mpsc::error::TrySendError::Full(_) => RequestError::Busy(self.key.clone()),
                mpsc::error::TrySendError::Closed(_) => self.ended(),
            })
    }

    /// Why a request found the session's task gone: it moved to the server that replaced this
    /// one (issue 49: the request goes there), or it ended.
    fn ended(&self) -> RequestError {
        if self.is_moving() {
            RequestError::Moving
        } else {
            RequestError::Ended(self.key.clone())
        }
    }
}

/// The session's task: serves requests one at a time until closed, shut down, or every handle
/// is gone.
pub(super) async fn serve(
    mut conversation: Conversation,
    mut requests: mpsc::Receiver<(Request, tracing::Span)>,
    status: Arc<watch::Sender<SessionStatus>>,
    clock: Arc<dyn crate::session::Clock>,
    mut moved: Moved,
) {
    while let Some((request, caller)) = requests.recv().await {
        let turn = matches!(request, Request::Turn(..));
        if turn {
            // Cleared before the status says a turn runs: a `/stop` from a client that saw that
            // status reaches this turn (one raised while the session was idle does not).
            conversation.stop_signal().clear();
        }
        if !matches!(request, Request::Records { .. }) {
            status.send_modify(|s| s.activity = Activity::Turn);
        }
        let done = tracing::Instrument::instrument(
            handle(&mut conversation, request, &status, &mut moved),
            caller,
        )
        .await;
        let now = clock.now_ms();
        status.send_modify(|s| {
            s.activity = if done {
                Activity::Closed
            } else {
                Activity::Idle
            };
            s.last_activity_ms = now;
            refresh_status(s, &conversation);
        });
        if done {
            return;
        }
    }
    // Every handle is gone (the gateway dropped it): end the session like a close.
    let _ = conversation.close().await;
}

/// Copies what the status shows of the conversation: its active session, workspace, approval
/// mode, model (the provider's default when the session chose none), records, user turns (a
/// resumed session's stored ones included) and token usage.
pub(super) fn refresh_status(status: &mut SessionStatus, conversation: &Conversation) {
    status.session_id = conversation.active().map(|i| i.session_id.clone());
    status.workspace = conversation.workspace().display().to_string();
    status.approval_mode = conversation.approval_mode();
    status.model = conversation.model_name();
    status.records = conversation.records().len();
    status.turns = conversation.user_turns();
    status.usage = conversation.usage();
    status.usage_by_model = conversation.usage_by_model();
    status.owner = conversation.owner().cloned();
}

/// Whether a request failed because another node took the session over: the database refused
/// its writes (a newer fencing token exists), so this node must drop the session (issue 14
/// item 2).
fn lease_lost<T>(result: &Result<T, HostError>) -> bool {
    matches!(result, Err(HostError::Store(StoreError::LeaseLost { .. })))
}

/// Answers `reply`; when the lease was lost, drops the session (nothing of it is written here
/// again) and says the task is done.
///
/// The status shows the request's effect before the answer goes out: a client that reads the
/// status right after its turn or command sees the turn counted, the setting changed and the
/// session idle again.
async fn answer<T>(
    conversation: &mut Conversation,
    status: &watch::Sender<SessionStatus>,
    reply: Reply<T>,
    result: Result<T, HostError>,
) -> bool {
    let lost = lease_lost(&result);
    if lost {
        conversation.abandon().await;
    }
    status.send_modify(|s| {
        s.activity = if lost {
            Activity::Closed
        } else {
            Activity::Idle
        };
        refresh_status(s, conversation);
    });
    let _ = reply.send(result);
    lost
}

/// Handles one request; true when the session has ended.
async fn handle(
    conversation: &mut Conversation,
    request: Request,
    status: &watch::Sender<SessionStatus>,
    moved: &mut Moved,
) -> bool {
    if moved.gone && !matches!(request, Request::Records { .. } | Request::Shutdown { .. }) {
        // Its waiting turn was handed over: nothing more runs here (issue 49).
        refuse_moved(request);
        return false;
    }
    match request {
        Request::Turn(input, detail, reply) => {
            // Nothing a request before this one kept is counted twice.
            let _ = conversation.take_usage();
            conversation.set_detail(detail);
            let Some(result) = moved
                .unless_detached(conversation.run_user_turn(input))
                .await
            else {
                conversation.set_detail(Detail::Changes);
                status.send_modify(|s| s.activity = Activity::Idle);
                let _ = reply.send(Err(HostError::TurnMoved));
                return false;
            };
            // The detail is the request's: the next one starts from the default again.
            conversation.set_detail(Detail::Changes);
            let result = result.map(|stop_reason| TurnReport {
                session_id: conversation.active().map(|i| i.session_id.clone()),
                stop_reason,
                events: conversation.take_events(),
                usage: conversation.take_usage().reported(),
                model: conversation.model_name(),
            });
            return answer(conversation, status, reply, result).await;
        }
        Request::Command(command, origin, reply) => {
            // Issue 34: a command's model calls (`/compact`) count like a turn's.
            let _ = conversation.take_usage();
            let model = conversation.model_name();
            let result = match origin {
                Some(origin) => conversation.command_from(command, &origin).await,
                None => conversation.command(command).await,
            };
            let result = result.map(|()| CommandReport {
                events: conversation.take_events(),
                usage: conversation.take_usage().reported(),
                model,
            });
            return answer(conversation, status, reply, result).await;
        }
        Request::Inbound(message, reply) => {
            conversation.inbound(*message);
            let result = conversation.record_event_notes().await;
            let result = result.map(|()| conversation.take_events());
            return answer(conversation, status, reply, result).await;
        }
        Request::Records {
            offset,
            limit,
            reply,
        } => {
            let records = conversation.records();
            let _ = reply.send(RecordsPage {
                session_id: conversation.active().map(|i| i.session_id.clone()),
                total: records.len(),
                records: records.iter().skip(offset).take(limit).cloned().collect(),
            });
        }
        Request::Close(reply) => {
            let result = conversation.close().await;
            let _ = reply.send(result.map(|()| conversation.take_events()));
            return true;
        }
        Request::Shutdown {
            restart_expected,
            notes,
            reply,
        } => {
            let result = conversation
                .ended_by_shutdown(restart_expected, &notes)
                .await;
            let _ = reply.send(result.map(|()| conversation.take_events()));
            return true;
        }
        Request::Barrier(reply) => {
            let _ = reply.send(Ok(()));
        }
        Request::Note(note) => {
            // A store failure here has nobody to report to but the log.
            let result = conversation.record(note).await;
            if let Err(error) = &result {
                tracing::warn!(%error, "could not archive a drain note");
            }
            if lease_lost(&result) {
                conversation.abandon().await;
                return true;
            }
        }
    }
    false
}

/// Whether a session's waiting turn was handed over to the server that replaces this one
/// (issue 49), and the signal that says so.
pub(super) struct Moved {
    /// Raised by [`SessionHandle::detach_waiting_turn`].
    pub(super) detach: watch::Receiver<bool>,
    /// A turn was handed over: the conversation is left as stored, and only its end runs here.
    pub(super) gone: bool,
}

impl Moved {
    /// Runs `turn` unless its wait for an approval is handed over first: `None` then, the turn
    /// dropped where it waits (everything before the wait is stored, as for a crash there).
    pub(super) async fn unless_detached<T>(
        &mut self,
        turn: impl std::future::Future<Output = T>,
    ) -> Option<T> {
        let detached = self.detach.wait_for(|detached| *detached);
        let result = tokio::select! {
            biased;
            Ok(_) = detached => None,
            result = turn => Some(result),
        };
        self.gone |= result.is_none();
        result
    }
}

/// Answers a request the session cannot run any more: its turn moved to the new server.
fn refuse_moved(request: Request) {
    match request {
        Request::Turn(_, _, reply) => drop(reply.send(Err(HostError::SessionMoved))),
        Request::Command(_, _, reply) => drop(reply.send(Err(HostError::SessionMoved))),
        Request::Inbound(_, reply) | Request::Close(reply) => {
            drop(reply.send(Err(HostError::SessionMoved)));
        }
        Request::Barrier(reply) => drop(reply.send(Ok(()))),
        Request::Records { .. } | Request::Shutdown { .. } | Request::Note(_) => {}
    }
}

/// How long a shutdown waits for one session to archive its end.
pub const SESSION_SHUTDOWN_WAIT: Duration = Duration::from_secs(2);
