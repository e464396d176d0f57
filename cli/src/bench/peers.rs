//! The actor designs hookline is measured against in the same run, with the same appenders
//! (docs/performance.md, "The reference workload and the reference designs"): each plugin an
//! actix actor on the caller's arbiter, the value moved from hop to hop, no rules, no notes, no
//! timeouts.
//!
//! - [`Peer::Naive`]: the caller awaits `send` to each plugin actor in turn (a request and its
//!   reply per plugin).
//! - [`Peer::Relay`]: each plugin actor hands the value straight to the next; the last answers
//!   the caller's oneshot (one one-way hop per plugin).
//! - [`Peer::BatchedRelay`]: the best actor design measured (the batched relay of
//!   docs/performance.md's reference designs): a caller hands one message carrying
//!   [`PEER_BATCH`] sessions' values and one reply channel for all of them; each actor runs its
//!   appender over every value in place and forwards the same vector one-way; the last answers.
//!   Per call nothing is allocated by the chain; per batch, one envelope per hop and one reply.

use std::time::{Duration, Instant};

use futures::future::join_all;

use actix::dev::SendError;
use actix::{Actor, Addr, Context, Handler, Message, MessageResult};
use hookline_messages::session::SessionId;
use hookline_messages::user::UserMessage;
use tokio::sync::oneshot;

use super::driver::{closed_loop, nanos, new_histogram, Measured};
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
    /// As the relay, with [`PEER_BATCH`] sessions' values carried per message.
    BatchedRelay,
}

/// Calls per message of the batched relay peer (16 callers of 64 keep 1,024 in flight).
pub const PEER_BATCH: usize = 64;

impl Peer {
    /// The peer's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Naive => "naive actix chain",
            Self::Relay => "actix relay chain",
            Self::BatchedRelay => "batched actix relay",
        }
    }

    /// Every peer, in the order reports list them.
    pub const ALL: [Peer; 3] = [Peer::Naive, Peer::Relay, Peer::BatchedRelay];
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

/// The batched relay's hand-off: every value of the batch appended in place, then passed on.
struct PassBatch {
    messages: Vec<UserMessage>,
    reply: oneshot::Sender<Vec<UserMessage>>,
}

impl Message for PassBatch {
    type Result = ();
}

impl Handler<PassBatch> for AppendActor {
    type Result = ();

    fn handle(&mut self, mut pass: PassBatch, _: &mut Self::Context) {
        for message in &mut pass.messages {
            let taken = std::mem::replace(message, UserMessage::new(String::new()));
            *message = DirectAppender::on_user_message(&self.appender, taken);
        }
        match &self.next {
            None => {
                let _ = pass.reply.send(pass.messages);
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
            if peer != Peer::Naive {
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
            Peer::BatchedRelay => {
                self.call_batch(1).await?;
                return Ok(());
            }
        };
        std::hint::black_box(message);
        Ok(())
    }

    /// One batch of `size` calls through a batched relay chain (one call at a time through the
    /// other peers). Returns the calls made.
    ///
    /// # Errors
    /// When an actor has stopped.
    pub async fn call_batch(&self, size: usize) -> Result<usize, String> {
        if self.peer != Peer::BatchedRelay {
            for _ in 0..size {
                Box::pin(self.call()).await?;
            }
            return Ok(size);
        }
        let Some(first) = self.actors.first() else {
            return Ok(size);
        };
        let messages = (0..size).map(|_| UserMessage::new(PAYLOAD)).collect();
        let (reply, answer) = oneshot::channel();
        if let Err(SendError::Full(pass)) = first.try_send(PassBatch { messages, reply }) {
            first.do_send(pass);
        }
        let done = answer.await.map_err(|e| e.to_string())?;
        let made = done.len();
        std::hint::black_box(done);
        Ok(made)
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
    if peer == Peer::BatchedRelay {
        return batched_closed_loop(&chain, sessions.len(), duration).await;
    }
    closed_loop(sessions, duration, &(), |_| chain.call()).await
}

/// The batched relay's closed loop: `sessions` calls in flight as callers of [`PEER_BATCH`],
/// each sending its next batch when the last one is answered; every call of a batch is recorded
/// with the batch's latency.
async fn batched_closed_loop(
    chain: &PeerChain,
    sessions: usize,
    duration: Duration,
) -> Result<Measured, String> {
    let histogram = std::cell::RefCell::new(new_histogram());
    let started = Instant::now();
    let deadline = started + duration;
    let sizes = batch_sizes(sessions.max(1), PEER_BATCH);
    let callers = sizes.iter().map(|size| {
        let histogram = &histogram;
        async move {
            let mut calls = 0u64;
            let mut sent = Instant::now();
            while sent < deadline {
                let made = chain.call_batch(*size).await?;
                let ended = Instant::now();
                let _ = histogram
                    .borrow_mut()
                    .record_n(nanos(ended - sent), made as u64);
                sent = ended;
                calls += made as u64;
            }
            Ok::<u64, String>(calls)
        }
    });
    let calls = join_all(callers)
        .await
        .into_iter()
        .sum::<Result<u64, _>>()?;
    let elapsed = started.elapsed();
    let histogram = histogram.into_inner();
    Ok(Measured {
        histogram,
        calls,
        shed: 0,
        elapsed,
    })
}

/// `total` split into batches of at most `size`, as even as can be.
pub(super) fn batch_sizes(total: usize, size: usize) -> Vec<usize> {
    let batches = total.div_ceil(size.max(1)).max(1);
    (0..batches)
        .map(|i| total / batches + usize::from(i < total % batches))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::batch_sizes;

    #[test]
    fn batches_cover_the_sessions_and_stay_within_the_size() {
        assert_eq!(batch_sizes(1000, 64).iter().sum::<usize>(), 1000);
        assert!(batch_sizes(1000, 64).iter().all(|s| *s <= 64 && *s >= 62));
        assert_eq!(batch_sizes(1, 64), [1]);
        assert_eq!(batch_sizes(128, 64), [64, 64]);
    }
}
