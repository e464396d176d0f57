//! A rolling replacement of two PostgreSQL nodes behind HAProxy (issue 49 item 4/5): two
//! `hookline serve` nodes on one PostgreSQL store, HAProxy in front with the committed
//! `deploy/haproxy.cfg`, and clients driving sessions through the balancer without pause (JSON
//! turns, event streams, WebSockets reconnected on 1012, each turn on a new connection to the
//! balancer) while node A and then node B are each replaced with `--replace`, twice round,
//! alternating their plugin sets A and B as `tests/serve_replace_load.rs` does; three clients in
//! four keep their connections to the balancer alive. Before each
//! replacement a few turns on the node being replaced wait for an approval; it is answered
//! through the balancer after the swap.
//!
//! Checked: no refused connection and no failed request through the balancer; every turn's
//! answer carries exactly one set's marker, and once a node is replaced its sessions' turns
//! carry the new set's; HAProxy never took a node out (its health checks never failed); each
//! approval is asked again on the successor, answered once, and its call runs once; every
//! acknowledged turn is stored, in order; no old server or plugin process is left. Reported
//! (stderr): each replacement's time from the request to the old process's exit, and the p99
//! turn latency during replacements beside the p99 outside them.
//!
//! Size: 96 sessions and 2 rounds (4 replacements) by default; `HOOKLINE_REPLACE_ROLLING=96x3`
//! runs 96 sessions and 3 rounds.
//!
//! Needs `haproxy` and `python3` (skips without them, saying so, unless
//! `HOOKLINE_REQUIRE_SYSTEM_TESTS=1`) and PostgreSQL (`tests/support/pg.rs`).
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/balancer.rs"]
mod balancer;
#[path = "support/pg.rs"]
mod pg;
#[path = "support/system.rs"]
mod system;

mod cluster_support;
mod replace_support;

use std::collections::HashSet;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use balancer::{haproxy, start_balancer};
use cluster_support::{listen_url, reader, stored, user_texts, Client};
use hookline::messages::record::Record;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use replace_support::{
    acked_texts, alive, answer_after_swap, ask_approvals, assert_in_order, children, client,
    p99_during_and_outside, pending_approvals, wait_turns, Seen, Server, Turn, DEADLINE, MARKER,
};

/// Sessions driven through the balancer (spread over both nodes) and times round the two
/// nodes: `HOOKLINE_REPLACE_ROLLING=SESSIONSxROUNDS`, else 96x2 (about 30 s on 2 busy cores;
/// fewer sessions seldom hit the race `option http-server-close` closes, docs/deploy.md).
fn size() -> (usize, usize) {
    std::env::var("HOOKLINE_REPLACE_ROLLING")
        .ok()
        .and_then(|v| {
            let (s, n) = v.split_once('x')?;
            Some((s.parse().ok()?, n.parse().ok()?))
        })
        .unwrap_or((96, 2))
}
/// Turns waiting for an approval across each replacement.
const APPROVALS: usize = 2;

/// The two nodes' deployment: one workspace root and store, a plugin directory per node (each
/// node's set changes when it is replaced, the other's not yet).
struct Deployment {
    dir: tempfile::TempDir,
    store: String,
}

impl Deployment {
    fn new(store: String) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("root")).unwrap();
        let deployment = Self { dir, store };
        for node in ["a", "b"] {
            deployment.use_set(node, "A");
            std::fs::write(
                deployment.plugins(node).join("marker/plugin.json"),
                r#"{"entry": "plugin.py", "interpreter": "python3"}"#,
            )
            .unwrap();
        }
        deployment
    }

    fn plugins(&self, node: &str) -> PathBuf {
        self.dir.path().join(format!("plugins-{node}"))
    }

    fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    /// Makes `node`'s plugin directory set `set` (what its next server loads).
    fn use_set(&self, node: &str, set: &str) {
        let dir = self.plugins(node).join("marker");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("plugin.py"), MARKER.replace("@SET@", set)).unwrap();
    }

    /// `hookline serve` as node `node` on the shared store, its rendezvous at `DIR/NODE.sock`
    /// (as `--node` alone would put it in `$XDG_RUNTIME_DIR`), `--replace` when `replace`; its
    /// URL.
    fn spawn(&self, node: &str, generation: usize, replace: bool) -> (Server, String) {
        let log = self.dir.path().join(format!("{node}{generation}.log"));
        let mut command = Command::new(env!("CARGO_BIN_EXE_hookline"));
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--workspace-root"])
            .arg(self.root())
            .args(["--store", &self.store, "--migrate", "--node", node])
            .arg("--handover-socket")
            .arg(self.dir.path().join(format!("{node}.sock")))
            .arg("--plugins")
            .arg(self.plugins(node))
            .args(["--drain-budget-ms", "5000"])
            .env(
                "HOOKLINE_HOME",
                self.dir.path().join(format!("home-{node}")),
            )
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap());
        if replace {
            command.arg("--replace");
        }
        let mut child = command.spawn().unwrap();
        let url = listen_url(&mut child);
        let server = Server {
            pid: i32::try_from(child.id()).unwrap(),
            child: Some(child),
            log,
        };
        let url = url.unwrap_or_else(|| panic!("{node} never listened:\n{}", server.log_text()));
        (server, url)
    }
}

