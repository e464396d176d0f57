//! Replacing a running `hookline serve` with the real binary (issue 49, A's part): a successor
//! started with `--replace` (or by the server itself on SIGHUP) takes the listening socket over
//! the rendezvous beside the store, and the old process hands over and exits. A client opening
//! a new connection for every request sees nothing refused and nothing failed; a successor that
//! cannot start (a plugin manifest error, a plugin that exits before its hello, an order naming a
//! missing plugin, a config that does not parse) exits non-zero with the reason and the old one
//! serves on; `--replace --check` says whether one would start; no old process or plugin process
//! is left. Every node listens on `127.0.0.1:0`.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cluster_support;
#[path = "support/pg.rs"]
mod pg;
mod replace_support;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cluster_support::{listen_url, Client, Node};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use replace_support::{alive, children};

/// A bound on every wait of these tests.
const DEADLINE: Duration = Duration::from_secs(40);

/// Exits before its hello, with an error of its own on stderr.
const EXITS_AT_START: &str =
    "import sys\nsys.stderr.write('policy module missing\\n')\nsys.exit(1)\n";

/// A deployment directory: the plugin `rust-guard` (the example plugin, a real process), the
/// workspace root and the store.
struct Deployment {
    dir: tempfile::TempDir,
    plugins: PathBuf,
    store: PathBuf,
}

impl Deployment {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let plugins = dir.path().join("plugins");
        let guard = plugins.join("rust-guard");
        std::fs::create_dir_all(guard.join("bin")).unwrap();
        std::fs::write(guard.join("plugin.json"), r#"{"entry": "bin/rust-guard"}"#).unwrap();
        std::fs::copy(
            env!("CARGO_BIN_EXE_hookline-example-plugin"),
            guard.join("bin/rust-guard"),
        )
        .unwrap();
        let store = dir.path().join("store");
        Self {
            dir,
            plugins,
            store,
        }
    }

    /// The flags every process of the deployment runs with (the SIGHUP successor re-runs them).
    fn flags(&self) -> Vec<String> {
        vec![
            "--plugins".into(),
            self.plugins.display().to_string(),
            "--drain-budget-ms".into(),
            "3000".into(),
        ]
    }

    fn start(&self) -> Node {
        let flags = self.flags();
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        Node::start("old", self.dir.path(), self.store.to_str().unwrap(), &flags)
    }

    /// `hookline serve ... --replace EXTRA`, as an operator types it: the same line as the
    /// running server's (port 0 too), its stderr in `DIR/NAME.log`.
    fn successor(&self, name: &str, extra: &[&str]) -> Successor {
        let log = self.dir.path().join(format!("{name}.log"));
        let child = Command::new(env!("CARGO_BIN_EXE_hookline"))
            .args(["serve", "--listen", "127.0.0.1:0", "--workspace-root"])
            .arg(self.dir.path().join("root"))
            .arg("--store")
            .arg(&self.store)
            .args(self.flags())
            .arg("--replace")
            .args(extra)
            .env("HOOKLINE_HOME", self.dir.path().join("home-old"))
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        Successor { child, log }
    }

    /// A second plugin directory beside `rust-guard`.
    fn add_plugin(&self, name: &str, manifest: &str, script: Option<&str>) {
        let dir = self.plugins.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("plugin.json"), manifest).unwrap();
        if let Some(script) = script {
            std::fs::write(dir.join("plugin.py"), script).unwrap();
        }
    }

    fn remove_plugin(&self, name: &str) {
        std::fs::remove_dir_all(self.plugins.join(name)).unwrap();
    }
}

/// A successor process; killed (and reaped) when dropped.
struct Successor {
    child: Child,
    log: PathBuf,
}

