//! The accept loop and the servers it deals connections to: one on the thread that starts the
//! server and one on each other pipeline shard's thread (issue 47). The listener can stop
//! accepting before the open connections are told to shut down (issue 49).
//!
//! **Every shard's thread serves.** One acceptor deals the connections to every pipeline shard's
//! thread in turn. A session created over a connection is placed on the shard whose thread
//! serves it ([`Pipeline::place_here`](hookline_actors::Pipeline::place_here)), and runs on that
//! shard's arbiter: a client that keeps its connection has its requests, its turns
//! and their hook calls served on one thread. With one serving thread, the sessions of every
//! other shard took two thread hops a request, and that one thread parsed every request.
//!
//! **Stopping.** hyper closes at once a connection that has not yet read its first request when
//! it is told to shut down gracefully: a client that connected just before the listener closed
//! then sees its request reset. A hand-over therefore closes this server's duplicate of the
//! listening socket first (the successor goes on accepting on its own), and tells the
//! connections to shut down only after [`FIRST_REQUEST_GRACE`], by which time a connection
//! accepted here has read its request.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use actix_rt::ArbiterHandle;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};

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

/// Connections waiting for one thread's server, dealt by the acceptor.
const DEALT_QUEUE: usize = 64;

/// Serves `app` on `socket` until `stop` turns true and the connections have closed: accepted
/// on the current thread and dealt in turn to its server and to one on each of `others`
/// (round robin, so each thread serves its share of the clients; the kernel, waking every
/// thread that waits on one socket, gave most connections to the busiest). The task returned
/// ends when every server has; aborting it ends the other threads' servers too.
pub(crate) fn serve_everywhere(
    socket: &Arc<std::net::TcpListener>,
    others: Vec<ArbiterHandle>,
    app: axum::Router,
    accepting: &watch::Receiver<bool>,
    stop: &watch::Receiver<bool>,
) -> std::io::Result<tokio::task::JoinHandle<std::io::Result<()>>> {
    let acceptor = Accepting::new(inherited(socket)?, accepting.clone())?;
    if others.is_empty() {
        return Ok(tokio::spawn(serve(acceptor, app, stop.clone())));
    }
    let addr = acceptor.addr;
    // Dropped with the task below (ended or aborted): the other threads' servers end with it.
    let (alive, _) = watch::channel(());
    let (here_queue, here) = mpsc::channel(DEALT_QUEUE);
    let mut queues = vec![here_queue];
    let mut others_done = Vec::with_capacity(others.len());
    for arbiter in others {
        let (queue, dealt) = mpsc::channel(DEALT_QUEUE);
        let (done, ended) = oneshot::channel();
        let mut dropped = alive.subscribe();
        let served = serve(Dealt { dealt, addr }, app.clone(), stop.clone());
        let spawned = arbiter.spawn(async move {
            let result = tokio::select! {
                result = served => result,
                _ = dropped.changed() => Ok(()),
            };
            let _ = done.send(result);
        });
        if spawned {
            queues.push(queue);
            others_done.push(ended);
        }
    }
    let here = Dealt { dealt: here, addr };
    let stop = stop.clone();
    Ok(tokio::spawn(async move {
        let _alive = alive;
        let (served, ()) =
            tokio::join!(serve(here, app, stop.clone()), deal(acceptor, queues, stop));
        for ended in others_done {
            if let Ok(Err(error)) = ended.await {
                tracing::warn!(%error, "the server on a shard's thread failed");
            }
        }
        served
    }))
}

/// One thread's server, until `stop` turns true and its connections have closed.
async fn serve<L>(
    listener: L,
    app: axum::Router,
    mut stop: watch::Receiver<bool>,
) -> std::io::Result<()>
where
    L: axum::serve::Listener,
    L::Addr: std::fmt::Debug,
{
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let _ = stop.wait_for(|stop| *stop).await;
        })
        .await
}

/// The acceptor: deals each connection to the next thread's server, until `stop` turns true.
async fn deal(
    mut acceptor: Accepting,
    queues: Vec<mpsc::Sender<(std::net::TcpStream, SocketAddr)>>,
    mut stop: watch::Receiver<bool>,
) {
    use axum::serve::Listener as _;
    let dealing = async {
        for queue in queues.iter().cycle() {
            let (stream, peer) = acceptor.accept().await;
            // Out of this thread's reactor; the receiving thread registers it with its own.
            let Ok(stream) = stream.into_std() else {
                continue;
            };
            // A thread whose server has ended drops its connections (as a closed listener).
            let _ = queue.send((stream, peer)).await;
        }
    };
    tokio::select! {
        () = dealing => {}
        _ = stop.wait_for(|stop| *stop) => {}
    }
}

/// The connections dealt to one thread's server.
struct Dealt {
    dealt: mpsc::Receiver<(std::net::TcpStream, SocketAddr)>,
    addr: SocketAddr,
}

impl axum::serve::Listener for Dealt {
    type Io = TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (TcpStream, SocketAddr) {
        loop {
            // The acceptor gone (stopping): nothing more to accept.
            let Some((stream, peer)) = self.dealt.recv().await else {
                return std::future::pending().await;
            };
            match TcpStream::from_std(stream) {
                Ok(stream) => return (stream, peer),
                Err(error) => tracing::warn!(%error, "a dealt connection could not be served"),
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<SocketAddr> {
        Ok(self.addr)
    }
}

/// A duplicate of a listening socket, made ready for tokio (non-blocking, as `from_std`
/// requires) on the current runtime.
pub(crate) fn inherited(listener: &std::net::TcpListener) -> std::io::Result<TcpListener> {
    let listener = listener.try_clone()?;
    listener.set_nonblocking(true)?;
    TcpListener::from_std(listener)
}
