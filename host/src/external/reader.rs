//! The read side of one plugin process: a task that reads the replies and hands each to its
//! caller (ids matched in [`Pending`], so many calls are in flight at once).
//!
//! The task starts with the connection's first request. By default it runs where the process
//! was started (its home). With [`READER_PLACEMENT_ENV`] set to `caller` it runs on the runtime
//! of that first request instead (issue 35): a pipeline's plugin actors call from their shard's
//! thread, and a reply then wakes that thread itself, with no hop through the home thread. That
//! was measured no faster for one call and slower with 100 sessions in flight (every reader of
//! a pipeline lands on the one shard that made the first call, which then reads and parses for
//! both; docs/performance.md), so it is not the default. The pipe is registered with the
//! reader's own runtime. If that runtime ends while the process lives on (a pipeline stopped, its
//! plugins kept), the reader parks the pipe with the bytes it had read, and goes on at home.

use std::io::Cursor;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use hookline_messages::note::SkipReason;
use hookline_messages::protocol::{PluginMessage, ReplyBody, RequestId};
use tokio::io::{AsyncReadExt, BufReader, Chain};
use tokio::net::unix::pipe;
use tokio::process::ChildStdout;
use tokio::runtime::Handle;

use super::codec::{read_line, Line};
use super::faults::FaultLog;
use super::pending::{Matched, Pending};

/// What the reader reads from: the bytes read before it (a run elsewhere, the handshake), then
/// the pipe.
type Stream = BufReader<Chain<Cursor<Vec<u8>>, pipe::Receiver>>;

/// The pipe and the bytes read from it, between two runs of the reader.
struct Parked {
    fd: OwnedFd,
    read_ahead: Vec<u8>,
    in_bad_run: bool,
}

/// Set to `caller` to run each reader on the runtime of its connection's first request rather
/// than where its process started (the default), for an A/B of the two placements in one build.
pub const READER_PLACEMENT_ENV: &str = "HOOKLINE_EXTERNAL_READER";

