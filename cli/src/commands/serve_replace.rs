//! Replacing a running `hookline serve` (issue 49, docs/serve.md "Replacing a running server"):
//! the running server's side (a successor connects to its rendezvous; on SIGHUP it starts one
//! with its own command line) and the successor's (`--replace`, `--replace --check`).
//!
//! The rendezvous protocol itself is [`hookline_host::handover`]; this module runs its blocking
//! steps off the runtime, bounds every wait, and says on stderr what happened.

use std::ffi::OsString;
use std::net::TcpListener;
use std::os::fd::AsFd as _;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hookline_host::handover::{FromSuccessor, HandoverError, Offer, Predecessor, Successor};

/// How long the running server waits for a successor's `ready` (or `failed`): its plugins
/// start, its store opens, and its server binds in that time.
pub(crate) const ANSWER_WAIT: Duration = Duration::from_secs(120);

/// How long a successor waits for the running server's offer.
pub(crate) const OFFER_WAIT: Duration = Duration::from_secs(10);

/// How long a successor waits for the session list after its `ready`.
pub(crate) const SESSIONS_WAIT: Duration = Duration::from_secs(30);

/// How long past its drain budget a successor waits to see its predecessor exit.
pub(crate) const EXIT_MARGIN: Duration = Duration::from_secs(15);

/// How long the running server waits to reap a successor that failed.
const REAP_WAIT: Duration = Duration::from_secs(10);

/// The flag a successor is started with.
pub(crate) const REPLACE_FLAG: &str = "--replace";

/// What a successor's negotiation came to, on the running server's side.
pub(crate) enum Verdict {
    /// It serves: hand over to it.
    Ready {
        /// Its connection, to send the session list on.
        successor: Box<Successor>,
        /// Its process id.
        pid: u32,
    },
    /// It does not replace this server (it failed, went away, or only checked): keep serving.
    Stay(String),
}

/// Offers `listener` to a connected successor and waits (bounded) for its answer, off the
/// runtime.
pub(crate) async fn negotiate(
    mut successor: Successor,
    offer: Offer,
    listener: Arc<TcpListener>,
) -> Verdict {
    let negotiated = tokio::task::spawn_blocking(move || {
        successor.offer(offer, &[listener.as_fd()])?;
        let answer = successor.answer(ANSWER_WAIT)?;
        Ok::<_, HandoverError>((successor, answer))
    })
    .await;
    match negotiated {
        Ok(Ok((successor, FromSuccessor::Ready { pid }))) => Verdict::Ready {
            successor: Box::new(successor),
            pid,
        },
        Ok(Ok((_, FromSuccessor::Failed { reason }))) => {
            Verdict::Stay(format!("the successor could not start: {reason}"))
        }
        Ok(Ok((_, FromSuccessor::Checked { pid }))) => Verdict::Stay(format!(
            "pid {pid} checked that a successor would start (--replace --check)"
        )),
        Ok(Ok((_, FromSuccessor::Adopted { .. }))) => {
            Verdict::Stay("the successor answered out of turn".into())
        }
        Ok(Err(error)) => Verdict::Stay(format!("the successor did not start: {error}")),
        Err(error) => Verdict::Stay(format!("the handover task failed: {error}")),
    }
}

/// Sends the sessions to adopt to a successor that said `ready`, and waits (bounded) until it
/// has adopted them; how many it did.
pub(crate) async fn send_sessions(
    successor: Box<Successor>,
    ids: Vec<String>,
) -> Result<usize, String> {
    let mut successor = successor;
    match tokio::task::spawn_blocking(move || successor.sessions(ids, SESSIONS_WAIT)).await {
        Ok(Ok(count)) => Ok(count),
        Ok(Err(error)) => Err(error.to_string()),
        Err(error) => Err(error.to_string()),
    }
}

/// Starts this server's successor (SIGHUP): the executable this process was started as, with
/// its arguments and `--replace`; it re-reads the config file and the plugin directory, and
/// finds this server on the rendezvous. Its stdout and stderr are this process's.
///
/// # Errors
/// The system's error when the executable cannot be started.
pub(crate) fn spawn_successor() -> std::io::Result<tokio::process::Child> {
    let exe = successor_program(std::env::args_os().next())?;
    let args = successor_args(std::env::args_os().skip(1));
    tokio::process::Command::new(exe).args(args).spawn()
}

/// The program a successor runs: the name this process was started with (`argv[0]`: a path, or
/// a name looked up on the `PATH` again), so a binary upgraded in place is the one that starts.
/// `current_exe` would name this process's own file, which an upgrade replaced (on Linux it then
/// reads `... (deleted)`); it is the fallback when there is no `argv[0]`.
fn successor_program(argv0: Option<OsString>) -> std::io::Result<OsString> {
    match argv0.filter(|name| !name.is_empty()) {
        Some(name) => Ok(name),
        None => Ok(std::env::current_exe()?.into_os_string()),
    }
}

/// This process's arguments with `--replace` added once (a successor of a successor is started
/// with the same line).
fn successor_args(args: impl Iterator<Item = OsString>) -> Vec<OsString> {
    let mut args: Vec<OsString> = args.collect();
    if !args.iter().any(|arg| arg == REPLACE_FLAG) {
        args.push(REPLACE_FLAG.into());
    }
    args
}

