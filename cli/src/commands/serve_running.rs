//! A serving `hookline serve` until it ends (issue 49): SIGTERM or SIGINT drains it as before;
//! a successor on the rendezvous (started by hand with `--replace`, or by this server on SIGHUP)
//! replaces it. Also the successor's first steps once it serves: `ready`, the sessions it
//! adopts, its own rendezvous put in its predecessor's place.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hookline_host::handover::{HandoverError, Offer, Predecessor, Rendezvous, Successor};
use hookline_server::ServeHandle;

use super::serve::{Ended, ServeCliError};
use super::serve_replace::{self, Verdict};

/// How long the exit waits for the shared state (plugin processes, files) to close after the
/// drain's bounded waits.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// After this server started: a successor says `ready` to its predecessor, adopts the sessions
/// it had open and puts its own rendezvous in its place; a fresh server binds the rendezvous.
/// A rendezvous that cannot be bound is said and served without (this server then cannot be
/// replaced with `--replace`).
pub(crate) async fn take_over(
    handle: &ServeHandle,
    predecessor: &mut Option<Predecessor>,
    path: &Path,
    started: Instant,
) -> Option<Rendezvous> {
    let Some(old) = predecessor.as_mut() else {
        serve_replace::notify(&[sd_notify::NotifyState::Ready]);
        return bind_rendezvous(Rendezvous::bind(path));
    };
    let rendezvous = bind_rendezvous(Rendezvous::bind_beside(path));
    if let Err(error) = old.ready() {
        eprintln!("hookline serve: the server replaced did not hear ready: {error}");
    }
    let pid = old.offer().pid;
    let wait = serve_replace::predecessor_wait(old.offer());
    let ids = serve_replace::sessions(predecessor).await;
    eprintln!(
        "hookline serve: replacing pid {pid}; {} sessions move here",
        ids.len()
    );
    // Each taken over in the background as soon as the predecessor gives its lease back; the
    // predecessor gives them back only once told they are adopted.
    let count = ids.len();
    handle.adopt(ids, wait);
    serve_replace::adopted(predecessor, count).await;
    let rendezvous = rendezvous.and_then(|mut bound| match bound.publish(path) {
        Ok(()) => Some(bound),
        Err(error) => {
            eprintln!("hookline serve: {error}; this server cannot be replaced with --replace");
            None
        }
    });
    serve_replace::notify(&[
        sd_notify::NotifyState::MainPid(std::process::id()),
        sd_notify::NotifyState::Ready,
    ]);
    if let Some(old) = predecessor.take() {
        serve_replace::watch_exit(old, started);
    }
    rendezvous
}

fn bind_rendezvous(bound: Result<Rendezvous, HandoverError>) -> Option<Rendezvous> {
    match bound {
        Ok(rendezvous) => Some(rendezvous),
        Err(error) => {
            eprintln!("hookline serve: {error}; this server cannot be replaced with --replace");
            None
        }
    }
}

