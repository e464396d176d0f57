//! The actor designs hookline is measured against in the same run, with the same appenders
//! (`../shared/PERFORMANCE-NOTES.md`): each plugin an actix actor on the caller's arbiter, the
//! value moved from hop to hop, no rules, no notes, no timeouts.
//!
//! - [`Peer::Naive`]: the caller awaits `send` to each plugin actor in turn (a request and its
//!   reply per plugin).
//! - [`Peer::Relay`]: each plugin actor hands the value straight to the next; the last answers
//!   the caller's oneshot (one one-way hop per plugin).

use std::time::Duration;

use actix::dev::SendError;
use actix::{Actor, Addr, Context, Handler, Message, MessageResult};
use hookline_messages::session::SessionId;
use hookline_messages::user::UserMessage;
use tokio::sync::oneshot;

use super::driver::{closed_loop, Measured};
use super::workload::{Appender, DirectAppender, PAYLOAD};

/// The peers' mailbox capacity: room for every call in flight, so a full mailbox never parks a
/// sender (actix's default of 16 would, and slow the peers down).
const PEER_MAILBOX_CAPACITY: usize = 4096;

/// Which peer design.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    /// The caller awaits `send` to each plugin actor in turn.
    Naive,
    /// Each plugin actor hands the value to the next; the last answers.
    Relay,
}

impl Peer {
    /// The peer's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Naive => "naive actix chain",
            Self::Relay => "actix relay chain",
        }
    }
}

/// One appender as an actor.
struct AppendActor {
    appender: Appender,
    next: Option<Addr<AppendActor>>,
}

impl Actor for AppendActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(PEER_MAILBOX_CAPACITY);
    }
}

/// The naive peer's request: append, and answer with the value.
struct Append(UserMessage);

impl Message for Append {
    type Result = UserMessage;
}

impl Handler<Append> for AppendActor {
    type Result = MessageResult<Append>;

    fn handle(&mut self, Append(message): Append, _: &mut Self::Context) -> Self::Result {
        MessageResult(self.appender.on_user_message(message))
    }
}

/// The relay peer's hand-off: append, then pass on (or answer, at the end of the chain).
struct Pass {
    message: UserMessage,
    reply: oneshot::Sender<UserMessage>,
}

impl Message for Pass {
    type Result = ();
}

impl Handler<Pass> for AppendActor {
    type Result = ();

    fn handle(&mut self, pass: Pass, _: &mut Self::Context) {
        let message = self.appender.on_user_message(pass.message);
        let pass = Pass {
            message,
            reply: pass.reply,
        };
        match &self.next {
            None => {
                let _ = pass.reply.send(pass.message);
            }
            Some(next) => {
                if let Err(SendError::Full(pass)) = next.try_send(pass) {
                    next.do_send(pass);
                }
            }
        }
    }
}

/// A started peer chain of `plugins` appenders on the current arbiter.
pub struct PeerChain {
    peer: Peer,
    actors: Vec<Addr<AppendActor>>,
}

impl PeerChain {
    /// Starts the chain's actors on the current arbiter.
    pub fn start(peer: Peer, plugins: usize) -> Self {
        let mut next = None;
        let mut actors = Vec::with_capacity(plugins);
        for index in (0..plugins).rev() {
            let addr = AppendActor {
                appender: Appender::new(index),
                next: next.take(),
            }
            .start();
            if peer == Peer::Relay {
                next = Some(addr.clone());
            }
            actors.push(addr);
        }
        actors.reverse();
        Self { peer, actors }
    }

    /// One call through the chain.
    ///
    /// # Errors
    /// When an actor has stopped.
    pub async fn call(&self) -> Result<(), String> {
        let message = UserMessage::new(PAYLOAD);
        let message = match self.peer {
            Peer::Naive => {
                let mut message = message;
                for actor in &self.actors {
                    message = actor
                        .send(Append(message))
                        .await
                        .map_err(|e| e.to_string())?;
                }
                message
            }
            Peer::Relay => {
                let Some(first) = self.actors.first() else {
                    return Ok(());
                };
                let (reply, answer) = oneshot::channel();
                if let Err(SendError::Full(pass)) = first.try_send(Pass { message, reply }) {
                    first.do_send(pass);
                }
                answer.await.map_err(|e| e.to_string())?
            }
        };
        std::hint::black_box(message);
        Ok(())
    }
}

/// Runs `sessions` sessions through a `peer` chain of `plugins` appenders on the current arbiter,
/// closed loop, for `duration`.
///
/// # Errors
/// When an actor stopped.
pub async fn run_peer(
    peer: Peer,
    plugins: usize,
    sessions: &[SessionId],
    duration: Duration,
) -> Result<Measured, String> {
    let chain = PeerChain::start(peer, plugins);
    closed_loop(sessions, duration, &(), |_| chain.call()).await
}