/// Waits (bounded) for a successor that did not take over to exit, so no zombie is left; kills
/// it when it outstays the wait.
pub(crate) async fn reap(mut child: tokio::process::Child) {
    match tokio::time::timeout(REAP_WAIT, child.wait()).await {
        Ok(Ok(status)) => eprintln!("hookline serve: the successor exited ({status})"),
        Ok(Err(error)) => eprintln!("hookline serve: cannot wait for the successor: {error}"),
        Err(_) => {
            eprintln!(
                "hookline serve: the successor did not exit within {} s; killing it",
                REAP_WAIT.as_secs()
            );
            let _ = child.kill().await;
        }
    }
}

/// The successor's side: connects to the server answering on `path` and takes its offer.
///
/// # Errors
/// [`HandoverError`] when no hookline server of this version answers there.
pub(crate) fn connect(path: &Path) -> Result<Predecessor, HandoverError> {
    Predecessor::connect(path, OFFER_WAIT)
}

/// Says the sessions are adopted (the predecessor then gives their leases back).
pub(crate) async fn adopted(predecessor: &mut Option<Predecessor>, count: usize) {
    let Some(mut old) = predecessor.take() else {
        return;
    };
    match tokio::task::spawn_blocking(move || (old.adopted(count), old)).await {
        Ok((result, old)) => {
            if let Err(error) = result {
                eprintln!("hookline serve: the server replaced did not hear adopted: {error}");
            }
            *predecessor = Some(old);
        }
        Err(error) => eprintln!("hookline serve: the handover task failed: {error}"),
    }
}

/// The successor's side after `ready`: the sessions to adopt (none when the predecessor went
/// away first: then nothing moves but what the store hands over by itself).
pub(crate) async fn sessions(predecessor: &mut Option<Predecessor>) -> Vec<String> {
    let Some(mut old) = predecessor.take() else {
        return Vec::new();
    };
    let (old, ids) = match tokio::task::spawn_blocking(move || {
        let ids = old.sessions(SESSIONS_WAIT);
        (old, ids)
    })
    .await
    {
        Ok((old, Ok(ids))) => (Some(old), ids),
        Ok((old, Err(error))) => {
            eprintln!("hookline serve: no session list from the server replaced: {error}");
            (Some(old), Vec::new())
        }
        Err(error) => {
            eprintln!("hookline serve: the handover task failed: {error}");
            (None, Vec::new())
        }
    };
    *predecessor = old;
    ids
}

/// How long, from its start, a successor treats a session the predecessor holds as one moving
/// here: the predecessor's drain budget and a margin.
pub(crate) fn predecessor_wait(offer: &Offer) -> Duration {
    Duration::from_millis(offer.drain_budget_ms) + EXIT_MARGIN
}

/// Watches (on a thread, bounded by the predecessor's drain budget and a margin) for the
/// replaced server to exit, and says when it did.
pub(crate) fn watch_exit(mut old: Predecessor, started: Instant) {
    let pid = old.offer().pid;
    let wait = predecessor_wait(old.offer());
    let spawned = std::thread::Builder::new()
        .name("hookline-handover".into())
        .spawn(move || {
            if old.gone_within(wait) {
                eprintln!(
                    "hookline serve: the server replaced (pid {pid}) has exited, {} ms after this one started",
                    started.elapsed().as_millis()
                );
            } else {
                eprintln!(
                    "hookline serve: the server replaced (pid {pid}) still runs after {} ms",
                    wait.as_millis()
                );
            }
        });
    if let Err(error) = spawned {
        eprintln!("hookline serve: cannot watch the server replaced: {error}");
    }
}

/// Tells systemd (when it started this process with `Type=notify`) what changed; nothing
/// without `NOTIFY_SOCKET`.
pub(crate) fn notify(states: &[sd_notify::NotifyState<'_>]) {
    if let Err(error) = sd_notify::notify(states) {
        eprintln!("hookline serve: cannot notify the service manager: {error}");
    }
}

/// `RELOADING=1` with the monotonic time systemd's `Type=notify-reload` asks for.
pub(crate) fn notify_reloading() {
    match sd_notify::NotifyState::monotonic_usec_now() {
        Ok(now) => notify(&[sd_notify::NotifyState::Reloading, now]),
        Err(_) => notify(&[sd_notify::NotifyState::Reloading]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_successor_gets_the_same_line_with_replace_added_once() {
        let line = |args: &[&str]| -> Vec<String> {
            successor_args(args.iter().map(OsString::from))
                .into_iter()
                .map(|a| a.into_string().unwrap_or_default())
                .collect()
        };
        assert_eq!(
            line(&["serve", "--plugins", "/p"]),
            ["serve", "--plugins", "/p", "--replace"]
        );
        assert_eq!(line(&["serve", "--replace"]), ["serve", "--replace"]);
    }

    #[test]
    fn a_successor_runs_the_program_named_at_start_so_an_upgraded_binary_starts() {
        let named = successor_program(Some("/usr/local/bin/hookline".into())).ok();
        assert_eq!(named, Some(OsString::from("/usr/local/bin/hookline")));
        assert!(successor_program(None).is_ok_and(|exe| !exe.is_empty()));
    }
}