/// What the serving loop woke for.
enum Event {
    Signal(&'static str),
    SuccessorExited(String),
    Successor(Result<Successor, HandoverError>),
    Verdict(Verdict),
}

/// A successor's negotiation under way.
type Negotiation = std::pin::Pin<Box<dyn std::future::Future<Output = Verdict> + Send>>;

/// The negotiation's verdict once it settles (and none pending after); never, without one.
async fn settled(pending: &mut Option<Negotiation>) -> Verdict {
    let Some(negotiation) = pending.as_mut() else {
        return std::future::pending().await;
    };
    let verdict = negotiation.await;
    *pending = None;
    verdict
}

/// A serving server, until a signal drains it or a successor replaces it.
pub(crate) struct Running {
    /// The offer's node name and drain budget.
    pub(crate) offer: (Option<String>, u64),
    /// The listening socket, offered to a successor.
    pub(crate) socket: Arc<std::net::TcpListener>,
    /// `--restart-expected-ms`, announced as the gateway shuts down.
    pub(crate) restart_expected_ms: Option<u64>,
    /// Where successors find this server (none when it could not be bound).
    pub(crate) rendezvous: Option<Rendezvous>,
}

impl Running {
    /// Serves until drained or replaced.
    pub(crate) async fn serve(
        self,
        handle: ServeHandle,
        mut terminate: Signals,
    ) -> Result<Ended, ServeCliError> {
        let mut spawned: Option<tokio::process::Child> = None;
        // One successor at a time; signals are served while it starts (up to its answer wait).
        let mut pending: Option<Negotiation> = None;
        loop {
            let event = tokio::select! {
                signal = terminate.next() => Event::Signal(signal),
                exited = wait_child(&mut spawned) => Event::SuccessorExited(exited),
                verdict = settled(&mut pending) => Event::Verdict(verdict),
                accepted = accept(self.rendezvous.as_ref()), if pending.is_none() => {
                    Event::Successor(accepted)
                }
            };
            match event {
                Event::Signal("SIGHUP") => spawned = self.start_successor(spawned),
                Event::Signal(signal) => return self.drain(handle, signal, terminate).await,
                Event::SuccessorExited(status) => {
                    eprintln!("hookline serve: the successor exited ({status})");
                    spawned = None;
                }
                Event::Successor(Err(error)) => {
                    eprintln!("hookline serve: a successor was refused: {error}");
                }
                Event::Successor(Ok(successor)) => {
                    let offer = Offer::new(
                        std::process::id(),
                        self.offer.0.clone(),
                        self.offer.1,
                        vec![self
                            .socket
                            .local_addr()
                            .map(|a| a.to_string())
                            .unwrap_or_default()],
                    );
                    pending = Some(Box::pin(serve_replace::negotiate(
                        successor,
                        offer,
                        self.socket.clone(),
                    )));
                }
                Event::Verdict(Verdict::Ready { successor, pid }) => {
                    return self.hand_over(handle, successor, pid, terminate).await;
                }
                Event::Verdict(Verdict::Stay(why)) => {
                    eprintln!("hookline serve: {why}; still serving");
                    if let Some(child) = spawned.take() {
                        serve_replace::reap(child).await;
                    }
                    serve_replace::notify(&[sd_notify::NotifyState::Ready]);
                }
            }
        }
    }

    /// SIGHUP: this server's successor, with its command line (one at a time).
    fn start_successor(
        &self,
        spawned: Option<tokio::process::Child>,
    ) -> Option<tokio::process::Child> {
        if spawned.is_some() {
            eprintln!("hookline serve: SIGHUP; a successor is already starting");
            return spawned;
        }
        if self.rendezvous.is_none() {
            eprintln!("hookline serve: SIGHUP; no rendezvous socket, so no successor can take over; still serving");
            return None;
        }
        serve_replace::notify_reloading();
        match serve_replace::spawn_successor() {
            Ok(child) => {
                eprintln!(
                    "hookline serve: SIGHUP; starting a successor (pid {})",
                    child.id().unwrap_or_default()
                );
                Some(child)
            }
            Err(error) => {
                eprintln!(
                    "hookline serve: SIGHUP; cannot start a successor: {error}; still serving"
                );
                serve_replace::notify(&[sd_notify::NotifyState::Ready]);
                None
            }
        }
    }

    /// The successor serves: send it the sessions open here, then hand over and exit.
    async fn hand_over(
        self,
        handle: ServeHandle,
        successor: Box<Successor>,
        pid: u32,
        mut signals: Signals,
    ) -> Result<Ended, ServeCliError> {
        let started = Instant::now();
        eprintln!("hookline serve: handing over to pid {pid}");
        // The hand-over is bounded (the drain budget for running turns, the bounded session
        // ends and shutdown handlers), so a SIGTERM or SIGINT lets it finish; a second one exits
        // at once, as during a drain: every acknowledged record is synced, and the successor
        // takes the sessions over as from a process that died.
        actix_rt::spawn(async move {
            let mut asked = false;
            loop {
                match signals.next().await {
                    "SIGHUP" => eprintln!("hookline serve: SIGHUP; already handing over"),
                    signal if asked => {
                        eprintln!("hookline serve: {signal} again; exiting now");
                        std::process::exit(1);
                    }
                    signal => {
                        asked = true;
                        eprintln!(
                            "hookline serve: {signal}; handing over already (bounded by the drain budget); send it again to exit now"
                        );
                    }
                }
            }
        });
        // No session opens here after the list is made, so none is given back unknown to the
        // successor.
        handle.begin_hand_over().await;
        let ids = handle.session_ids();
        let count = ids.len();
        if let Err(error) = serve_replace::send_sessions(successor, ids).await {
            // It serves already; sessions it did not adopt are taken over at their next request
            // once their leases are free (or resumed).
            eprintln!("hookline serve: the successor did not confirm the session list: {error}");
        }
        let summary = handle.hand_over(self.restart_expected_ms).await?;
        if summary.detached_turns > 0 {
            eprintln!(
                "hookline serve: {} turns waiting for an approval go on in the successor",
                summary.detached_turns
            );
        }
        eprintln!(
            "hookline serve: {} of {count} sessions handed over",
            summary.moved.len()
        );
        report_end(&summary.notes, summary.stopped_turns, summary.closed).await;
        eprintln!(
            "hookline serve: handed over to pid {pid} in {} ms",
            started.elapsed().as_millis()
        );
        Ok(Ended::HandedOver)
    }

