//! Replacing a running `hookline serve` (issue 49): the rendezvous Unix socket through which a
//! successor finds the server it replaces, takes its listening sockets and tells it when to go.
//!
//! The running server binds a [`Rendezvous`] (by default `hookline-serve.sock` beside the file
//! store's root; docs/serve.md "Replacing a running server"). A successor connects
//! ([`Predecessor::connect`]); both ends check the other runs as the same user (SO_PEERCRED).
//! The server sends an [`Offer`] with its listening sockets attached (SCM_RIGHTS, received
//! close-on-exec so no plugin process inherits them); the successor starts serving on
//! duplicates of them, then answers `ready` (or `failed`, or `checked` for `--replace
//! --check`). After `ready` the server sends the ids of the sessions it had open; once the
//! successor says it adopted them it hands over and exits; the successor sees the socket close
//! when it has gone.
//!
//! Blocking, with every read bounded: the server runs [`Successor`]'s steps on a blocking
//! thread, the successor before its runtime serves anything.
//!
//! ```no_run
//! # fn main() -> Result<(), hookline_host::handover::HandoverError> {
//! use std::time::Duration;
//! use hookline_host::handover::Predecessor;
//!
//! let mut old = Predecessor::connect("/srv/hookline/store/hookline-serve.sock".as_ref(), Duration::from_secs(5))?;
//! let listeners = old.take_listeners();
//! // ... serve on `listeners` ...
//! old.ready()?;
//! let ids = old.sessions(Duration::from_secs(10))?;
//! // ... adopt `ids` ...
//! old.adopted(ids.len())?;
//! # let _ = listeners;
//! # Ok(())
//! # }
//! ```

mod error;
mod messages;
mod wire;

pub use error::HandoverError;
pub use messages::{FromServer, FromSuccessor, Offer, PROTOCOL, VERSION};

use std::net::TcpListener;
use std::os::fd::BorrowedFd;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use wire::Wire;

/// The rendezvous file's name beside a file store's root.
pub const SOCKET_NAME: &str = "hookline-serve.sock";

/// The running server's end: a Unix socket successors connect to.
#[derive(Debug)]
pub struct Rendezvous {
    listener: tokio::net::UnixListener,
    path: PathBuf,
    /// The bound file's identity: at exit it is removed only while it is still this one (a
    /// successor has put its own in its place).
    inode: (u64, u64),
}

impl Rendezvous {
    /// Binds `path`, removing a stale socket file no server answers on. Must run inside a tokio
    /// runtime.
    ///
    /// # Errors
    /// [`HandoverError::InUse`] when a server answers on `path`; [`HandoverError::Io`] when it
    /// cannot be bound.
    pub fn bind(path: &Path) -> Result<Self, HandoverError> {
        if path.exists() {
            match UnixStream::connect(path) {
                Ok(_) => {
                    return Err(HandoverError::InUse {
                        path: path.display().to_string(),
                    })
                }
                // Left by a server that crashed: nobody listens on it.
                Err(_) => std::fs::remove_file(path).map_err(|e| HandoverError::io(path, e))?,
            }
        }
        Self::bind_at(path)
    }

