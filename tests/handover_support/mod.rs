//! Shared by the hand-over tests (issue 49): two or more servers in one process on one store
//! and one listening socket, a plugin set that marks what it touched, and a model that holds a
//! turn until the test lets it go.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use hookline::actors::events::{EventHandler, EventReply};
use hookline::actors::plugin::{HookResult, Plugin, PluginRegistration, Reply};
use hookline::host::gateway::{Activity, Gateway, GatewayLimits};
use hookline::host::provider::{EchoProvider, Provider, ProviderError};
use hookline::host::store::SessionStore;
use hookline::host::tools::ToolRegistry;
use hookline::host::Host;
use hookline::messages::event::Event;
use hookline::messages::hook::{HookContext, HookKind, HookSet};
use hookline::messages::model::{ItemBody, ModelRequest, ModelResponse};
use hookline::messages::prompt::Prompt;
use hookline::messages::record::Record;
use hookline::messages::session::{ApprovalMode, SessionId, SessionInfo};
use hookline::messages::tool::ToolCall;
use hookline::server::{start, ServeConfig, ServeHandle};
use serde_json::{json, Value};

/// A bound on anything a test waits for.
pub const DEADLINE: Duration = Duration::from_secs(30);
/// How long the new server waits for what the old one still holds.
pub const PREDECESSOR_WAIT: Duration = Duration::from_secs(20);

/// What the plugins of both sets saw, in order: `start A s1`, `end A s1`, ...
pub type Seen = Arc<Mutex<Vec<String>>>;

/// A plugin set: marks the system text with `[set]`, rewrites a `write_file` call's content
/// to the set's name, and notes session starts and ends.
pub struct Marker {
    set: &'static str,
    seen: Seen,
}

#[async_trait]
impl Plugin for Marker {
    fn hooks(&self) -> HookSet {
        HookSet::of(&[
            HookKind::OnSessionStarted,
            HookKind::OnSessionEnded,
            HookKind::OnPrompt,
            HookKind::OnToolCall,
        ])
    }
    async fn on_session_started(&self, _: &HookContext, s: SessionInfo) -> HookResult<()> {
        let line = format!("start {} {}", self.set, s.session_id);
        self.seen.lock().unwrap().push(line);
        Ok(())
    }
    async fn on_session_ended(&self, _: &HookContext, s: SessionInfo) -> HookResult<()> {
        let line = format!("end {} {}", self.set, s.session_id);
        self.seen.lock().unwrap().push(line);
        Ok(())
    }
    async fn on_prompt(&self, _: &HookContext, prompt: Prompt) -> HookResult<Reply<Prompt>> {
        Ok(Reply::Replace(prompt.append(format!("[{}]", self.set))))
    }
    async fn on_tool_call(
        &self,
        _: &HookContext,
        mut call: ToolCall,
    ) -> HookResult<Reply<ToolCall>> {
        if call.name != "write_file" {
            return Ok(Reply::Keep);
        }
        call.arguments["content"] = json!(self.set);
        Ok(Reply::Replace(call))
    }
}

#[async_trait]
impl EventHandler for Marker {
    fn subscriptions(&self) -> Vec<String> {
        vec!["gateway:pre-restart".to_owned()]
    }
    async fn on_event(&self, event: &Event) -> HookResult<EventReply> {
        if let Event::GatewayPreRestart(context) = event {
            let line = format!("pre-restart {} {:?}", self.set, context.restart_expected_ms);
            self.seen.lock().unwrap().push(line);
        }
        Ok(EventReply::Done)
    }
}

/// The echo model, recording the plugin mark of every call's system text, and holding a turn
/// whose message says `slow` until the gate opens.
pub struct Model {
    gate: tokio::sync::watch::Receiver<bool>,
    marks: Arc<Mutex<Vec<(String, String)>>>,
}

impl Model {
    pub fn user_text(request: &ModelRequest) -> String {
        request
            .items
            .iter()
            .rev()
            .find_map(|item| match &item.body {
                ItemBody::User { text, .. } => Some(text.clone()),
                _ => None,
            })
            .unwrap_or_default()
    }
}

#[async_trait]
impl Provider for Model {
    fn takes_images(&self) -> bool {
        false
    }
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        let system = request.items.iter().find_map(|item| match &item.body {
            ItemBody::System { text, .. } => Some(text.clone()),
            _ => None,
        });
        let mark = match system.unwrap_or_default() {
            s if s.contains("[A]") => "A",
            s if s.contains("[B]") => "B",
            _ => "none",
        };
        let user = Self::user_text(request);
        self.marks
            .lock()
            .unwrap()
            .push((user.clone(), mark.to_owned()));
        if user.contains("slow") {
            let mut gate = self.gate.clone();
            let _ = gate.wait_for(|open| *open).await;
        }
        EchoProvider::new().complete(request).await
    }
}

/// Where the sessions live: the file store in the workspace, or PostgreSQL.
#[derive(Clone, Copy, Debug)]
pub enum Backend {
    Files,
    Postgres,
}

/// Everything both servers share.
pub struct Rig {
    pub dir: tempfile::TempDir,
    pub listener: Arc<TcpListener>,
    pub addr: SocketAddr,
    pub seen: Seen,
    pub marks: Arc<Mutex<Vec<(String, String)>>>,
    pub gate: tokio::sync::watch::Sender<bool>,
    pub backend: Backend,
    pub arbiters: Vec<actix::Arbiter>,
    /// The drain budget of the servers started from now on.
    pub drain_budget: Duration,
}

