//! One soak session, run through the gateway as a client would run it: open, one inbound chat
//! message (`message:received`, queued), [`TURNS_PER_SESSION`] user turns whose model asks for
//! the demo's `word_count` tool, `/stop` (`command:stop`, awaited by `gateway-audit`),
//! `/compact` (both compaction hooks and `session:compact:*`), then close (the session-end
//! hooks). Every step is the gateway's own code: its hooks, its store writes, its events.

use hookline_messages::note::Note;
use hookline_messages::user::StopReason;

use hookline_host::gateway::{Gateway, OpenSession, RequestError, SessionHandle};
use hookline_host::producers::InboundMessage;
use hookline_host::session::SessionCommand;
use hookline_host::state::HostEvent;
use hookline_host::turn::UserInput;

/// The file the soak's tool call counts the words of.
pub(super) const NOTES_FILE: &str = "notes.txt";

/// User turns each soak session runs before `/stop`, `/compact` and close.
pub const TURNS_PER_SESSION: u64 = 2;

/// What one session produced: its notes in order, and what it got through.
#[derive(Debug, Default)]
pub(super) struct SessionRun {
    /// The notes its requests reported, in order.
    pub(super) notes: Vec<Note>,
    /// User turns that ran to [`StopReason::Completed`].
    pub(super) turns: u64,
    /// Whether it ran every step and closed.
    pub(super) completed: bool,
}

/// How a session ended early.
pub(super) enum Interrupted {
    /// The gateway began its shutdown: not a failure, the soak's own doing.
    Draining,
    /// A request failed (or a turn stopped for another reason than completing).
    Failed(SessionRun, String),
}

/// Opens a session; `None` once the gateway drains (an open the shutdown overtook fails on the
/// stopped pipeline: that is the drain too, not a failure).
pub(super) async fn open(gateway: &Gateway) -> Result<Option<SessionHandle>, String> {
    match gateway.open(OpenSession::default()).await {
        Ok(handle) => Ok(Some(handle)),
        Err(_) if gateway.is_draining() => Ok(None),
        Err(error) => Err(error.to_string()),
    }
}

/// Runs the session's steps on `handle` (already open) and closes it through the gateway (so
/// the gateway forgets it), also when a step failed.
pub(super) async fn run_session(
    gateway: &Gateway,
    handle: &SessionHandle,
) -> Result<SessionRun, Interrupted> {
    let mut s = Steps {
        gateway,
        handle,
        run: SessionRun::default(),
    };
    let outcome = s.all().await;
    if outcome.is_err() && !gateway.is_draining() {
        // Best effort: the failure is what the report shows.
        let _ = gateway.close(handle.key()).await;
    }
    match outcome {
        Ok(()) => {
            s.run.completed = true;
            Ok(s.run)
        }
        // A turn the drain stopped, or a request refused once the drain began.
        Err(_) if gateway.is_draining() => Err(Interrupted::Draining),
        Err(Step::Request(error)) => Err(Interrupted::Failed(s.run, error.to_string())),
        Err(Step::Stopped(reason)) => Err(Interrupted::Failed(
            s.run,
            format!("a turn stopped early: {reason:?}"),
        )),
    }
}

/// Why a step did not go through.
enum Step {
    Request(RequestError),
    /// The turn ended otherwise than completed.
    Stopped(StopReason),
}

impl From<RequestError> for Step {
    fn from(error: RequestError) -> Self {
        Self::Request(error)
    }
}

struct Steps<'a> {
    gateway: &'a Gateway,
    handle: &'a SessionHandle,
    run: SessionRun,
}

impl Steps<'_> {
    async fn all(&mut self) -> Result<(), Step> {
        let message = InboundMessage {
            from: "soak".into(),
            channel_id: "soak".into(),
            body: Some("hello".into()),
            ..InboundMessage::default()
        };
        let events = self.handle.inbound(message).await?;
        self.keep(&events);
        for turn in 0..TURNS_PER_SESSION {
            let text = format!(
                "turn {turn}: please count the words\ncall word_count {{\"path\":\"{NOTES_FILE}\"}}"
            );
            let report = self.handle.turn(UserInput::work(text)).await?;
            self.keep(&report.events);
            if report.stop_reason != StopReason::Completed {
                return Err(Step::Stopped(report.stop_reason));
            }
            self.run.turns += 1;
        }
        for command in [SessionCommand::Stop, SessionCommand::Compact] {
            let events = self.handle.command(command, None).await?;
            self.keep(&events);
        }
        let events = self.gateway.close(self.handle.key()).await?;
        self.keep(&events);
        Ok(())
    }

    fn keep(&mut self, events: &[HostEvent]) {
        self.run
            .notes
            .extend(events.iter().filter_map(|event| match event {
                HostEvent::Note { note, .. } => Some(note.clone()),
                _ => None,
            }));
    }
}
