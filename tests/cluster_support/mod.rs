//! `hookline serve` as child processes, shared by the tests that run the real binary (the
//! several-node tests of issue 14, the drain and the descriptor tests): nodes on ephemeral
//! loopback ports, killed on every path by a drop guard; a small JSON client; and the checks on
//! what a session stores.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use hookline::host::store::SessionStore;
use hookline::messages::record::Record;
use hookline::messages::session::SessionId;
use hookline::postgres::{PgStore, PgStoreOptions};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// How long a node may take to say where it listens.
pub const START_DEADLINE: Duration = Duration::from_secs(30);
/// A bound on every request the tests send.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(20);

/// One `hookline serve` child; killed (and reaped) when dropped.
pub struct Node {
    pub name: String,
    pub url: String,
    /// Its workspace root, `DIR/root`, shared by every node started in the same `DIR` as a
    /// deployment shares it (a node refuses to resume a session whose workspace lies outside its
    /// root); the file store, when it has no `--store`, is `.hookline` in it.
    pub root: PathBuf,
    child: Child,
    log: PathBuf,
}

impl Drop for Node {
    fn drop(&mut self) {
        // A stopped process must be continued to die of anything but SIGKILL; SIGKILL works
        // either way.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Node {
    /// Starts `hookline serve` on `127.0.0.1:0` with its workspace root and plugins home in
    /// `dir`, the store `store` (a directory or a URL), and `extra` arguments.
    pub fn start(name: &str, dir: &Path, store: &str, extra: &[&str]) -> Node {
        let command = Command::new(env!("CARGO_BIN_EXE_hookline"));
        let mut args = vec!["--store", store];
        args.extend_from_slice(extra);
        Node::spawn(name, dir, command, &args)
    }

    /// Starts `command` (the binary, or a shell that ends in `exec` of it) with `serve --listen
    /// 127.0.0.1:0 --workspace-root DIR/root` and then `args`, its plugins home in `dir` and its
    /// stderr in `dir/NAME.log`.
    pub fn spawn(name: &str, dir: &Path, command: Command, args: &[&str]) -> Node {
        Node::spawn_on(name, dir, command, "127.0.0.1:0", args)
    }

    /// [`Node::start`] listening on `listen` (a node started again where a balancer expects it).
    pub fn start_on(name: &str, dir: &Path, store: &str, listen: &str, extra: &[&str]) -> Node {
        let command = Command::new(env!("CARGO_BIN_EXE_hookline"));
        let mut args = vec!["--store", store];
        args.extend_from_slice(extra);
        Node::spawn_on(name, dir, command, listen, &args)
    }

    fn spawn_on(name: &str, dir: &Path, mut command: Command, listen: &str, args: &[&str]) -> Node {
        let root = dir.join("root");
        let home = dir.join(format!("home-{name}"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let log = dir.join(format!("{name}.log"));
        let mut child = command
            .args(["serve", "--listen", listen, "--workspace-root"])
            .arg(&root)
            .args(args)
            .env("HOOKLINE_HOME", &home)
            // A PostgreSQL node's rendezvous (issue 49) goes there: in `dir`, gone with it, even
            // for a node the test kills.
            .env("XDG_RUNTIME_DIR", dir)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let url = listen_url(&mut child);
        let node = Node {
            name: name.to_owned(),
            url: url.clone().unwrap_or_default(),
            root,
            child,
            log,
        };
        assert!(
            url.is_some(),
            "node {name} never said where it listens; its log:\n{}",
            node.log_text()
        );
        node
    }

    /// The node's process id.
    pub fn pid(&self) -> Pid {
        Pid::from_raw(i32::try_from(self.child.id()).unwrap())
    }

    /// How the process ended, or `None` while it runs.
    pub fn exit_status(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().unwrap()
    }

    /// What the node wrote on stderr so far.
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The node's port.
    pub fn port(&self) -> u16 {
        self.url.rsplit(':').next().unwrap().parse().unwrap()
    }

    fn signal(&self, signal: Signal) {
        kill(self.pid(), signal).unwrap();
    }

    /// SIGTERM, then waits (bounded) for the drain to end the process with status 0.
    pub fn terminate(&mut self) {
        self.signal(Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.exit_status() {
                assert!(status.success(), "{status}; log:\n{}", self.log_text());
                return;
            }
            assert!(Instant::now() < deadline, "serve did not drain");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL, and waits until the process is gone.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGSTOP: the process stays, frozen (its leases stop being renewed).
    pub fn pause(&self) {
        self.signal(Signal::SIGSTOP);
    }

    /// SIGCONT.
    pub fn resume_process(&self) {
        self.signal(Signal::SIGCONT);
    }
}

/// The address a `hookline serve` child prints first on stdout (`hookline serve: listening on
/// http://ADDR`), or `None` when it said nothing within [`START_DEADLINE`]. Its stdout is read on
/// to the end on a thread of its own, so the child never blocks on a full pipe.
pub fn listen_url(child: &mut Child) -> Option<String> {
    let stdout = child.stdout.take()?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = std::io::BufReader::new(stdout).lines();
        if let Some(Ok(line)) = lines.next() {
            let _ = tx.send(line);
        }
        for _ in lines {}
    });
    let line = rx.recv_timeout(START_DEADLINE).ok()?;
    Some(line.rsplit(' ').next()?.trim().to_owned())
}

/// A JSON client with a bound on every request.
#[derive(Clone)]
pub struct Client(pub reqwest::Client);

impl Client {
    pub fn new() -> Self {
        Self(
            reqwest::Client::builder()
                .timeout(REQUEST_DEADLINE)
                .build()
                .unwrap(),
        )
    }

    /// POSTs `body` to `url`; the status and the JSON answer, or the transport error's text.
    pub async fn post(
        &self,
        url: &str,
        body: serde_json::Value,
    ) -> Result<(u16, serde_json::Value), String> {
        let response = self
            .0
            .post(url)
            .json(&body)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        Ok((status, response.json().await.unwrap_or_default()))
    }

    /// GETs `url`; the status and the JSON answer.
    pub async fn get(&self, url: &str) -> Result<(u16, serde_json::Value), String> {
        let response = self.0.get(url).send().await.map_err(|e| e.to_string())?;
        let status = response.status().as_u16();
        Ok((status, response.json().await.unwrap_or_default()))
    }

    /// Opens a fresh session on `base` and returns its key.
    pub async fn open(&self, base: &str) -> String {
        let (status, body) = self
            .post(&format!("{base}/v1/sessions"), serde_json::json!({}))
            .await
            .unwrap();
        assert_eq!(status, 201, "{body}");
        body["key"].as_str().unwrap().to_owned()
    }

    /// Runs one turn; the status and answer.
    pub async fn turn(
        &self,
        base: &str,
        key: &str,
        text: &str,
    ) -> Result<(u16, serde_json::Value), String> {
        self.post(
            &format!("{base}/v1/sessions/{key}/turns"),
            serde_json::json!({ "text": text }),
        )
        .await
    }

    /// Resumes `key` on `base`, retrying while another node's lease has not expired
    /// (409 `session-leased`), until `deadline`.
    pub async fn resume(&self, base: &str, key: &str, deadline: Instant) -> serde_json::Value {
        loop {
            let (status, body) = self
                .post(
                    &format!("{base}/v1/sessions/{key}/resume"),
                    serde_json::json!({}),
                )
                .await
                .unwrap();
            if status == 200 {
                return body;
            }
            assert_eq!(status, 409, "resume of {key} answered {status}: {body}");
            assert_eq!(body["error"]["code"], "session-leased", "{body}");
            assert!(
                Instant::now() < deadline,
                "session {key} was still leased at the deadline: {body}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A reader of the shared database: it never takes a lease.
pub async fn reader(url: &str) -> PgStore {
    PgStore::connect(
        url,
        PgStoreOptions {
            node: "test-reader".into(),
            renew_every: None,
            migrate: true,
            pool_size: 2,
            ..PgStoreOptions::default()
        },
    )
    .await
    .unwrap()
}

/// The stored records of `key`, as the database holds them.
pub async fn stored(store: &PgStore, key: &str) -> Vec<Record> {
    store
        .read(&SessionId::new(key))
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("session {key} is not stored"))
        .records
}

/// The user texts of `records`, in order.
pub fn user_texts(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::User { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

/// Checks that every turn in `records` is closed: each user record is answered by an assistant
/// record, or closed by a cut-off marker (issue 22: a turn a crash cut off keeps its durable
/// steps and is closed when its session is opened again), before the next user record; and each
/// tool call is followed by its result.
pub fn assert_turns_whole(key: &str, records: &[Record]) {
    let mut open_user: Option<&str> = None;
    let mut open_calls: Vec<&str> = Vec::new();
    for record in records {
        match record {
            Record::User { text, .. } => {
                assert!(
                    open_user.is_none(),
                    "session {key}: turn '{}' has no answer before the next turn",
                    open_user.unwrap_or_default()
                );
                open_user = Some(text);
            }
            Record::Assistant { .. } | Record::CutOff { .. } => open_user = None,
            Record::ToolCall { call_id, .. } => open_calls.push(call_id),
            Record::ToolResult { call_id, .. } => {
                assert!(
                    open_calls.contains(&call_id.as_str()),
                    "session {key}: a result for '{call_id}', which is not open"
                );
                open_calls.retain(|c| c != call_id);
            }
            _ => {}
        }
        if matches!(record, Record::User { .. }) {
            assert!(
                open_calls.is_empty(),
                "session {key}: calls {open_calls:?} have no result"
            );
        }
    }
    assert!(
        open_user.is_none(),
        "session {key}: the last turn '{}' is half stored",
        open_user.unwrap_or_default()
    );
}
