//! Where `hookline serve` listens and where a successor finds it (issue 49): the listening
//! socket comes from the server being replaced, else from systemd's socket activation
//! (`LISTEN_FDS`), else it is bound here; the rendezvous socket lies beside the file store's
//! root, or where `--handover-socket` says.

use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsFd as _;
use std::path::{Path, PathBuf};

use hookline_host::handover::SOCKET_NAME;

use super::serve_store::StoreArgs;

/// Where the listening socket came from, as the start line says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Bound by this process.
    Bound,
    /// Passed by systemd (socket activation).
    Activated,
    /// Handed over by the server this one replaces.
    HandedOver,
}

/// The socket to serve on: the first handed over, else systemd's first, else `listen` bound.
///
/// # Errors
/// The system's error when systemd's descriptor is unusable or `listen` cannot be bound.
pub(crate) fn listening_socket(
    listen: SocketAddr,
    handed_over: Vec<TcpListener>,
) -> std::io::Result<(TcpListener, Origin)> {
    if let Some(socket) = handed_over.into_iter().next() {
        return Ok((socket, Origin::HandedOver));
    }
    if let Some(socket) = listenfd::ListenFd::from_env().take_tcp_listener(0)? {
        // Close-on-exec: systemd passes it inheritable, and no plugin process may hold it.
        let flags = rustix::io::fcntl_getfd(socket.as_fd())?;
        rustix::io::fcntl_setfd(socket.as_fd(), flags | rustix::io::FdFlags::CLOEXEC)?;
        return Ok((socket, Origin::Activated));
    }
    // std binds close-on-exec, with SO_REUSEADDR, and listens with a backlog of 128 (Linux caps
    // it at somaxconn): connections made while the successor starts queue there.
    Ok((TcpListener::bind(listen)?, Origin::Bound))
}

/// The rendezvous socket's path: `--handover-socket`, else `hookline-serve.sock` in the file
/// store's directory (the store's default, `.hookline` under `root`, when none is given); with
/// a PostgreSQL store, `hookline-serve-NODE.sock` (`node`: this node's name) in
/// `$XDG_RUNTIME_DIR` (else the temporary directory), since the node has no directory of its
/// own.
pub(crate) fn rendezvous_path(
    given: Option<&Path>,
    store: &StoreArgs,
    root: &Path,
    node: Option<&str>,
) -> PathBuf {
    if let Some(path) = given {
        return path.to_owned();
    }
    if store.is_postgres() {
        let dir = std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .filter(|dir| dir.is_dir())
            .unwrap_or_else(std::env::temp_dir);
        return match node {
            Some(node) => dir.join(format!("hookline-serve-{node}.sock")),
            None => dir.join(SOCKET_NAME),
        };
    }
    store
        .store_dir()
        .cloned()
        .unwrap_or_else(|| root.join(".hookline"))
        .join(SOCKET_NAME)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        store: StoreArgs,
    }

    fn store(flags: &[&str]) -> StoreArgs {
        Cli::try_parse_from(std::iter::once("x").chain(flags.iter().copied()))
            .unwrap()
            .store
    }

    #[test]
    fn the_rendezvous_lies_beside_the_store_unless_a_flag_names_it() {
        let root = Path::new("/srv/ws");
        assert_eq!(
            rendezvous_path(None, &store(&[]), root, None),
            Path::new("/srv/ws/.hookline/hookline-serve.sock")
        );
        assert_eq!(
            rendezvous_path(None, &store(&["--store", "/var/lib/hl"]), root, None),
            Path::new("/var/lib/hl/hookline-serve.sock")
        );
        assert_eq!(
            rendezvous_path(Some(Path::new("/run/hl.sock")), &store(&[]), root, None),
            Path::new("/run/hl.sock")
        );
        let pg = rendezvous_path(
            None,
            &store(&["--store", "postgres://db/hl", "--node", "n1"]),
            root,
            Some("n1"),
        );
        assert!(pg.ends_with("hookline-serve-n1.sock"), "{}", pg.display());
    }

    #[test]
    fn a_port_zero_listener_is_bound_here_and_a_handed_over_one_wins() {
        let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let (own, origin) = listening_socket(any, Vec::new()).unwrap();
        assert_eq!(origin, Origin::Bound);
        let addr = own.local_addr().unwrap();
        assert_ne!(addr.port(), 0);
        let (inherited, origin) = listening_socket(any, vec![own]).unwrap();
        assert_eq!(origin, Origin::HandedOver);
        assert_eq!(inherited.local_addr().unwrap(), addr);
    }
}