impl Rig {
    pub fn new(backend: Backend) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        Self {
            dir: tempfile::tempdir().unwrap(),
            listener: Arc::new(listener),
            addr,
            seen: Arc::default(),
            marks: Arc::default(),
            gate: tokio::sync::watch::channel(false).0,
            backend,
            arbiters: Vec::new(),
            drain_budget: Duration::from_secs(15),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// A server with plugin set `set` accepting on the shared socket.
    pub async fn server(&mut self, set: &'static str, predecessor: bool) -> ServeHandle {
        let arbiters = vec![actix::Arbiter::new(), actix::Arbiter::new()];
        let limits = GatewayLimits {
            arbiters: arbiters.iter().map(actix::Arbiter::handle).collect(),
            approval_timeout: Duration::from_secs(120),
            drain_budget: self.drain_budget,
            ..GatewayLimits::default()
        };
        self.arbiters.extend(arbiters);
        let marker = Arc::new(Marker {
            set,
            seen: self.seen.clone(),
        });
        let model = Model {
            gate: self.gate.subscribe(),
            marks: self.marks.clone(),
        };
        let mut builder = Host::builder()
            .plugins(vec![PluginRegistration::new(set)
                .with_hooks(marker.clone())
                .with_events(marker)])
            .tools(ToolRegistry::with_builtins())
            .provider(Arc::new(model))
            .approval_mode(ApprovalMode::AskAboveRead)
            .workspace(self.dir.path())
            .spaces_root(self.dir.path());
        if let Backend::Postgres = self.backend {
            builder = builder.session_store(pg_store().await);
        }
        let gateway = builder.start_gateway(limits).unwrap();
        let mut config = ServeConfig::new(self.dir.path());
        config.listener = Some(self.listener.clone());
        config.predecessor_wait = predecessor.then_some(PREDECESSOR_WAIT);
        start(gateway, config).await.unwrap().1
    }

    /// Opens a session on whichever server accepts on the shared socket; its key.
    pub async fn open(&self, client: &reqwest::Client) -> String {
        let (status, body) = post(client, self.url("/v1/sessions"), json!({})).await;
        assert_eq!(status, 201, "{body}");
        body["key"].as_str().unwrap().to_owned()
    }

    /// Drains `last`, the server still running, and stops every arbiter the rig started.
    pub async fn finish(&mut self, last: ServeHandle) {
        let summary = last.drain("test", None).await.unwrap();
        assert!(summary.closed.wait(DEADLINE).await);
        for arbiter in self.arbiters.drain(..) {
            arbiter.stop();
        }
    }

    /// What the plugins of `set` saw of `what` (`start`, `end`) for session `key`.
    pub fn seen(&self, what: &str, set: &str, key: &str) -> usize {
        let line = format!("{what} {set} {key}");
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|l| **l == line)
            .count()
    }
}

/// Both processes of one node: the same node name, each its own connection (incarnation).
pub async fn pg_store() -> Arc<dyn SessionStore> {
    let options = hookline::postgres::PgStoreOptions {
        node: "node-1".into(),
        migrate: true,
        ..hookline::postgres::PgStoreOptions::default()
    };
    Arc::new(
        hookline::postgres::PgStore::connect(&crate::pg::database_url(), options)
            .await
            .unwrap(),
    )
}

/// A client that opens a new connection for every request: after the swap, a request must
/// reach whichever server accepts, never a kept-alive connection to the old one.
pub fn fresh_client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(DEADLINE)
        .pool_max_idle_per_host(0)
        .build()
        .unwrap()
}

pub async fn post(client: &reqwest::Client, url: String, body: Value) -> (u16, Value) {
    let response = client.post(url).json(&body).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or_default())
}

pub async fn get(client: &reqwest::Client, url: String) -> (u16, Value) {
    let response = client.get(url).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or_default())
}

/// Waits (bounded) until `gateway`'s session `key` is `activity`.
pub async fn until_activity(gateway: &Gateway, key: &str, activity: Activity) {
    let handle = gateway
        .session(&SessionId::new(key))
        .expect("not open here");
    let mut status = handle.watch_status();
    tokio::time::timeout(DEADLINE, status.wait_for(|s| s.activity == activity))
        .await
        .expect("the session never got there")
        .unwrap();
}

/// Reads a turn's event stream to its end: the kinds of its events, and the last one's data.
pub async fn read_stream(response: reqwest::Response) -> (Vec<String>, Value) {
    let text = tokio::time::timeout(DEADLINE, response.text())
        .await
        .expect("the stream never ended")
        .unwrap();
    let mut kinds = Vec::new();
    let mut last = Value::Null;
    for block in text.split("\n\n") {
        let kind = block.lines().find_map(|l| l.strip_prefix("event: "));
        let data = block.lines().find_map(|l| l.strip_prefix("data: "));
        if let (Some(kind), Some(data)) = (kind, data) {
            kinds.push(kind.to_owned());
            last = serde_json::from_str(data).unwrap();
        }
    }
    (kinds, last)
}

/// The session's stored records, read from the store.
pub async fn records(gateway: &Gateway, key: &str) -> Vec<Record> {
    let id = SessionId::new(key);
    gateway
        .session_store()
        .read(&id)
        .await
        .unwrap()
        .unwrap()
        .records
}

/// Waits (bounded) for the one approval `base` lists.
pub async fn one_approval(client: &reqwest::Client, rig: &Rig) -> Value {
    tokio::time::timeout(DEADLINE, async {
        loop {
            let (_, listed) = get(client, rig.url("/v1/approvals")).await;
            if let Some(found) = listed["approvals"].as_array().unwrap().first() {
                return found.clone();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("no approval was asked")
}
