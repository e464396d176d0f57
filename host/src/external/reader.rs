//! The read side of one plugin process: a task, started with the process on the runtime that
//! started it, that reads the replies and hands each to its caller (ids matched in [`Pending`],
//! so many calls are in flight at once).
//!
//! It reads a pipe's worth at a time ([`READ_BUFFER`]): a burst of replies (a plugin answering
//! many sessions' calls in one write) is one `read`, and the callers it completes are woken
//! together (their plugin actor then sends them on as one batch).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use hookline_messages::note::SkipReason;
use hookline_messages::protocol::{ReplyBody, RequestId};
use tokio::io::AsyncBufRead;

use super::codec::{read_line, Line};
use super::faults::FaultLog;
use super::pending::{Matched, Pending};
use super::reply::decode_reply;

/// The read buffer of a plugin's stdout: a whole pipe's worth on Linux (64 KiB).
pub(crate) const READ_BUFFER: usize = 64 * 1024;

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Never held across an await or a panic point; recover the data either way.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// One process's reader: where replies go, and where faults are pinned.
pub(crate) struct Reader {
    pub(crate) name: Arc<str>,
    pub(crate) pending: Arc<Mutex<Pending>>,
    pub(crate) faults: Arc<FaultLog>,
    pub(crate) cap: usize,
}

impl Reader {
    /// Reads replies from `stdout` until it ends and hands each to its caller. A fault that
    /// cannot be pinned on one request fails every request in flight, and the bad output is
    /// dropped. A second reply to an answered request is pinned on the plugin (`faults`) and
    /// fails nothing: the calls in flight are innocent.
    ///
    /// A run of lines that are not the protocol (or are over the cap), with no reply between
    /// them, is one fault: it fails the requests in flight when the run began, and the rest of
    /// the run is dropped without failing requests sent meanwhile. A flood is written in one go,
    /// before the plugin reads the next request, so failing that request for it would make one
    /// flood cost calls that came after it, depending on how fast the host drains the pipe. A
    /// request the plugin never answers still ends at its timeout.
    pub(crate) async fn run(self, mut stdout: impl AsyncBufRead + Unpin) {
        let mut in_bad_run = false;
        loop {
            let fault = match read_line(&mut stdout, self.cap).await {
                Line::End => {
                    lock(&self.pending).close(SkipReason::Exited);
                    return;
                }
                Line::TooLong => SkipReason::LineTooLong {
                    limit: self.cap as u64,
                },
                Line::Text(text) => match decode_reply(&text) {
                    None => SkipReason::NotProtocol,
                    Some((id, body)) => {
                        // Any reply ends a run of bad lines.
                        in_bad_run = false;
                        match self.complete(id, body) {
                            Some(fault) => fault,
                            None => continue,
                        }
                    }
                },
            };
            let unpinned = matches!(
                fault,
                SkipReason::NotProtocol | SkipReason::LineTooLong { .. }
            );
            if unpinned && in_bad_run {
                tracing::debug!(plugin = %self.name, "dropped plugin output: {fault}");
                continue;
            }
            in_bad_run = unpinned;
            tracing::warn!(plugin = %self.name, "dropped plugin output: {fault}");
            lock(&self.pending).fail_all(&fault);
        }
    }

    /// Hands a reply to its caller; returns the fault that fails the requests in flight (a
    /// reply with an id never given), if any.
    fn complete(&self, id: RequestId, body: ReplyBody) -> Option<SkipReason> {
        let name = &self.name;
        let matched = lock(&self.pending).complete(id, body);
        match matched {
            Matched::Delivered => None,
            Matched::Late => {
                tracing::warn!(plugin = %name, id, "dropped a reply that came after its timeout");
                None
            }
            Matched::Repeated => {
                tracing::warn!(plugin = %name, id, "dropped a second reply to one request");
                self.faults.record(name, SkipReason::RepeatedReplyId);
                None
            }
            Matched::Unknown => Some(SkipReason::UnknownReplyId),
        }
    }
}