impl Drop for Successor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Successor {
    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits (bounded) for it to exit; its status code.
    fn exit_code(&mut self) -> i32 {
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            assert!(
                Instant::now() < deadline,
                "it did not exit; log:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM, then waits (bounded) for its drain to end it with status 0.
    fn terminate(&mut self) {
        kill(pid(self.child.id()), Signal::SIGTERM).unwrap();
        assert_eq!(self.exit_code(), 0, "{}", self.log_text());
    }
}

fn pid(id: u32) -> Pid {
    Pid::from_raw(i32::try_from(id).unwrap())
}

/// The successor's pid, as the old server's log names it after a SIGHUP.
fn successor_named(log: &str) -> i32 {
    log.split("handed over to pid ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("no successor named in:\n{log}"))
}

/// Waits (bounded) until none of `ids` runs.
fn assert_gone(ids: &[i32], what: &str) {
    let deadline = Instant::now() + DEADLINE;
    while ids.iter().any(|id| alive(*id)) {
        assert!(Instant::now() < deadline, "{what} still running: {ids:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (bounded) for the node to exit; its status and how long that took.
fn exited(node: &mut Node, since: Instant) -> (std::process::ExitStatus, Duration) {
    loop {
        if let Some(status) = node.exit_status() {
            return (status, since.elapsed());
        }
        assert!(
            since.elapsed() < DEADLINE,
            "the old server did not exit; log:\n{}",
            node.log_text()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// What the hammering clients saw.
#[derive(Default)]
struct Tally {
    ok: AtomicUsize,
    failed: Mutex<Vec<String>>,
}

/// Clients that each open a session, then alternate `/healthz` and a turn on it, every request
/// on a new connection, until `stop`.
fn hammer(
    runtime: &tokio::runtime::Runtime,
    base: &str,
    clients: usize,
    stop: &Arc<AtomicBool>,
    tally: &Arc<Tally>,
) -> Vec<tokio::task::JoinHandle<()>> {
    (0..clients)
        .map(|n| {
            let (base, stop, tally) = (base.to_owned(), stop.clone(), tally.clone());
            runtime.spawn(async move {
                let client = reqwest::Client::builder()
                    .timeout(DEADLINE)
                    .pool_max_idle_per_host(0)
                    .build()
                    .unwrap();
                let key = Client(client.clone()).open(&base).await;
                let mut i = 0u64;
                while !stop.load(Ordering::Acquire) {
                    i += 1;
                    let request = if i % 2 == 0 {
                        client.get(format!("{base}/healthz"))
                    } else {
                        client
                            .post(format!("{base}/v1/sessions/{key}/turns"))
                            .json(&serde_json::json!({ "text": format!("c{n} t{i}") }))
                    };
                    match request.send().await {
                        Ok(response) if response.status().is_success() => {
                            tally.ok.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(response) => {
                            let status = response.status();
                            let body = response.text().await.unwrap_or_default();
                            tally
                                .failed
                                .lock()
                                .unwrap()
                                .push(format!("{status}: {body}"));
                        }
                        Err(error) => tally.failed.lock().unwrap().push(format!("{error:?}")),
                    }
                }
            })
        })
        .collect()
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn a_replacement_under_new_connections_refuses_nothing_and_leaves_no_old_process() {
    let deployment = Deployment::new();
    let mut old = deployment.start();
    let old_plugins = children(old.pid().as_raw());
    assert_eq!(old_plugins.len(), 1, "one plugin process: {old_plugins:?}");
    let runtime = runtime();
    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Tally::default());
    let clients = hammer(&runtime, &old.url, 8, &stop, &tally);
    // Traffic first, then the replacement in the middle of it.
    let warm = Instant::now() + DEADLINE;
    while tally.ok.load(Ordering::Relaxed) < 50 {
        assert!(
            Instant::now() < warm,
            "no traffic: {:?}",
            tally.failed.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let asked = Instant::now();
    let mut new = deployment.successor("new", &[]);
    let url = listen_url(&mut new.child);
    assert_eq!(url.as_deref(), Some(old.url.as_str()), "{}", new.log_text());
    let (status, took) = exited(&mut old, asked);
    assert!(status.success(), "{status}; log:\n{}", old.log_text());
    let before = tally.ok.load(Ordering::Relaxed);
    let more = Instant::now() + DEADLINE;
    while tally.ok.load(Ordering::Relaxed) < before + 50 {
        assert!(
            Instant::now() < more,
            "no traffic after: {:?}",
            tally.failed.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::Release);
    runtime.block_on(async {
        for client in clients {
            client.await.unwrap();
        }
    });
    let failed = tally.failed.lock().unwrap().clone();
    let _ = writeln!(
        std::io::stderr(),
        "replacement: {} ms from --replace to the old process's exit; {} requests, {} failed",
        took.as_millis(),
        tally.ok.load(Ordering::Relaxed),
        failed.len()
    );
    assert!(
        failed.is_empty(),
        "{} failed: {:?}",
        failed.len(),
        &failed[..failed.len().min(5)]
    );
    assert_gone(&old_plugins, "the old server's plugin");
    let new_plugins = children(pid(new.child.id()).as_raw());
    assert_eq!(new_plugins.len(), 1, "{new_plugins:?}");
    assert!(
        old.log_text().contains("handed over to pid"),
        "{}",
        old.log_text()
    );
    new.terminate();
    assert_gone(&new_plugins, "the successor's plugin");
}

#[test]
fn a_successor_that_cannot_start_says_why_exits_non_zero_and_the_old_serves_on() {
    let deployment = Deployment::new();
    let mut old = deployment.start();
    let old_plugins = children(old.pid().as_raw());
    let runtime = runtime();
    let client = Client::new();
    let key = runtime.block_on(client.open(&old.url));
    let bad_config = deployment.dir.path().join("bad.toml");
    std::fs::write(&bad_config, "[serve\nlisten = ").unwrap();
    let python = std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok();
    // (what to break, the successor's extra flags, what its reason names)
    let mut cases: Vec<(&str, Vec<String>, &str)> = vec![
        ("manifest", vec![], "plugin.json is invalid"),
        (
            "config",
            vec!["--config".into(), bad_config.display().to_string()],
            "bad.toml",
        ),
        (
            "order",
            vec!["--order".into(), "missing-guard".into()],
            "names plugin 'missing-guard'",
        ),
    ];
    if python {
        cases.push(("hello", vec![], "exited before saying hello"));
    } else {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED case 'exits before hello': no python3"
        );
    }
    for (case, extra, reason) in cases {
        match case {
            "manifest" => deployment.add_plugin("broken", "{ not json", None),
            "hello" => deployment.add_plugin(
                "broken",
                r#"{"entry": "plugin.py", "interpreter": "python3"}"#,
                Some(EXITS_AT_START),
            ),
            _ => {}
        }
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let mut new = deployment.successor(case, &extra);
        let code = new.exit_code();
        let said = new.log_text();
        assert_ne!(code, 0, "{case}: {said}");
        assert!(said.contains(reason), "{case}: {said}");
        assert!(
            old.exit_status().is_none(),
            "{case}: the old one exited:\n{}",
            old.log_text()
        );
        let (status, body) = runtime.block_on(client.turn(&old.url, &key, case)).unwrap();
        assert_eq!(status, 200, "{case}: {body}");
        assert!(
            old.log_text().contains("still serving"),
            "{case}: {}",
            old.log_text()
        );
        if matches!(case, "manifest" | "hello") {
            deployment.remove_plugin("broken");
        }
        // The successor's plugin processes ended with it; the old one's still runs.
        assert!(old_plugins.iter().all(|id| alive(*id)), "{case}");
    }
    old.terminate();
    assert_gone(&old_plugins, "the old server's plugin");
}

#[test]
fn replace_check_says_whether_a_successor_would_start_and_changes_nothing() {
    let deployment = Deployment::new();
    let mut old = deployment.start();
    let old_plugins = children(old.pid().as_raw());
    let mut would = deployment.successor("check-ok", &["--check"]);
    let stdout = std::io::read_to_string(would.child.stdout.take().unwrap()).unwrap();
    assert_eq!(would.exit_code(), 0, "{}", would.log_text());
    assert!(stdout.contains("a successor would start"), "{stdout}");
    deployment.add_plugin("broken", "{ not json", None);
    let mut would_not = deployment.successor("check-bad", &["--check"]);
    assert_eq!(would_not.exit_code(), 1, "{}", would_not.log_text());
    assert!(
        would_not.log_text().contains("a successor would not start"),
        "{}",
        would_not.log_text()
    );
    // The old one served throughout, with its plugin.
    assert!(old.exit_status().is_none());
    assert_eq!(children(old.pid().as_raw()), old_plugins);
    let runtime = runtime();
    let (status, _) = runtime
        .block_on(Client::new().get(&format!("{}/readyz", old.url)))
        .unwrap();
    assert_eq!(status, 200);
    // Nothing is left of a check: no server, no plugin process.
    assert_eq!(children(pid(would.child.id()).as_raw()), Vec::<i32>::new());
    old.terminate();
}

#[test]
fn sighup_starts_the_successor_with_the_same_command_line_and_the_old_exits() {
    let deployment = Deployment::new();
    let mut old = deployment.start();
    let old_plugins = children(old.pid().as_raw());
    let runtime = runtime();
    let client = Client::new();
    let key = runtime.block_on(client.open(&old.url));
    let asked = Instant::now();
    kill(old.pid(), Signal::SIGHUP).unwrap();
    let (status, took) = exited(&mut old, asked);
    assert!(status.success(), "{status}; log:\n{}", old.log_text());
    let log = old.log_text();
    let successor = successor_named(&log);
    // From here on the successor is ours to end, whatever the asserts say.
    let _guard = KillOnDrop(successor);
    let _ = writeln!(
        std::io::stderr(),
        "SIGHUP: {} ms from the signal to the old process's exit",
        took.as_millis()
    );
    assert_gone(&old_plugins, "the old server's plugin");
    // Same address, same session, served by the successor.
    let (status, body) = runtime
        .block_on(client.turn(&old.url, &key, "after"))
        .unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(alive(successor));
    let new_plugins = children(successor);
    assert_eq!(new_plugins.len(), 1, "{new_plugins:?}");
    kill(Pid::from_raw(successor), Signal::SIGTERM).unwrap();
    assert_gone(&[successor], "the successor");
    assert_gone(&new_plugins, "the successor's plugin");
}

/// Kills a process this test started indirectly (the SIGHUP successor) when dropped.
struct KillOnDrop(i32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if alive(self.0) {
            let _ = kill(Pid::from_raw(self.0), Signal::SIGKILL);
        }
    }
}

/// Binds a listening socket on a free loopback port, puts it at descriptor 3 and execs the
/// server with `LISTEN_FDS=1` and its own pid in `LISTEN_PID`: what systemd's socket activation
/// does.
const ACTIVATE: &str = r#"
import os, socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(128)
os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)
os.environ["LISTEN_FDS"] = "1"
os.environ["LISTEN_PID"] = str(os.getpid())
exe = os.environ["HOOKLINE_EXE"]
os.execv(exe, [exe] + sys.argv[1:])
"#;

/// The next datagram on the notify socket, as text.
fn notified(socket: &std::os::unix::net::UnixDatagram) -> String {
    let mut buf = [0u8; 4096];
    let n = socket
        .recv(&mut buf)
        .expect("a notification within the wait");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[test]
fn under_systemd_the_activated_socket_is_served_and_a_sighup_reload_is_notified() {
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: needs python3 to pass a socket as systemd does"
        );
        return;
    }
    let deployment = Deployment::new();
    let notify_path = deployment.dir.path().join("notify.sock");
    let notify = std::os::unix::net::UnixDatagram::bind(&notify_path).unwrap();
    notify.set_read_timeout(Some(DEADLINE)).unwrap();
    let mut command = Command::new("python3");
    command
        .args(["-c", ACTIVATE])
        .env("HOOKLINE_EXE", env!("CARGO_BIN_EXE_hookline"))
        .env("NOTIFY_SOCKET", &notify_path);
    let store = deployment.store.display().to_string();
    let mut args = vec!["--store".to_owned(), store];
    args.extend(deployment.flags());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut old = Node::spawn("old", deployment.dir.path(), command, &args);
    // Said on stderr right after the start line on stdout.
    let said = Instant::now() + DEADLINE;
    while !old.log_text().contains("serving the socket systemd passed") {
        assert!(Instant::now() < said, "{}", old.log_text());
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(notified(&notify), "READY=1\n");
    let old_pid = old.pid().as_raw();
    kill(old.pid(), Signal::SIGHUP).unwrap();
    let reloading = notified(&notify);
    assert!(
        reloading.starts_with("RELOADING=1\nMONOTONIC_USEC="),
        "{reloading}"
    );
    let ready = notified(&notify);
    let successor: i32 = ready
        .strip_prefix("MAINPID=")
        .and_then(|rest| rest.strip_suffix("\nREADY=1\n"))
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("{ready}"));
    let _guard = KillOnDrop(successor);
    assert_ne!(successor, old_pid);
    let (status, _) = exited(&mut old, Instant::now());
    assert!(status.success(), "{}", old.log_text());
    let runtime = runtime();
    let (status, _) = runtime
        .block_on(Client::new().get(&format!("{}/readyz", old.url)))
        .unwrap();
    assert_eq!(status, 200);
    kill(Pid::from_raw(successor), Signal::SIGTERM).unwrap();
    assert_eq!(notified(&notify), "STOPPING=1\n");
    assert_gone(&[successor], "the successor");
}

/// `hookline serve` on PostgreSQL as node `name`, its rendezvous at `DIR/NAME.sock`;
/// `--replace` when `replace`.
fn pg_node(
    dir: &std::path::Path,
    url: &str,
    name: &str,
    replace: bool,
) -> (Child, Option<String>, PathBuf) {
    let log = dir.join(format!(
        "{name}-{}.log",
        if replace { "new" } else { "old" }
    ));
    std::fs::create_dir_all(dir.join("root")).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_hookline"));
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--workspace-root"])
        .arg(dir.join("root"))
        .args([
            "--store",
            url,
            "--migrate",
            "--node",
            name,
            "--drain-budget-ms",
            "3000",
        ])
        .arg("--handover-socket")
        .arg(dir.join(format!("{name}.sock")))
        .env("HOOKLINE_HOME", dir.join("home"))
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap());
    if replace {
        command.arg("--replace");
    }
    let mut child = command.spawn().unwrap();
    let url = listen_url(&mut child);
    (child, url, log)
}

/// Waits (bounded) for `child` to exit; its status.
fn wait_exit(child: &mut Child, log: &std::path::Path) -> std::process::ExitStatus {
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "it did not exit: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn two_postgres_nodes_replaced_in_turn_keep_their_sessions_under_their_names() {
    let url = pg::database_url();
    let dir = tempfile::tempdir().unwrap();
    let runtime = runtime();
    let client = Client::new();
    let mut nodes = Vec::new();
    for name in ["pg-a", "pg-b"] {
        let (child, base, log) = pg_node(dir.path(), &url, name, false);
        let base = base.unwrap_or_else(|| panic!("{}", std::fs::read_to_string(&log).unwrap()));
        let key = runtime.block_on(client.open(&base));
        nodes.push((name, child, base, key, log));
    }
    for (name, old, base, key, old_log) in &mut nodes {
        let (mut new, new_base, new_log) = pg_node(dir.path(), &url, name, true);
        assert_eq!(
            new_base.as_deref(),
            Some(base.as_str()),
            "{}",
            std::fs::read_to_string(&new_log).unwrap()
        );
        let status = wait_exit(old, old_log);
        assert!(
            status.success(),
            "{}",
            std::fs::read_to_string(&*old_log).unwrap()
        );
        // The session moved to the successor under the same node name: no 409, no /resume.
        let (status, body) = runtime.block_on(client.turn(base, key, "after")).unwrap();
        assert_eq!(status, 200, "{name}: {body}");
        kill(pid(new.id()), Signal::SIGTERM).unwrap();
        assert!(wait_exit(&mut new, &new_log).success());
    }
}

#[test]
fn an_approval_asked_before_a_replacement_is_answered_on_the_successor_and_runs_once() {
    let deployment = Deployment::new();
    let mut old = deployment.start();
    let runtime = runtime();
    let client = Client::new();
    let base = old.url.clone();
    let key = runtime.block_on(client.open(&base));
    // The echo model calls write_file, which the default policy gives to the operator.
    let call = r#"call write_file {"path":"moved.txt","content":"once"}"#;
    let waiting = {
        let (client, base, key) = (client.clone(), base.clone(), key.clone());
        runtime.spawn(async move { client.turn(&base, &key, call).await })
    };
    let asked = runtime.block_on(async {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let (_, body) = client.get(&format!("{base}/v1/approvals")).await.unwrap();
            if let Some(approval) = body["approvals"].as_array().and_then(|a| a.first()) {
                return approval.clone();
            }
            assert!(Instant::now() < deadline, "never asked: {body}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    let mut new = deployment.successor("new", &[]);
    assert_eq!(listen_url(&mut new.child).as_deref(), Some(base.as_str()));
    let (status, _) = exited(&mut old, Instant::now());
    assert!(status.success(), "{}", old.log_text());
    // The old server's request ends saying the turn goes on in the successor.
    let (status, body) = runtime.block_on(waiting).unwrap().unwrap();
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (202, Some("turn-moved")),
        "{body}"
    );
    // Asked again there, with the same call id and deadline.
    let again = runtime.block_on(async {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let (_, body) = client.get(&format!("{base}/v1/approvals")).await.unwrap();
            if let Some(approval) = body["approvals"].as_array().and_then(|a| a.first()) {
                return approval.clone();
            }
            assert!(
                Instant::now() < deadline,
                "never asked again: {body}\n{}",
                new.log_text()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    assert_eq!(again["callId"], asked["callId"]);
    assert_eq!(again["deadlineMs"], asked["deadlineMs"]);
    let call_id = asked["callId"].as_str().unwrap();
    let (status, body) = runtime
        .block_on(client.post(
            &format!("{base}/v1/sessions/{key}/approvals/{call_id}"),
            serde_json::json!({"decision": "allow"}),
        ))
        .unwrap();
    assert_eq!(status, 200, "{body}");
    // The call ran once, as stored.
    let written = deployment.dir.path().join("root/moved.txt");
    let deadline = Instant::now() + DEADLINE;
    while !written.exists() {
        assert!(
            Instant::now() < deadline,
            "the call never ran: {}",
            new.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(std::fs::read_to_string(&written).unwrap(), "once");
    let (status, _) = runtime
        .block_on(client.post(
            &format!("{base}/v1/sessions/{key}/approvals/{call_id}"),
            serde_json::json!({"decision": "allow"}),
        ))
        .unwrap();
    assert_eq!(status, 404, "answered once");
    new.terminate();
}

#[test]
fn sighup_after_an_upgrade_in_place_starts_the_new_binary() {
    let deployment = Deployment::new();
    let bin = deployment.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let installed = bin.join("hookline");
    std::fs::copy(env!("CARGO_BIN_EXE_hookline"), &installed).unwrap();
    let store = deployment.store.display().to_string();
    let mut args = vec!["--store".to_owned(), store];
    args.extend(deployment.flags());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut old = Node::spawn(
        "old",
        deployment.dir.path(),
        Command::new(&installed),
        &args,
    );
    // The upgrade: a new file renamed over the installed one, as package managers do.
    let staged = bin.join("hookline.new");
    if std::fs::hard_link(env!("CARGO_BIN_EXE_hookline"), &staged).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_hookline"), &staged).unwrap();
    }
    std::fs::rename(&staged, &installed).unwrap();
    let running = std::fs::read_link(format!("/proc/{}/exe", old.pid())).unwrap();
    assert!(
        running.to_string_lossy().ends_with("(deleted)"),
        "{}",
        running.display()
    );
    kill(old.pid(), Signal::SIGHUP).unwrap();
    let (status, _) = exited(&mut old, Instant::now());
    assert!(status.success(), "{}", old.log_text());
    let log = old.log_text();
    let successor = successor_named(&log);
    let _guard = KillOnDrop(successor);
    let exe = std::fs::read_link(format!("/proc/{successor}/exe")).unwrap();
    assert!(
        !exe.to_string_lossy().contains("(deleted)"),
        "{}",
        exe.display()
    );
    kill(Pid::from_raw(successor), Signal::SIGTERM).unwrap();
    assert_gone(&[successor], "the successor");
}