/// One process's stdout and where its reader stands.
pub(crate) struct ReadSide {
    parked: Mutex<Option<Parked>>,
    home: Handle,
    /// The reader runs at home whoever calls first (unless [`READER_PLACEMENT_ENV`] says
    /// `caller`).
    at_home: bool,
    name: Arc<str>,
    pending: Arc<Mutex<Pending>>,
    faults: Arc<FaultLog>,
    cap: usize,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Never held across an await or a panic point; recover the data either way.
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ReadSide {
    /// The read side of a process whose handshake `stdout` has read; the reader starts with the
    /// first [`ReadSide::start_here`]. Call it on the runtime that started the process (its
    /// home).
    ///
    /// # Errors
    /// The pipe could not be taken from the child.
    pub(crate) fn new(
        name: Arc<str>,
        stdout: BufReader<ChildStdout>,
        pending: Arc<Mutex<Pending>>,
        faults: Arc<FaultLog>,
        cap: usize,
    ) -> std::io::Result<Arc<Self>> {
        let read_ahead = stdout.buffer().to_vec();
        let fd = stdout.into_inner().into_owned_fd()?;
        Ok(Arc::new(Self {
            parked: Mutex::new(Some(Parked {
                fd,
                read_ahead,
                in_bad_run: false,
            })),
            home: Handle::current(),
            at_home: std::env::var_os(READER_PLACEMENT_ENV).is_none_or(|v| v != "caller"),
            name,
            pending,
            faults,
            cap,
        }))
    }

    /// Starts the reader (at home, or on the caller's runtime; see [`READER_PLACEMENT_ENV`]),
    /// unless it runs already.
    pub(crate) fn start_here(self: &Arc<Self>) {
        let Some(parked) = lock(&self.parked).take() else {
            return;
        };
        let handle = match Handle::try_current() {
            Ok(here) if !self.at_home => here,
            _ => self.home.clone(),
        };
        handle.spawn(self.clone().run(parked));
    }

    async fn run(self: Arc<Self>, parked: Parked) {
        let receiver = match pipe::Receiver::from_owned_fd(parked.fd) {
            Ok(receiver) => receiver,
            Err(error) => {
                tracing::warn!(plugin = %self.name, "cannot read the plugin's output: {error}");
                return lock(&self.pending).close(SkipReason::Exited);
            }
        };
        let mut reading = Reading {
            stream: Some(BufReader::new(
                Cursor::new(parked.read_ahead).chain(receiver),
            )),
            in_bad_run: parked.in_bad_run,
            side: self,
        };
        reading.read_all().await;
        // The stream ended: nothing to park.
        reading.stream = None;
    }
}

/// A run of the reader; dropped unfinished (its runtime ended), it parks the pipe and starts
/// again at home.
struct Reading {
    side: Arc<ReadSide>,
    stream: Option<Stream>,
    in_bad_run: bool,
}

impl Drop for Reading {
    fn drop(&mut self) {
        let Some(stream) = self.stream.take() else {
            return;
        };
        // Stream order: what the buffer holds, then the rest of the bytes read before, then the
        // pipe. A line cut in two at this moment is lost (the next read sees its tail, which is
        // not the protocol).
        let mut read_ahead = stream.buffer().to_vec();
        let (before, receiver) = stream.into_inner().into_inner();
        let position = usize::try_from(before.position()).unwrap_or(usize::MAX);
        read_ahead.extend_from_slice(before.get_ref().get(position..).unwrap_or_default());
        match receiver.into_nonblocking_fd() {
            Ok(fd) => {
                *lock(&self.side.parked) = Some(Parked {
                    fd,
                    read_ahead,
                    in_bad_run: self.in_bad_run,
                });
                let side = self.side.clone();
                side.home.clone().spawn(async move { side.start_here() });
            }
            // The pipe is closed with it: the process's next write fails and it ends; the
            // supervisor restarts it and the calls in flight end at their timeouts.
            Err(error) => {
                tracing::warn!(plugin = %self.side.name, "lost the plugin's output: {error}");
            }
        }
    }
}

impl Reading {
    /// Reads replies and hands each to its caller. A fault that cannot be pinned on one request
    /// fails every request in flight, and the bad output is dropped. A second reply to an
    /// answered request is pinned on the plugin (`faults`) and fails nothing: the calls in
    /// flight are innocent.
    ///
    /// A run of lines that are not the protocol (or are over the cap), with no reply between
    /// them, is one fault: it fails the requests in flight when the run began, and the rest of
    /// the run is dropped without failing requests sent meanwhile. A flood is written in one go,
    /// before the plugin reads the next request, so failing that request for it would make one
    /// flood cost calls that came after it, depending on how fast the host drains the pipe. A
    /// request the plugin never answers still ends at its timeout.
    async fn read_all(&mut self) {
        let (name, cap) = (self.side.name.clone(), self.side.cap);
        loop {
            let Some(stream) = self.stream.as_mut() else {
                return;
            };
            let fault = match read_line(stream, cap).await {
                Line::End => {
                    lock(&self.side.pending).close(SkipReason::Exited);
                    return;
                }
                Line::TooLong => SkipReason::LineTooLong { limit: cap as u64 },
                Line::Text(text) => match serde_json::from_slice::<PluginMessage>(&text)
                    .ok()
                    .and_then(PluginMessage::into_reply)
                {
                    None => SkipReason::NotProtocol,
                    Some((id, body)) => match self.complete_ending_run(id, body) {
                        Matched::Delivered => continue,
                        Matched::Late => {
                            tracing::warn!(plugin = %name, id, "dropped a reply that came after its timeout");
                            continue;
                        }
                        Matched::Repeated => {
                            tracing::warn!(plugin = %name, id, "dropped a second reply to one request");
                            self.side.faults.record(&name, SkipReason::RepeatedReplyId);
                            continue;
                        }
                        Matched::Unknown => SkipReason::UnknownReplyId,
                    },
                },
            };
            let unpinned = matches!(
                fault,
                SkipReason::NotProtocol | SkipReason::LineTooLong { .. }
            );
            if unpinned && self.in_bad_run {
                tracing::debug!(plugin = %name, "dropped plugin output: {fault}");
                continue;
            }
            self.in_bad_run = unpinned;
            tracing::warn!(plugin = %name, "dropped plugin output: {fault}");
            lock(&self.side.pending).fail_all(&fault);
        }
    }

    /// Hands a reply to its caller; any reply ends a run of bad lines.
    fn complete_ending_run(&mut self, id: RequestId, body: ReplyBody) -> Matched {
        self.in_bad_run = false;
        lock(&self.side.pending).complete(id, body)
    }
}
