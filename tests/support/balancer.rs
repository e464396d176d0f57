//! HAProxy with the committed `deploy/haproxy.cfg` in front of two `hookline serve` nodes, for
//! the balancer tests (`tests/serve_haproxy.rs`, `tests/serve_replace_rolling.rs`). Needs
//! `haproxy` on the PATH: without it a test says so and skips, unless
//! `HOOKLINE_REQUIRE_SYSTEM_TESTS=1` (`system.rs`). Include it beside `system.rs` and
//! `cluster_support`.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::cluster_support::Client;
use crate::system;

/// How long HAProxy may take to answer `/healthz` through to a node.
const START_DEADLINE: Duration = Duration::from_secs(40);

/// The balancer process; killed when dropped.
pub(crate) struct Balancer {
    child: Child,
    log: PathBuf,
    stats: PathBuf,
}

impl Balancer {
    /// What HAProxy wrote on stderr so far (server state changes among it).
    pub(crate) fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// HAProxy's counters from `show stat` (its stats socket, which only the tests add): for each
    /// row, `PROXY/SERVER` (`hookline/FRONTEND`, `hookline_nodes/BACKEND`, `hookline_nodes/a`),
    /// field name (`econ`, `eresp`, `wretr`, `wredis`, `hrsp_5xx`, `cli_abrt`, ...) to value.
    pub(crate) fn stats(&self) -> HashMap<String, HashMap<String, String>> {
        let csv = self.command("show stat");
        let mut lines = csv.lines();
        let header: Vec<&str> = lines
            .next()
            .and_then(|h| h.strip_prefix("# "))
            .unwrap_or_else(|| panic!("no stat header in {csv}"))
            .split(',')
            .collect();
        lines
            .filter(|l| !l.is_empty())
            .map(|l| {
                let row: Vec<&str> = l.split(',').collect();
                let fields = header
                    .iter()
                    .zip(&row)
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect();
                (format!("{}/{}", row[0], row.get(1).unwrap_or(&"")), fields)
            })
            .collect()
    }
}

impl Balancer {
    /// The answer of the stats socket to `command` (`show stat`, `show table hookline_nodes`).
    pub(crate) fn command(&self, command: &str) -> String {
        let mut socket = UnixStream::connect(&self.stats).unwrap();
        socket.set_read_timeout(Some(START_DEADLINE)).unwrap();
        socket.write_all(format!("{command}\n").as_bytes()).unwrap();
        let mut answer = String::new();
        socket.read_to_string(&mut answer).unwrap();
        answer
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// HAProxy, or `None` (the test skips, saying so) where it is not installed.
pub(crate) fn haproxy(test: &str) -> Option<PathBuf> {
    system::program(
        test,
        "haproxy",
        &["/usr/sbin", "/usr/local/sbin"],
        "Debian: apt-get install -y haproxy",
    )
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port()
}

/// HAProxy in the foreground with the committed configuration, nodes A and B on loopback ports
/// `nodes`, its stderr in `dir/haproxy.log`; waits (bounded) until `/healthz` answers through it.
pub(crate) async fn start_balancer(
    haproxy: &Path,
    dir: &Path,
    nodes: [u16; 2],
    client: &Client,
) -> (Balancer, String) {
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/deploy/haproxy.cfg");
    let bind = format!("127.0.0.1:{}", free_port());
    let log = dir.join("haproxy.log");
    // A stats socket beside the committed configuration (a second -f), for the counters.
    let stats = dir.join("haproxy.sock");
    let extra = dir.join("haproxy-stats.cfg");
    std::fs::write(
        &extra,
        format!("global\n    stats socket {} mode 600\n", stats.display()),
    )
    .unwrap();
    let child = Command::new(haproxy)
        .args(["-db", "-f", config, "-f"])
        .arg(&extra)
        .env("HOOKLINE_LB_BIND", &bind)
        .env("HOOKLINE_NODE_A", format!("127.0.0.1:{}", nodes[0]))
        .env("HOOKLINE_NODE_B", format!("127.0.0.1:{}", nodes[1]))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("could not start haproxy: {e}"));
    let mut balancer = Balancer { child, log, stats };
    let url = format!("http://{bind}");
    let deadline = Instant::now() + START_DEADLINE;
    while !matches!(client.get(&format!("{url}/healthz")).await, Ok((200, _))) {
        assert!(
            Instant::now() < deadline && matches!(balancer.child.try_wait(), Ok(None)),
            "haproxy never answered on {bind}: {}",
            balancer.log_text()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (balancer, url)
}
