#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::fd::AsFd as _;
use std::time::Duration;

use super::*;

const WAIT: Duration = Duration::from_secs(10);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_successor_takes_the_listener_says_ready_and_gets_the_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(SOCKET_NAME);
    let runtime = runtime();
    let rendezvous = runtime.block_on(async { Rendezvous::bind(&path) }).unwrap();
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = tcp.local_addr().unwrap();
    let successor_path = path.clone();
    let successor = std::thread::spawn(move || {
        let mut old = Predecessor::connect(&successor_path, WAIT).unwrap();
        let listeners = old.take_listeners();
        assert_eq!(listeners.len(), 1);
        // The same socket: what the old one listens on, this one accepts.
        assert_eq!(listeners[0].local_addr().unwrap(), addr);
        // Received close-on-exec: no plugin process inherits it.
        let flags = rustix::io::fcntl_getfd(listeners[0].as_fd()).unwrap();
        assert!(flags.contains(rustix::io::FdFlags::CLOEXEC));
        assert_eq!(old.offer().node.as_deref(), Some("n1"));
        old.ready().unwrap();
        let ids = old.sessions(WAIT).unwrap();
        old.adopted(ids.len()).unwrap();
        (ids, listeners)
    });
    let mut accepted = runtime.block_on(rendezvous.accept()).unwrap();
    accepted
        .offer(
            Offer::new(
                std::process::id(),
                Some("n1".into()),
                100,
                vec![addr.to_string()],
            ),
            &[tcp.as_fd()],
        )
        .unwrap();
    let answer = accepted.answer(WAIT).unwrap();
    assert_eq!(
        answer,
        FromSuccessor::Ready {
            pid: std::process::id()
        }
    );
    let adopted = accepted
        .sessions(vec!["s1".into(), "s2".into()], WAIT)
        .unwrap();
    assert_eq!(adopted, 2);
    let (ids, listeners) = successor.join().unwrap();
    assert_eq!(ids, vec!["s1".to_owned(), "s2".to_owned()]);
    // A connection made now is accepted on the successor's duplicate once ours is closed.
    drop(tcp);
    let _client = std::net::TcpStream::connect(addr).unwrap();
    listeners[0].accept().unwrap();
}

#[test]
fn a_live_rendezvous_is_in_use_and_a_stale_one_is_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(SOCKET_NAME);
    let runtime = runtime();
    runtime.block_on(async {
        let first = Rendezvous::bind(&path).unwrap();
        let second = Rendezvous::bind(&path).unwrap_err();
        assert!(matches!(second, HandoverError::InUse { .. }), "{second}");
        drop(first);
        assert!(!path.exists(), "its own file is removed at drop");
        // A file left by a crashed server (nobody listening) is taken over.
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        assert!(path.exists());
        let _third = Rendezvous::bind(&path).unwrap();
    });
}

#[test]
fn a_published_successor_socket_survives_the_predecessor_drop() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(SOCKET_NAME);
    let runtime = runtime();
    runtime.block_on(async {
        let old = Rendezvous::bind(&path).unwrap();
        let mut new = Rendezvous::bind_beside(&path).unwrap();
        assert_ne!(new.path(), path.as_path());
        new.publish(&path).unwrap();
        drop(old);
        assert!(
            path.exists(),
            "the old one left the successor's socket in place"
        );
        assert!(std::os::unix::net::UnixStream::connect(&path).is_ok());
    });
}

#[test]
fn a_peer_that_is_not_a_hookline_server_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let talker = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        std::io::Write::write_all(&mut stream, b"{\"type\":\"offer\",\"protocol\":\"other\",\"version\":9,\"pid\":1,\"node\":null,\"drain_budget_ms\":0,\"listeners\":[]}\n").unwrap();
        // Keep the stream open until the successor has read.
        let _ = std::io::Read::read(&mut stream, &mut [0u8; 1]);
    });
    let error = Predecessor::connect(&path, WAIT).unwrap_err();
    assert!(matches!(error, HandoverError::Protocol(_)), "{error}");
    talker.join().unwrap();
}

#[test]
fn a_silent_peer_times_out_within_the_wait() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("silent.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let started = std::time::Instant::now();
    let error = Predecessor::connect(&path, Duration::from_millis(200)).unwrap_err();
    assert!(matches!(error, HandoverError::Timeout(_)), "{error}");
    assert!(started.elapsed() < Duration::from_secs(5));
}