/// The sessions among `keys` that the server at `node` holds.
async fn held_by(node: &str, keys: &HashSet<String>) -> HashSet<String> {
    let client = Client::new();
    let mut held = HashSet::new();
    for key in keys {
        if let Ok((200, _)) = client.get(&format!("{node}/v1/sessions/{key}")).await {
            held.insert(key.clone());
        }
    }
    held
}

#[test]
fn two_postgres_nodes_replaced_in_turn_behind_haproxy_drop_nothing() {
    let Some(haproxy) = haproxy("the rolling replacement test (tests/serve_replace_rolling.rs)")
    else {
        return;
    };
    let python = system::program(
        "the rolling replacement test (its plugin sets)",
        "python3",
        &[],
        "Debian: apt-get install -y python3",
    );
    if python.is_none() {
        return;
    }
    let (sessions, rounds) = size();
    let deployment = Deployment::new(pg::database_url());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let names = ["a", "b"];
    let mut nodes: Vec<(Server, String)> = names
        .iter()
        .map(|node| deployment.spawn(node, 0, false))
        .collect();
    let ports =
        [&nodes[0].1, &nodes[1].1].map(|url| url.rsplit(':').next().unwrap().parse().unwrap());
    let (balancer, lb) = runtime.block_on(start_balancer(
        &haproxy,
        deployment.dir.path(),
        ports,
        &Client::new(),
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Seen::default());
    let clients: Vec<_> = (0..sessions)
        .map(|n| {
            // Three clients in four keep their connections to the balancer alive, as browsers
            // and SDKs do; the others open one per request.
            let keep_alive = (n / 4) % 4 != 3;
            runtime.spawn(client(
                lb.clone(),
                n,
                keep_alive,
                stop.clone(),
                seen.clone(),
            ))
        })
        .collect();
    wait_turns(&seen, sessions * 3);
    let mut plugin_pids: Vec<i32> = nodes.iter().flat_map(|(s, _)| children(s.pid)).collect();
    let mut windows: Vec<(Instant, Instant)> = Vec::new();
    let mut sets = ["A", "A"];
    let mut swap = 0;
    // Each approval asked across a replacement: its session and call id.
    let mut approved: Vec<(String, String)> = Vec::new();
    for _round in 0..rounds {
        for (at, name) in names.iter().enumerate() {
            swap += 1;
            let node_url = nodes[at].1.clone();
            let waiting = ask_approvals(&runtime, &lb, &node_url, swap, APPROVALS);
            let approvals = pending_approvals(&runtime, &node_url, &waiting.keys);
            approved.extend(approvals.iter().map(|(k, (c, _))| (k.clone(), c.clone())));
            let old_set = sets[at];
            let set = if old_set == "A" { "B" } else { "A" };
            sets[at] = set;
            deployment.use_set(name, set);
            let old_plugins = children(nodes[at].0.pid);
            let asked = Instant::now();
            let (next, url) = deployment.spawn(name, swap, true);
            assert_eq!(url, node_url, "{}", next.log_text());
            let mut old = std::mem::replace(&mut nodes[at].0, next);
            let code = old.exited();
            assert_eq!(code, Some(0), "{}", old.log_text());
            let took = asked.elapsed();
            windows.push((asked, Instant::now()));
            let _ = writeln!(
                std::io::stderr(),
                "swap {swap}: node {name} to set {set}: {} ms from the request to the old process's exit",
                took.as_millis()
            );
            for id in &old_plugins {
                let deadline = Instant::now() + DEADLINE;
                while alive(*id) {
                    assert!(
                        Instant::now() < deadline,
                        "plugin {id} of node {name}'s old server still runs"
                    );
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            drop(old);
            answer_after_swap(
                &runtime,
                &lb,
                &node_url,
                &deployment.root(),
                waiting,
                &approvals,
                old_set,
            );
            plugin_pids.extend(children(nodes[at].0.pid));
            // The replaced node's sessions now run the new set; the other node's, its own.
            let from = seen.turns.lock().unwrap().len();
            wait_turns(&seen, sessions * 2);
            let after_exit = windows.last().unwrap().1;
            // The holders of the sessions of exactly the turns checked (a turn acknowledged
            // later may be of a session not asked about).
            let upto = seen.turns.lock().unwrap().len();
            let keys: HashSet<String> = seen.turns.lock().unwrap()[from..upto]
                .iter()
                .map(|t| t.session.clone())
                .collect();
            let held = runtime.block_on(held_by(&node_url, &keys));
            let turns = seen.turns.lock().unwrap();
            let wrong: Vec<String> = turns[from..upto]
                .iter()
                .filter(|t| t.started > after_exit && !t.marker.is_empty())
                .filter(|t| {
                    let want = if held.contains(&t.session) {
                        set
                    } else {
                        sets[1 - at]
                    };
                    t.marker != want
                })
                .map(|t| {
                    let on: Vec<_> = nodes
                        .iter()
                        .map(|(_, url)| {
                            let status = runtime.block_on(
                                Client::new().get(&format!("{url}/v1/sessions/{}", t.session)),
                            );
                            status.map(|(code, _)| code)
                        })
                        .collect();
                    format!(
                        "{}: '{}' answered with set {} {} ms after the exit; held by node {name}: {}; GET on a, b: {on:?}",
                        t.session,
                        t.sent,
                        t.marker,
                        t.started.duration_since(after_exit).as_millis(),
                        held.contains(&t.session),
                    )
                })
                .collect();
            assert!(
                wrong.is_empty(),
                "after swap {swap} (node {name} to set {set}): {wrong:#?}\n{}",
                balancer.command("show table hookline_nodes")
            );
        }
    }
    stop.store(true, Ordering::Release);
    runtime.block_on(async {
        for client in clients {
            client.await.unwrap();
        }
    });
    let failed = seen.failed.lock().unwrap().clone();
    let turns = std::mem::take(&mut *seen.turns.lock().unwrap());
    let _ = writeln!(
        std::io::stderr(),
        "{sessions} sessions through HAProxy, {swap} replacements: {} turns, {} failed; {}",
        turns.len(),
        failed.len(),
        p99_during_and_outside(&turns, &windows),
    );
    // HAProxy's side of the same run: errors it saw towards the clients and the nodes, and
    // what it retried or sent to the other node.
    let stats = balancer.stats();
    let counters: Vec<(String, Vec<(&str, String)>)> = stats
        .iter()
        .filter(|(row, _)| !row.starts_with("stats"))
        .map(|(row, fields)| {
            let picked = [
                "ereq", "econ", "eresp", "wretr", "wredis", "hrsp_5xx", "cli_abrt", "srv_abrt",
            ]
            .into_iter()
            .filter_map(|k| fields.get(k).map(|v| (k, v.clone())))
            .filter(|(_, v)| !v.is_empty())
            .collect();
            (row.clone(), picked)
        })
        .collect();
    let _ = writeln!(
        std::io::stderr(),
        "haproxy: {counters:?}\nhaproxy's captured protocol errors: {}",
        balancer.command("show errors")
    );
    assert!(
        failed.is_empty(),
        "{} failed: {:?}",
        failed.len(),
        &failed[..failed.len().min(5)]
    );
    // HAProxy never saw a node go (the listening socket outlived every process), and had
    // nothing to hide: no connection to a node failed, no answer was cut, nothing was retried
    // or sent to the other node.
    let log = balancer.log_text();
    assert!(
        !log.contains(" is DOWN") && !log.contains("Health check for server"),
        "haproxy's health checks failed:\n{log}"
    );
    let backend = &stats["hookline_nodes/BACKEND"];
    for name in ["econ", "eresp", "wretr", "wredis", "hrsp_5xx"] {
        assert_eq!(backend[name], "0", "haproxy's {name}: {counters:?}");
    }
    for (server, _) in &mut nodes {
        kill(Pid::from_raw(server.pid), Signal::SIGTERM).unwrap();
        assert_eq!(server.exited(), Some(0), "{}", server.log_text());
    }
    for id in &plugin_pids {
        let deadline = Instant::now() + DEADLINE;
        while alive(*id) {
            assert!(Instant::now() < deadline, "plugin {id} still runs");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    runtime.block_on(assert_stored_in_order(&deployment.store, &turns));
    runtime.block_on(assert_ran_once(&deployment.store, &approved));
    drop(balancer);
}

/// Every acknowledged turn's user message is stored in the database, in the order acknowledged.
async fn assert_stored_in_order(store: &str, turns: &[Turn]) {
    let db = reader(store).await;
    for (session, texts) in acked_texts(turns) {
        let records = stored(&db, session).await;
        let users = user_texts(&records);
        let users: Vec<&str> = users.iter().map(String::as_str).collect();
        assert_in_order(session, &users, &texts);
    }
}

/// Each approved call is stored once and its result once: it ran on one server only.
async fn assert_ran_once(store: &str, approved: &[(String, String)]) {
    let db = reader(store).await;
    for (session, call) in approved {
        let records = stored(&db, session).await;
        let calls = records
            .iter()
            .filter(|r| matches!(r, Record::ToolCall { call_id, .. } if call_id == call))
            .count();
        let results = records
            .iter()
            .filter(|r| matches!(r, Record::ToolResult { call_id, .. } if call_id == call))
            .count();
        assert_eq!((calls, results), (1, 1), "{session}: call {call}");
    }
}
