//! The accept loop's listener, which can stop accepting before the open connections are told to
//! shut down (issue 49).
//!
//! hyper closes at once a connection that has not yet read its first request when it is told
//! to shut down gracefully: a client that connected just before the listener closed then sees
//! its request reset. A hand-over therefore closes this server's duplicate of the listening
//! socket first (the successor goes on accepting on its own), and tells the connections to shut
//! down only after [`FIRST_REQUEST_GRACE`], by which time a connection accepted here has read
//! its request.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// How long connections accepted before the listener closed get to send their first request
/// before they are told to shut down.
pub(crate) const FIRST_REQUEST_GRACE: Duration = Duration::from_millis(300);

/// A listener that accepts until `accepting` turns false, then drops its socket (this
/// process's duplicate; another process may still accept on the socket) and accepts nothing.
pub(crate) struct Accepting {
    listener: Option<TcpListener>,
    addr: SocketAddr,
    accepting: watch::Receiver<bool>,
}

impl Accepting {
    pub(crate) fn new(
        listener: TcpListener,
        accepting: watch::Receiver<bool>,
    ) -> std::io::Result<Self> {
        Ok(Self {
            addr: listener.local_addr()?,
            listener: Some(listener),
            accepting,
        })
    }
}

impl axum::serve::Listener for Accepting {
    type Io = TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (TcpStream, SocketAddr) {
        loop {
            let Some(listener) = &mut self.listener else {
                return std::future::pending().await;
            };
            let closed = async {
                // Only whether it turned: the guard `wait_for` returns is not held.
                let _ = self.accepting.wait_for(|accepting| !*accepting).await;
            };
            let accepted = tokio::select! {
                biased;
                () = closed => None,
                accepted = TcpListener::accept(listener) => Some(accepted),
            };
            match accepted {
                None => self.listener = None,
                Some(Ok(accepted)) => return accepted,
                Some(Err(error)) => failed(error).await,
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.addr)
    }
}

/// A failed accept, as axum's own listener treats it: a connection's error is skipped; any other
/// (out of descriptors) pauses accepting a moment rather than spinning.
async fn failed(error: std::io::Error) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionRefused, ConnectionReset};
    if matches!(
        error.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    ) {
        return;
    }
    tracing::error!(%error, "accept failed");
    tokio::time::sleep(Duration::from_secs(1)).await;
}
