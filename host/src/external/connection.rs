//! One running plugin process: the handshake, a writer task that coalesces writes, a reader task
//! that matches reply ids (so many requests are in flight at once), and a lifecycle task that owns
//! the child and runs the bounded shutdown (goodbye, close stdin, terminate, kill).

use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use hookline_messages::note::SkipReason;
use hookline_messages::protocol::{
    Hello, HostMessage, PluginMessage, ReplyBody, RequestId, PROTOCOL_VERSION,
};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::codec::{read_line, Line};
use super::faults::FaultLog;
use super::pending::{Matched, Pending};
use super::{stderr, ExternalConfig, StartError};

/// How many lines may wait for the writer task. Callers wait (under their deadline) beyond it.
const OUTBOX_CAPACITY: usize = 1024;
/// The writer stops gathering lines into one write at this size.
const MAX_COALESCED_BYTES: usize = 256 * 1024;

enum Outgoing {
    Line(Vec<u8>),
    Close,
}

/// How a process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exit {
    /// The host asked it to stop.
    Requested,
    /// It ended on its own: a crash.
    Crashed,
}

/// A live plugin process and its three tasks.
pub(crate) struct Connection {
    name: Arc<str>,
    outbox: mpsc::Sender<Outgoing>,
    pending: Arc<Mutex<Pending>>,
    next_id: AtomicU64,
    stop: Mutex<Option<oneshot::Sender<()>>>,
}

fn lock(pending: &Mutex<Pending>) -> MutexGuard<'_, Pending> {
    // The lock is never held across an await or a panic point; recover the data either way.
    pending.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Connection {
    /// Starts the process and completes the handshake. Returns the connection, the plugin's hello
    /// and the lifecycle task, which ends with how the process ended.
    pub(crate) async fn start(
        config: &ExternalConfig,
        faults: Arc<FaultLog>,
    ) -> Result<(Arc<Self>, Hello, JoinHandle<Exit>), StartError> {
        let mut child = spawn(config)?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(StartError::Spawn(std::io::Error::other(
                "a pipe was not opened",
            )));
        };
        let name: Arc<str> = config.name.as_str().into();
        tokio::spawn(stderr::forward(name.clone(), stderr, config.echo_stderr));
        let mut stdout = BufReader::new(stdout);
        let hello = match handshake(&mut stdout, config).await {
            Ok(hello) => hello,
            Err(error) => {
                // Best effort: the process is of no use; kill_on_drop reaps it too.
                let _ = child.start_kill();
                return Err(error);
            }
        };
        let (outbox, rx) = mpsc::channel(OUTBOX_CAPACITY);
        tokio::spawn(write_lines(stdin, rx));
        let pending = Arc::new(Mutex::new(Pending::default()));
        tokio::spawn(read_replies(
            name.clone(),
            stdout,
            pending.clone(),
            faults,
            config.line_cap,
        ));
        let (stop, stop_rx) = oneshot::channel();
        let lifecycle = tokio::spawn(lifecycle(
            child,
            stop_rx,
            outbox.clone(),
            config.shutdown_grace,
        ));
        let connection = Self {
            name,
            outbox,
            pending,
            next_id: AtomicU64::new(1),
            stop: Mutex::new(Some(stop)),
        };
        Ok((Arc::new(connection), hello, lifecycle))
    }

    /// Sends the request `build(id)` and waits for its reply. Dropping the future (a timeout)
    /// gives the id up and sends a cancel for it.
    ///
    /// # Cancel safety
    /// Cancel safe: a dropped call leaves no waiter behind and tells the plugin.
    pub(crate) async fn request(
        &self,
        build: impl FnOnce(RequestId) -> HostMessage,
    ) -> Result<ReplyBody, SkipReason> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let rx = lock(&self.pending).register(id)?;
        let mut guard = InFlight {
            connection: self,
            id,
            answered: false,
        };
        let line = encode(&build(id));
        if self.outbox.send(Outgoing::Line(line)).await.is_err() {
            return Err(SkipReason::Exited);
        }
        let answer = rx.await.unwrap_or(Err(SkipReason::Exited));
        guard.answered = true;
        answer
    }

    /// Whether the process's output has ended (it is exiting; the supervisor will notice).
    pub(crate) fn is_closed(&self) -> bool {
        lock(&self.pending).is_closed()
    }

    /// How many requests are in flight.
    pub(crate) fn in_flight(&self) -> usize {
        lock(&self.pending).in_flight()
    }

    /// Asks the lifecycle task to shut the process down; it reports [`Exit::Requested`].
    pub(crate) fn request_stop(&self) {
        let stop = self
            .stop
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(stop) = stop {
            // The process may have ended already; then there is nothing to stop.
            let _ = stop.send(());
        }
    }
}