    /// Binds a socket of this process's own beside `path`, to be put in its place with
    /// [`Rendezvous::publish`] once this process serves (a successor, while its predecessor
    /// still answers on `path`).
    ///
    /// # Errors
    /// [`HandoverError::Io`] when it cannot be bound.
    pub fn bind_beside(path: &Path) -> Result<Self, HandoverError> {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".{}", std::process::id()));
        let temporary = PathBuf::from(name);
        let _ = std::fs::remove_file(&temporary);
        let mut bound = Self::bind_at(&temporary)?;
        bound.path = temporary;
        Ok(bound)
    }

    fn bind_at(path: &Path) -> Result<Self, HandoverError> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| HandoverError::io(path, e))?;
        }
        let std_listener =
            std::os::unix::net::UnixListener::bind(path).map_err(|e| HandoverError::io(path, e))?;
        // Only this user may connect; the peer's uid is checked again on each connection.
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| HandoverError::io(path, e))?;
        let meta = std::fs::metadata(path).map_err(|e| HandoverError::io(path, e))?;
        std_listener
            .set_nonblocking(true)
            .map_err(|e| HandoverError::io(path, e))?;
        let listener = tokio::net::UnixListener::from_std(std_listener)
            .map_err(|e| HandoverError::io(path, e))?;
        Ok(Self {
            listener,
            path: path.to_owned(),
            inode: (meta.dev(), meta.ino()),
        })
    }

    /// Renames this socket onto `path` (atomically replacing the predecessor's file): the next
    /// successor finds this process there.
    ///
    /// # Errors
    /// [`HandoverError::Io`] when the rename fails.
    pub fn publish(&mut self, path: &Path) -> Result<(), HandoverError> {
        std::fs::rename(&self.path, path).map_err(|e| HandoverError::io(path, e))?;
        self.path = path.to_owned();
        Ok(())
    }

    /// Where it is bound.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The next successor to connect, its uid checked.
    ///
    /// # Cancel safety
    /// Cancel safe: a connection not yet accepted stays queued.
    ///
    /// # Errors
    /// [`HandoverError::OtherUser`] for a peer of another user (the connection is dropped);
    /// [`HandoverError::Io`] when accepting fails.
    pub async fn accept(&self) -> Result<Successor, HandoverError> {
        let (stream, _) = self
            .listener
            .accept()
            .await
            .map_err(|e| HandoverError::io(&self.path, e))?;
        let stream = stream
            .into_std()
            .map_err(|e| HandoverError::io(&self.path, e))?;
        stream
            .set_nonblocking(false)
            .map_err(|e| HandoverError::io(&self.path, e))?;
        Ok(Successor {
            wire: Wire::new(stream, &self.path)?,
        })
    }
}

