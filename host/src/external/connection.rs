//! One running plugin process: the handshake, its [`Outbox`] (callers encode their requests into
//! it and the caller's own runtime flushes it, many lines per write), its [`Reader`] (a task that
//! matches reply ids, so many requests are in flight at once), and a lifecycle task that owns the
//! child and runs the bounded shutdown (goodbye, close stdin, terminate, kill).

use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use hookline_messages::note::SkipReason;
use hookline_messages::protocol::{
    Hello, HostMessage, PluginMessage, ReplyBody, RequestId, PROTOCOL_VERSION,
};
use tokio::io::BufReader;
use tokio::process::{Child, ChildStdout, Command};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::codec::{read_line, Line};
use super::faults::FaultLog;
use super::outbox::{Outbox, Refused};
use super::pending::Pending;
use super::reader::{Reader, READ_BUFFER};
use super::{stderr, ExternalConfig, StartError};

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
    outbox: Arc<Outbox>,
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
        let mut stdout = BufReader::with_capacity(READ_BUFFER, stdout);
        let hello = match handshake(&mut stdout, config).await {
            Ok(hello) => hello,
            Err(error) => {
                // Best effort: the process is of no use; kill_on_drop reaps it too.
                let _ = child.start_kill();
                return Err(error);
            }
        };
        let outbox = Outbox::new(stdin).map_err(StartError::Spawn)?;
        let pending = Arc::new(Mutex::new(Pending::default()));
        let reader = Reader {
            name: name.clone(),
            pending: pending.clone(),
            faults,
            cap: config.line_cap,
        };
        tokio::spawn(reader.run(stdout));
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

    /// Sends the request line `encode(id, line)` appends (newline included; `false`: it could
    /// not be encoded) and waits for its reply. Dropping the future (a timeout) gives the id up
    /// and sends a cancel for it.
    ///
    /// # Cancel safety
    /// Cancel safe: a dropped call leaves no waiter behind and tells the plugin.
    pub(crate) async fn request(
        &self,
        encode: impl FnOnce(RequestId, &mut Vec<u8>) -> bool,
    ) -> Result<ReplyBody, SkipReason> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let rx = lock(&self.pending).register(id)?;
        let mut guard = InFlight {
            connection: self,
            id,
            answered: false,
        };
        match self.outbox.send(|line| encode(id, line)).await {
            Ok(()) => {}
            Err(Refused::Closed) => return Err(SkipReason::Exited),
            Err(Refused::Unencodable) => return Err(SkipReason::Undecodable),
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
        let cancel = HostMessage::Cancel { id: self.id };
        let _ = self
            .connection
            .outbox
            .try_send(|line| encode_into(line, &cancel));
    }
}

/// Appends `message` and a newline to `line`; `false` when it does not encode.
pub(crate) fn encode_into(line: &mut Vec<u8>, message: &impl serde::Serialize) -> bool {
    let encoded = serde_json::to_writer(&mut *line, message).is_ok();
    line.push(b'\n');
    encoded
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

/// Owns the child: reports a crash when it ends on its own, or runs the bounded shutdown when
/// asked.
async fn lifecycle(
    mut child: Child,
    stop: oneshot::Receiver<()>,
    outbox: Arc<Outbox>,
    grace: Duration,
) -> Exit {
    tokio::select! {
        _ = child.wait() => return Exit::Crashed,
        _ = stop => {}
    }
    // Bounded: a plugin that stopped reading cannot hold the shutdown up.
    let goodbye = outbox.send(|line| encode_into(line, &HostMessage::Goodbye));
    let _ = tokio::time::timeout(grace, goodbye).await;
    outbox.close();
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