    /// SIGTERM or SIGINT: today's drain (SPEC G2).
    async fn drain(
        self,
        handle: ServeHandle,
        signal: &'static str,
        mut again: Signals,
    ) -> Result<Ended, ServeCliError> {
        eprintln!(
            "hookline serve: {signal}; draining (budget {} ms)",
            self.offer.1
        );
        serve_replace::notify(&[sd_notify::NotifyState::Stopping]);
        // A second signal exits at once: every acknowledged record is already synced.
        actix_rt::spawn(async move {
            loop {
                let signal = again.next().await;
                if signal != "SIGHUP" {
                    eprintln!("hookline serve: {signal} again; exiting now");
                    std::process::exit(1);
                }
            }
        });
        let summary = handle.drain(signal, self.restart_expected_ms).await?;
        report_end(&summary.notes, summary.stopped_turns, summary.closed).await;
        eprintln!("hookline serve: drained");
        Ok(Ended::Drained)
    }
}

/// Says what the shutdown left to say, and waits (bounded) for the shared state to close.
async fn report_end(
    notes: &[hookline_messages::note::Note],
    stopped_turns: usize,
    closed: hookline_actors::lifecycle::SharedStateClosed,
) {
    for note in notes {
        eprintln!("hookline serve: {note}");
    }
    if stopped_turns > 0 {
        eprintln!(
            "hookline serve: {stopped_turns} turns ran past the drain budget and were stopped"
        );
    }
    if !closed.wait(CLOSE_WAIT).await {
        eprintln!("hookline serve: shutdown handlers still running; exiting without waiting.");
    }
}

/// The next successor on the rendezvous; never, without one.
async fn accept(rendezvous: Option<&Rendezvous>) -> Result<Successor, HandoverError> {
    match rendezvous {
        Some(rendezvous) => rendezvous.accept().await,
        None => std::future::pending().await,
    }
}

/// How a started successor exited; never, without one.
async fn wait_child(child: &mut Option<tokio::process::Child>) -> String {
    match child {
        Some(child) => match child.wait().await {
            Ok(status) => status.to_string(),
            Err(error) => error.to_string(),
        },
        None => std::future::pending().await,
    }
}

/// SIGTERM, SIGINT and SIGHUP, one after another.
pub(crate) struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    /// Replaces the server with a successor (issue 49); before, it killed the process at once.
    #[cfg(unix)]
    hup: tokio::signal::unix::Signal,
}

pub(crate) fn signals() -> Result<Signals, ServeCliError> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Signals {
            term: signal(SignalKind::terminate()).map_err(ServeCliError::Signals)?,
            int: signal(SignalKind::interrupt()).map_err(ServeCliError::Signals)?,
            hup: signal(SignalKind::hangup()).map_err(ServeCliError::Signals)?,
        })
    }
    #[cfg(not(unix))]
    Ok(Signals {})
}

impl Signals {
    /// The next signal's name.
    async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.term.recv() => "SIGTERM",
                _ = self.int.recv() => "SIGINT",
                _ = self.hup.recv() => "SIGHUP",
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "Ctrl-C"
        }
    }
}