impl Drop for Rendezvous {
    fn drop(&mut self) {
        // Only our own file: after a handover the successor's socket lies at the path.
        let ours =
            std::fs::metadata(&self.path).is_ok_and(|meta| (meta.dev(), meta.ino()) == self.inode);
        if ours {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The running server's view of a connected successor.
#[derive(Debug)]
pub struct Successor {
    wire: Wire,
}

impl Successor {
    /// Sends the offer with the listening sockets, in the order of `offer.listeners`.
    ///
    /// # Errors
    /// [`HandoverError`] when the successor is gone or the write times out.
    pub fn offer(&mut self, offer: Offer, sockets: &[BorrowedFd<'_>]) -> Result<(), HandoverError> {
        self.wire.send(&FromServer::Offer(offer), sockets)
    }

    /// The successor's one answer, waiting at most `wait`.
    ///
    /// # Errors
    /// [`HandoverError::Closed`] when it exited without one; [`HandoverError::Timeout`].
    pub fn answer(&mut self, wait: Duration) -> Result<FromSuccessor, HandoverError> {
        self.wire.recv(wait)
    }

    /// Sends the sessions the successor adopts and waits (at most `wait`) until it says it
    /// adopted them: only then may their leases be given back, or a request reaching the
    /// successor in between would find a session it does not know.
    ///
    /// # Errors
    /// [`HandoverError`] when the successor is gone, answers something else, or says nothing
    /// within `wait`.
    pub fn sessions(&mut self, ids: Vec<String>, wait: Duration) -> Result<usize, HandoverError> {
        self.wire.send(&FromServer::Sessions { ids }, &[])?;
        match self.wire.recv::<FromSuccessor>(wait)? {
            FromSuccessor::Adopted { count } => Ok(count),
            other => Err(HandoverError::Protocol(format!(
                "{other:?} instead of adopted"
            ))),
        }
    }
}

/// The successor's view of the server it replaces.
#[derive(Debug)]
pub struct Predecessor {
    wire: Wire,
    offer: Offer,
    listeners: Vec<TcpListener>,
}

impl Predecessor {
    /// Connects to the server answering on `path` and takes its offer, waiting at most `wait`.
    ///
    /// # Errors
    /// [`HandoverError::Io`] when nobody answers on `path`; [`HandoverError::Protocol`] when the
    /// peer is not a hookline server of this version or sent no socket for an address;
    /// [`HandoverError::OtherUser`], [`HandoverError::Timeout`].
    pub fn connect(path: &Path, wait: Duration) -> Result<Self, HandoverError> {
        let stream = UnixStream::connect(path).map_err(|e| HandoverError::io(path, e))?;
        let mut wire = Wire::new(stream, path)?;
        let FromServer::Offer(offer) = wire.recv::<FromServer>(wait)? else {
            return Err(HandoverError::Protocol("no offer first".into()));
        };
        if offer.protocol != PROTOCOL || offer.version != VERSION {
            return Err(HandoverError::Protocol(format!(
                "it speaks {} version {}, this build {PROTOCOL} version {VERSION}",
                offer.protocol, offer.version
            )));
        }
        let listeners: Vec<TcpListener> =
            wire.take_fds().into_iter().map(TcpListener::from).collect();
        if listeners.len() != offer.listeners.len() {
            return Err(HandoverError::Protocol(format!(
                "{} sockets for {} addresses",
                listeners.len(),
                offer.listeners.len()
            )));
        }
        Ok(Self {
            wire,
            offer,
            listeners,
        })
    }

    /// What the server offered.
    pub fn offer(&self) -> &Offer {
        &self.offer
    }

    /// The listening sockets, in the order of the offer's addresses (once; empty after).
    pub fn take_listeners(&mut self) -> Vec<TcpListener> {
        std::mem::take(&mut self.listeners)
    }

    /// Says this process serves: the server hands over and exits.
    ///
    /// # Errors
    /// [`HandoverError`] when the server is gone (it then never handed over).
    pub fn ready(&mut self) -> Result<(), HandoverError> {
        self.wire.send(
            &FromSuccessor::Ready {
                pid: std::process::id(),
            },
            &[],
        )
    }

    /// Says this process cannot start, and why: the server goes on as before.
    ///
    /// # Errors
    /// [`HandoverError`] when the server is gone.
    pub fn failed(&mut self, reason: &str) -> Result<(), HandoverError> {
        self.wire.send(
            &FromSuccessor::Failed {
                reason: reason.to_owned(),
            },
            &[],
        )
    }

    /// Says a successor would start (`--replace --check`): the server goes on as before.
    ///
    /// # Errors
    /// [`HandoverError`] when the server is gone.
    pub fn checked(&mut self) -> Result<(), HandoverError> {
        self.wire.send(
            &FromSuccessor::Checked {
                pid: std::process::id(),
            },
            &[],
        )
    }

    /// The sessions the server had open, sent after `ready`; waits at most `wait`.
    ///
    /// # Errors
    /// [`HandoverError::Closed`] when the server exited first; [`HandoverError::Timeout`].
    pub fn sessions(&mut self, wait: Duration) -> Result<Vec<String>, HandoverError> {
        match self.wire.recv::<FromServer>(wait)? {
            FromServer::Sessions { ids } => Ok(ids),
            FromServer::Offer(_) => Err(HandoverError::Protocol("a second offer".into())),
        }
    }

    /// Says the sessions are adopted: the server may give their leases back.
    ///
    /// # Errors
    /// [`HandoverError`] when the server is gone.
    pub fn adopted(&mut self, count: usize) -> Result<(), HandoverError> {
        self.wire.send(&FromSuccessor::Adopted { count }, &[])
    }

    /// Blocks until the server has exited (its end of the socket closed), at most `wait`;
    /// whether it did.
    pub fn gone_within(&mut self, wait: Duration) -> bool {
        self.wire.closed_within(wait)
    }
}

#[cfg(test)]
mod tests;