/// Gives an unanswered id up when its caller stops waiting, and tells the plugin.
struct InFlight<'a> {
    connection: &'a Connection,
    id: RequestId,
    answered: bool,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if self.answered || !lock(&self.connection.pending).give_up(self.id) {
            return;
        }
        tracing::debug!(plugin = %self.connection.name, id = self.id, "cancelling request");
        // A full outbox or a gone process: the cancel is advisory, the late reply is dropped anyway.
        let cancel = encode(&HostMessage::Cancel { id: self.id });
        let _ = self.connection.outbox.try_send(Outgoing::Line(cancel));
    }
}

fn encode(message: &HostMessage) -> Vec<u8> {
    // Host messages hold only strings, numbers and JSON values: encoding cannot fail.
    let mut line = serde_json::to_vec(message).unwrap_or_default();
    line.push(b'\n');
    line
}

fn spawn(config: &ExternalConfig) -> Result<Child, StartError> {
    let mut command = Command::new(&config.program);
    command
        .args(&config.args)
        .current_dir(&config.dir)
        .env_clear()
        .envs(config.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command.spawn().map_err(StartError::Spawn)
}

async fn handshake(
    stdout: &mut BufReader<ChildStdout>,
    config: &ExternalConfig,
) -> Result<Hello, StartError> {
    let first = tokio::time::timeout(config.hello_timeout, read_line(stdout, config.line_cap))
        .await
        .map_err(|_| StartError::NoHello(config.hello_timeout))?;
    let text = match first {
        Line::Text(text) => text,
        Line::TooLong => return Err(StartError::BadHello("the line is too long".into())),
        Line::End => return Err(StartError::ExitedBeforeHello),
    };
    match serde_json::from_slice::<PluginMessage>(&text) {
        Ok(PluginMessage::Hello(hello)) if hello.is_compatible() => Ok(hello),
        Ok(PluginMessage::Hello(hello)) => Err(StartError::IncompatibleVersion {
            found: hello.protocol,
            expected: PROTOCOL_VERSION,
        }),
        Ok(_) => Err(StartError::BadHello(
            "the first line is a reply, not a hello".into(),
        )),
        Err(error) => Err(StartError::BadHello(error.to_string())),
    }
}

/// Writes queued lines, gathering whatever else is queued into the same write (one wake-up of
/// the plugin for many requests).
async fn write_lines(mut stdin: ChildStdin, mut rx: mpsc::Receiver<Outgoing>) {
    let mut buffer = Vec::new();
    while let Some(first) = rx.recv().await {
        let mut close = false;
        let mut next = Some(first);
        while let Some(item) = next.take() {
            match item {
                Outgoing::Line(line) => buffer.extend_from_slice(&line),
                Outgoing::Close => close = true,
            }
            if !close && buffer.len() < MAX_COALESCED_BYTES {
                next = rx.try_recv().ok();
            }
        }
        let written = stdin.write_all(&buffer).await.and(stdin.flush().await);
        buffer.clear();
        if close || written.is_err() {
            break;
        }
    }
    // Dropping stdin closes it: the plugin sees end of input.
}

/// Reads replies and hands each to its caller. A fault that cannot be pinned on one request fails
/// every request in flight, and the bad output is dropped. A second reply to an answered request
/// is pinned on the plugin (`faults`) and fails nothing: the calls in flight are innocent.
///
/// A run of lines that are not the protocol (or are over the cap), with no reply between them, is
/// one fault: it fails the requests in flight when the run began, and the rest of the run is
/// dropped without failing requests sent meanwhile. A flood is written in one go, before the
/// plugin reads the next request, so failing that request for it would make one flood cost calls
/// that came after it, depending on how fast the host drains the pipe. A request the plugin never
/// answers still ends at its timeout.
async fn read_replies(
    name: Arc<str>,
    mut stdout: BufReader<ChildStdout>,
    pending: Arc<Mutex<Pending>>,
    faults: Arc<FaultLog>,
    cap: usize,
) {
    let mut in_bad_run = false;
    loop {
        let fault = match read_line(&mut stdout, cap).await {
            Line::End => {
                lock(&pending).close(SkipReason::Exited);
                return;
            }
            Line::TooLong => SkipReason::LineTooLong { limit: cap as u64 },
            Line::Text(text) => match serde_json::from_slice::<PluginMessage>(&text)
                .ok()
                .and_then(PluginMessage::into_reply)
            {
                None => SkipReason::NotProtocol,
                Some((id, body)) => {
                    match complete_ending_run(&pending, &mut in_bad_run, id, body) {
                        Matched::Delivered => continue,
                        Matched::Late => {
                            tracing::warn!(plugin = %name, id, "dropped a reply that came after its timeout");
                            continue;
                        }
                        Matched::Repeated => {
                            tracing::warn!(plugin = %name, id, "dropped a second reply to one request");
                            faults.record(&name, SkipReason::RepeatedReplyId);
                            continue;
                        }
                        Matched::Unknown => SkipReason::UnknownReplyId,
                    }
                }
            },
        };
        let unpinned = matches!(
            fault,
            SkipReason::NotProtocol | SkipReason::LineTooLong { .. }
        );
        if unpinned && in_bad_run {
            tracing::debug!(plugin = %name, "dropped plugin output: {fault}");
            continue;
        }
        in_bad_run = unpinned;
        tracing::warn!(plugin = %name, "dropped plugin output: {fault}");
        lock(&pending).fail_all(&fault);
    }
}

/// Hands a reply to its caller; any reply ends a run of bad lines.
fn complete_ending_run(
    pending: &Mutex<Pending>,
    in_bad_run: &mut bool,
    id: RequestId,
    body: ReplyBody,
) -> Matched {
    *in_bad_run = false;
    lock(pending).complete(id, body)
}

/// Owns the child: reports a crash when it ends on its own, or runs the bounded shutdown when
/// asked.
async fn lifecycle(
    mut child: Child,
    stop: oneshot::Receiver<()>,
    outbox: mpsc::Sender<Outgoing>,
    grace: Duration,
) -> Exit {
    tokio::select! {
        _ = child.wait() => return Exit::Crashed,
        _ = stop => {}
    }
    let goodbye = async {
        // Each send is bounded: a plugin that stopped reading cannot hold the shutdown up.
        let _ = outbox
            .send(Outgoing::Line(encode(&HostMessage::Goodbye)))
            .await;
        let _ = outbox.send(Outgoing::Close).await;
    };
    let _ = tokio::time::timeout(grace, goodbye).await;
    if tokio::time::timeout(grace, child.wait()).await.is_ok() {
        return Exit::Requested;
    }
    if let Some(pid) = child.id() {
        super::signal::terminate(pid);
        if tokio::time::timeout(grace, child.wait()).await.is_ok() {
            return Exit::Requested;
        }
    }
    let _ = child.start_kill();
    let _ = tokio::time::timeout(grace, child.wait()).await;
    Exit::Requested
}
