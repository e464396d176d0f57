//! One JSON object a line over a Unix stream, with file descriptors riding on a line
//! (SCM_RIGHTS), and the peer's uid checked (SO_PEERCRED). Blocking, every read and write bounded
//! by the socket's timeouts.

use std::io::{IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags,
};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::HandoverError;

/// The most listening sockets one offer carries.
pub(crate) const MAX_FDS: usize = 8;

/// The longest line read: a `sessions` message of a full server (10 000 ids) is well under it.
const MAX_LINE: usize = 16 * 1024 * 1024;

/// How long one write may block (the peer reads every line at once).
const WRITE_WAIT: Duration = Duration::from_secs(10);

/// A connected rendezvous stream.
#[derive(Debug)]
pub(crate) struct Wire {
    stream: UnixStream,
    path: PathBuf,
    /// Bytes read past the last line.
    pending: Vec<u8>,
    /// Descriptors received and not yet taken.
    fds: Vec<OwnedFd>,
}

impl Wire {
    /// Wraps `stream` after checking its peer runs as this process's user.
    pub(crate) fn new(stream: UnixStream, path: &Path) -> Result<Self, HandoverError> {
        same_user(&stream)?;
        stream
            .set_write_timeout(Some(WRITE_WAIT))
            .map_err(|e| HandoverError::io(path, e))?;
        Ok(Self {
            stream,
            path: path.to_owned(),
            pending: Vec::new(),
            fds: Vec::new(),
        })
    }

    /// Sends `message` as one line, with `fds` attached to it.
    pub(crate) fn send<T: Serialize>(
        &mut self,
        message: &T,
        fds: &[BorrowedFd<'_>],
    ) -> Result<(), HandoverError> {
        let mut line =
            serde_json::to_vec(message).map_err(|e| HandoverError::Protocol(e.to_string()))?;
        line.push(b'\n');
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        if !fds.is_empty()
            && (fds.len() > MAX_FDS || !control.push(SendAncillaryMessage::ScmRights(fds)))
        {
            return Err(HandoverError::Protocol(format!(
                "more than {MAX_FDS} sockets"
            )));
        }
        // The descriptors go with the first bytes; the rest of a long line follows plainly.
        let sent = rustix::net::sendmsg(
            &self.stream,
            &[IoSlice::new(&line)],
            &mut control,
            SendFlags::NOSIGNAL,
        )
        .map_err(|e| HandoverError::io(&self.path, e.into()))?;
        std::io::Write::write_all(&mut &self.stream, &line[sent..])
            .map_err(|e| HandoverError::io(&self.path, e))
    }

    /// The next line as a `T`, waiting at most `wait`; descriptors that came with it are kept
    /// for [`Wire::take_fds`].
    pub(crate) fn recv<T: DeserializeOwned>(&mut self, wait: Duration) -> Result<T, HandoverError> {
        let deadline = std::time::Instant::now() + wait;
        loop {
            if let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).collect();
                return serde_json::from_slice(&line[..end])
                    .map_err(|e| HandoverError::Protocol(e.to_string()));
            }
            if self.pending.len() > MAX_LINE {
                return Err(HandoverError::Protocol("a line over 16 MiB".into()));
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Err(HandoverError::Timeout(wait));
            }
            self.stream
                .set_read_timeout(Some(left))
                .map_err(|e| HandoverError::io(&self.path, e))?;
            self.read_some(wait)?;
        }
    }

    /// Reads what is there (at least a byte), keeping any descriptors that came along.
    fn read_some(&mut self, wait: Duration) -> Result<(), HandoverError> {
        let mut buf = [0u8; 64 * 1024];
        let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        // CMSG_CLOEXEC: a plugin process spawned later never inherits a received socket.
        let received = rustix::net::recvmsg(
            &self.stream,
            &mut [IoSliceMut::new(&mut buf)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        );
        let received = match received {
            Ok(received) => received,
            Err(rustix::io::Errno::AGAIN) => return Err(HandoverError::Timeout(wait)),
            Err(rustix::io::Errno::INTR) => return Ok(()),
            Err(e) => return Err(HandoverError::io(&self.path, e.into())),
        };
        for message in control.drain() {
            if let RecvAncillaryMessage::ScmRights(fds) = message {
                self.fds.extend(fds);
            }
        }
        if received.bytes == 0 {
            return Err(HandoverError::Closed);
        }
        self.pending.extend_from_slice(&buf[..received.bytes]);
        Ok(())
    }

    /// The descriptors received so far, in order.
    pub(crate) fn take_fds(&mut self) -> Vec<OwnedFd> {
        std::mem::take(&mut self.fds)
    }

    /// Blocks until the peer closes its end (its process exited), at most `wait`; whether it did.
    pub(crate) fn closed_within(&mut self, wait: Duration) -> bool {
        let deadline = std::time::Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() || self.stream.set_read_timeout(Some(left)).is_err() {
                return false;
            }
            match self.read_some(wait) {
                Ok(()) => self.pending.clear(),
                Err(HandoverError::Closed | HandoverError::Io { .. }) => return true,
                Err(_) => return false,
            }
        }
    }
}

/// Refuses a peer of another user (SO_PEERCRED): the rendezvous hands over sockets and session
/// leases, which only the same account may take.
fn same_user(stream: &UnixStream) -> Result<(), HandoverError> {
    let own = rustix::process::getuid().as_raw();
    let peer = peer_uid(stream.as_fd()).map_err(|e| HandoverError::Io {
        path: "(peer credentials)".into(),
        source: e,
    })?;
    if peer == own {
        Ok(())
    } else {
        Err(HandoverError::OtherUser { peer, own })
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn peer_uid(fd: BorrowedFd<'_>) -> std::io::Result<u32> {
    Ok(rustix::net::sockopt::socket_peercred(fd)?.uid.as_raw())
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn peer_uid(_fd: BorrowedFd<'_>) -> std::io::Result<u32> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "peer credentials are read on Linux only",
    ))
}
