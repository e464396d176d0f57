//! The lines waiting to be written to one plugin's stdin, and the flush that writes them (issue
//! 35). A caller encodes its request straight into the shared queue (no line of its own, no
//! channel) and, when no flush is under way, starts one as a task on its own runtime: the write
//! happens on the caller's thread right after the caller yields, with no wake-up of another
//! thread, and every line queued meanwhile (the other calls of a batch, other sessions' calls)
//! leaves in the same write. A flush writes until the queue is empty, waiting for the pipe only
//! when it is full.

use std::io;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::net::unix::pipe;
use tokio::process::ChildStdin;
use tokio::runtime::Handle;
use tokio::sync::Notify;

/// The bytes that may wait to be written. A caller beyond it waits (under its deadline) until a
/// flush has taken them; a line is always accepted below it, however long.
const MAX_QUEUED_BYTES: usize = 4 * 1024 * 1024;

/// Why a line was not queued.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The pipe is closed or broken: the process is gone or going.
    Closed,
    /// The line could not be encoded (nothing of it was queued).
    Unencodable,
}

/// One plugin's stdin.
pub(crate) struct Outbox {
    state: Mutex<State>,
    /// Told whenever a flush takes the queue, ends, or the pipe closes.
    drained: Notify,
    /// The runtime the connection started on, for a line queued outside any runtime.
    home: Handle,
}

struct State {
    queued: Vec<u8>,
    flushing: bool,
    closing: bool,
    pipe: Option<Arc<pipe::Sender>>,
}

impl Outbox {
    /// The outbox of a child's stdin. Call it on a runtime with I/O enabled.
    ///
    /// # Errors
    /// The pipe could not be registered with the runtime.
    pub(crate) fn new(stdin: ChildStdin) -> io::Result<Arc<Self>> {
        let pipe = pipe::Sender::from_owned_fd(stdin.into_owned_fd()?)?;
        Ok(Arc::new(Self {
            state: Mutex::new(State {
                queued: Vec::new(),
                flushing: false,
                closing: false,
                pipe: Some(Arc::new(pipe)),
            }),
            drained: Notify::new(),
            home: Handle::current(),
        }))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // Never held across an await or a panic point; recover the data either way.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues the line `encode` appends (newline included) and sees it flushed, waiting while
    /// [`MAX_QUEUED_BYTES`] are queued.
    ///
    /// # Errors
    /// [`Refused`]: the pipe is gone, or `encode` failed (it returns `false`).
    ///
    /// # Cancel safety
    /// Cancel safe: a line is queued whole or not at all.
    pub(crate) async fn send(
        self: &Arc<Self>,
        encode: impl FnOnce(&mut Vec<u8>) -> bool,
    ) -> Result<(), Refused> {
        let mut encode = Some(encode);
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            // Registered before the check: a flush that drains between the two is not missed.
            drained.as_mut().enable();
            if let Some(result) = self.queue(&mut encode, MAX_QUEUED_BYTES) {
                return result;
            }
            drained.await;
        }
    }

    /// Queues a line unless the queue is full or the pipe gone: for advisory lines (a cancel).
    pub(crate) fn try_send(self: &Arc<Self>, encode: impl FnOnce(&mut Vec<u8>) -> bool) -> bool {
        matches!(
            self.queue(&mut Some(encode), MAX_QUEUED_BYTES),
            Some(Ok(()))
        )
    }

    /// Queues the line when there is room (`None` when there is not).
    fn queue(
        self: &Arc<Self>,
        encode: &mut Option<impl FnOnce(&mut Vec<u8>) -> bool>,
        limit: usize,
    ) -> Option<Result<(), Refused>> {
        let mut state = self.lock();
        if state.pipe.is_none() || state.closing {
            return Some(Err(Refused::Closed));
        }
        if state.queued.len() >= limit {
            return None;
        }
        let encode = encode.take()?;
        let before = state.queued.len();
        if !encode(&mut state.queued) {
            state.queued.truncate(before);
            return Some(Err(Refused::Unencodable));
        }
        if !state.flushing {
            state.flushing = true;
            let handle = Handle::try_current().unwrap_or_else(|_| self.home.clone());
            drop(state);
            handle.spawn(self.clone().flush());
        }
        Some(Ok(()))
    }

    /// Writes what is queued, then closes the pipe: the plugin sees the end of its input. Lines
    /// queued after it are refused.
    pub(crate) fn close(&self) {
        let mut state = self.lock();
        state.closing = true;
        if !state.flushing {
            state.pipe = None;
        }
        drop(state);
        self.drained.notify_waiters();
    }

    /// Writes the queue until it is empty; a write that fails closes the pipe (the process is
    /// gone: its reader reports that).
    async fn flush(self: Arc<Self>) {
        let mut chunk = Vec::new();
        loop {
            let pipe = {
                let mut state = self.lock();
                if state.queued.is_empty() || state.pipe.is_none() {
                    state.flushing = false;
                    if state.closing {
                        state.pipe = None;
                    }
                    drop(state);
                    self.drained.notify_waiters();
                    return;
                }
                std::mem::swap(&mut chunk, &mut state.queued);
                state.pipe.clone()
            };
            self.drained.notify_waiters();
            let written = match pipe {
                Some(pipe) => write_all(&pipe, &chunk).await,
                None => Err(io::ErrorKind::BrokenPipe.into()),
            };
            chunk.clear();
            if written.is_err() {
                let mut state = self.lock();
                state.pipe = None;
                state.queued = Vec::new();
                state.flushing = false;
                drop(state);
                self.drained.notify_waiters();
                return;
            }
        }
    }
}

async fn write_all(pipe: &pipe::Sender, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        match pipe.try_write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(written) => bytes = &bytes[written..],
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => pipe.writable().await?,
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn cat() -> (tokio::process::Child, Arc<Outbox>) {
        let mut child = tokio::process::Command::new("cat")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("cat: {e}"));
        let stdin = child.stdin.take().unwrap_or_else(|| panic!("stdin"));
        let outbox = Outbox::new(stdin).unwrap_or_else(|e| panic!("outbox: {e}"));
        (child, outbox)
    }

    fn line(text: &'static str) -> impl FnOnce(&mut Vec<u8>) -> bool {
        move |buffer: &mut Vec<u8>| {
            buffer.extend_from_slice(text.as_bytes());
            true
        }
    }

    #[tokio::test]
    async fn lines_arrive_in_order_and_close_ends_the_input_after_them() {
        let (mut child, outbox) = cat().await;
        assert_eq!(outbox.send(line("a\n")).await, Ok(()));
        assert!(outbox.try_send(line("b\n")));
        assert_eq!(outbox.send(|_| false).await, Err(Refused::Unencodable));
        assert_eq!(outbox.send(line("c\n")).await, Ok(()));
        outbox.close();
        assert_eq!(outbox.send(line("d\n")).await, Err(Refused::Closed));
        let mut out = String::new();
        let stdout = child.stdout.as_mut().unwrap_or_else(|| panic!("stdout"));
        // cat ends once its input is closed: the read ends with everything written before.
        let _ = stdout.read_to_string(&mut out).await;
        assert_eq!(out, "a\nb\nc\n");
    }
}
