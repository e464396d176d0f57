//! Issue 26: a resumed session is what it was. Its approval mode as last set (by open or by
//! `/approvals`), its workspace, its model, its turn mode and its turn count come back from the
//! store, on the same gateway or a restarted one, on the file store and on PostgreSQL, in-process
//! and through `hookline serve`'s routes; a value that cannot be restored refuses the resume
//! instead of completing it with a looser default; sessions opened after a resume (`/new`,
//! `/fork`) keep the restored policy. SPEC P3.10, P3.12 (a resume is a session start).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/pg.rs"]
mod pg;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use hookline::host::gateway::{Activity, Gateway, GatewayLimits, OpenSession, RequestError};
use hookline::host::provider::{EchoProvider, Provider, ProviderError};
use hookline::host::state::Unrestorable;
use hookline::host::store::SessionStore;
use hookline::host::tools::ToolRegistry;
use hookline::host::turn::UserInput;
use hookline::host::{Host, HostError, HostEvent, SessionCommand};
use hookline::messages::model::{ModelRequest, ModelResponse};
use hookline::messages::prompt::PromptMode;
use hookline::messages::record::Decision;
use hookline::messages::session::{ApprovalMode, SessionId};
use hookline::postgres::{PgStore, PgStoreOptions};
use hookline::server::{start, ServeConfig, ServeHandle};
use proptest::prelude::*;
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(30);

/// Where sessions are stored: the file store under the workspace, or PostgreSQL.
#[derive(Clone, Copy, Debug)]
enum Backend {
    Files,
    Postgres,
}

/// The echo model, serving every model name but `retired` (unless it still serves it: `/model`
/// refuses a name that is not served, so the session that later cannot be restored is stored
/// while `retired` was still configured).
struct Models {
    serves_retired: bool,
}

#[async_trait]
impl Provider for Models {
    fn takes_images(&self) -> bool {
        false
    }
    fn serves_model(&self, name: &str) -> bool {
        self.serves_retired || name != "retired"
    }
    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        EchoProvider::new().complete(request).await
    }
}

async fn pg_store(node: &str) -> Arc<dyn SessionStore> {
    let options = PgStoreOptions {
        node: node.into(),
        migrate: true,
        ..PgStoreOptions::default()
    };
    Arc::new(
        PgStore::connect(&pg::database_url(), options)
            .await
            .unwrap(),
    )
}

/// A gateway over `workspace` whose own default is the loosest approval mode, so any value a
/// resume failed to restore would show as a relaxation.
async fn gateway(
    workspace: &std::path::Path,
    backend: Backend,
    fence: Option<&std::path::Path>,
) -> Gateway {
    gateway_on(workspace, backend, fence, GatewayLimits::default()).await
}

async fn gateway_on(
    workspace: &std::path::Path,
    backend: Backend,
    fence: Option<&std::path::Path>,
    limits: GatewayLimits,
) -> Gateway {
    gateway_with(workspace, backend, fence, limits, false).await
}

async fn gateway_with(
    workspace: &std::path::Path,
    backend: Backend,
    fence: Option<&std::path::Path>,
    limits: GatewayLimits,
    serves_retired: bool,
) -> Gateway {
    let mut builder = Host::builder()
        .plugins(hookline::host::demo::example_plugins())
        .tools(ToolRegistry::with_builtins())
        .provider(Arc::new(Models { serves_retired }))
        .approval_mode(ApprovalMode::AllowWorkspace)
        .workspace(workspace);
    if let Some(fence) = fence {
        builder = builder.workspace_fence(fence);
    }
    if let Backend::Postgres = backend {
        builder = builder.session_store(pg_store("resume-test").await);
    }
    builder.start_gateway(limits).unwrap()
}

/// Shuts `gateway` down and waits until its sessions' leases are given back (PostgreSQL's
/// would otherwise hold until they expire).
async fn stop(gateway: Gateway) {
    let summary = gateway.shutdown("restart", None).await.unwrap();
    assert!(
        summary.closed.wait(DEADLINE).await,
        "the shared state never closed"
    );
}

/// What a session's status says that a resume must give back.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Kept {
    approval_mode: String,
    model: Option<String>,
    turns: u64,
    workspace: String,
}

fn kept(status: &hookline::host::gateway::SessionStatus) -> Kept {
    Kept {
        approval_mode: status.approval_mode.as_str().to_owned(),
        model: status.model.clone(),
        turns: status.turns,
        workspace: status.workspace.clone(),
    }
}

async fn the_policy_survives_a_restart(backend: Backend) {
    let dir = tempfile::tempdir().unwrap();
    let first = gateway(dir.path(), backend, None).await;
    let handle = first
        .open(OpenSession {
            approval_mode: Some(ApprovalMode::AskAll),
            model: Some("gpt".into()),
            ..OpenSession::default()
        })
        .await
        .unwrap();
    let key = handle.key().clone();
    for text in ["one", "two"] {
        handle.turn(UserInput::work(text)).await.unwrap();
    }
    handle
        .command(SessionCommand::Mode(PromptMode::Plan), None)
        .await
        .unwrap();
    let before = kept(&handle.status());
    assert_eq!(before.approval_mode, "ask-all");
    assert_eq!(before.turns, 2);
    stop(first).await;

    let second = gateway(dir.path(), backend, None).await;
    let resumed = second.resume(&key).await.unwrap();
    assert_eq!(kept(&resumed.status()), before, "{backend:?}");

    // The policy is in force: a read tool asks the operator, which ask-above-read and
    // allow-workspace would not.
    let mut live = resumed.subscribe();
    let turn = {
        let resumed = resumed.clone();
        actix_rt::spawn(async move {
            resumed
                .turn(UserInput::work(r#"call read_file {"path":"missing.txt"}"#))
                .await
        })
    };
    let call_id = tokio::time::timeout(DEADLINE, async {
        loop {
            if let HostEvent::ApprovalRequested { call_id, .. } = &*live.recv().await.unwrap() {
                return call_id.clone();
            }
        }
    })
    .await
    .expect("a read tool ran without asking under ask-all");
    assert_eq!(resumed.status().activity, Activity::Approval);
    resumed.answer_approval(&call_id, Decision::Deny).unwrap();
    turn.await.unwrap().unwrap();
    assert_eq!(resumed.status().turns, 3);

    // Sessions the conversation opens after the resume keep the restored policy and model.
    resumed.command(SessionCommand::New, None).await.unwrap();
    let fresh = resumed.status();
    assert_ne!(fresh.session_id.as_ref(), Some(&key));
    assert_eq!(fresh.approval_mode, ApprovalMode::AskAll);
    assert_eq!(fresh.model.as_deref(), Some("gpt"));
    assert_eq!(fresh.turns, 0, "a fresh session has run no turn");
    stop(second).await;
}

#[actix_rt::test]
async fn a_resumed_session_keeps_its_policy_model_and_turns_on_the_file_store() {
    the_policy_survives_a_restart(Backend::Files).await;
}

#[actix_rt::test]
async fn a_resumed_session_keeps_its_policy_model_and_turns_on_postgres() {
    the_policy_survives_a_restart(Backend::Postgres).await;
}

fn refusal(result: Result<impl Sized, RequestError>) -> Unrestorable {
    match result {
        Err(RequestError::Host(HostError::Unrestorable { reason, .. })) => reason,
        Err(other) => panic!("expected an unrestorable session, got {other}"),
        Ok(_) => panic!("the resume was not refused"),
    }
}

#[actix_rt::test]
async fn a_stored_value_that_cannot_be_restored_refuses_the_resume() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(work.join("sub")).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    // `retired` is configured when the session is stored, and no longer when it is resumed.
    let first = gateway_with(&work, Backend::Files, None, GatewayLimits::default(), true).await;
    let retired = first
        .open(OpenSession {
            model: Some("retired-soon".into()),
            ..OpenSession::default()
        })
        .await
        .unwrap();
    retired
        .command(SessionCommand::Model("retired".into()), None)
        .await
        .unwrap();
    let moved = first
        .open(OpenSession {
            workspace: Some(work.join("sub")),
            ..OpenSession::default()
        })
        .await
        .unwrap();
    let (retired, moved) = (retired.key().clone(), moved.key().clone());
    stop(first).await;
    std::fs::remove_dir(work.join("sub")).unwrap();

    let second = gateway(&work, Backend::Files, None).await;
    let reason = refusal(second.resume(&retired).await);
    assert_eq!(reason, Unrestorable::UnknownModel("retired".into()));
    let reason = refusal(second.resume(&moved).await);
    assert!(
        matches!(reason, Unrestorable::WorkspaceMissing(_)),
        "{reason}"
    );
    // Nothing ran and the lease went back: a gateway that can restore the session resumes it.
    assert_eq!(second.open_sessions(), 0);
    stop(second).await;

    std::fs::create_dir_all(work.join("sub")).unwrap();
    let fenced = gateway(&work, Backend::Files, Some(&elsewhere)).await;
    let Err(error) = fenced.resume(&moved).await else {
        panic!("resumed outside the fence");
    };
    assert_eq!(
        error.to_string(),
        format!(
            "session '{moved}' cannot be resumed: its workspace '{}' is outside this server's workspace root",
            work.join("sub").canonicalize().unwrap().display()
        )
    );
    stop(fenced).await;

    let open = gateway(&work, Backend::Files, Some(&work)).await;
    let handle = open.resume(&moved).await.unwrap();
    assert_eq!(handle.status().approval_mode, ApprovalMode::AllowWorkspace);
    stop(open).await;
}

#[test]
fn facts_with_an_unknown_or_missing_approval_mode_read_as_the_strictest() {
    use hookline::host::store::SessionFacts;
    let unknown: SessionFacts = serde_json::from_value(json!({
        "workspaceRoot": "/w", "sessionId": "s1", "approvalMode": "ask-nobody"
    }))
    .unwrap();
    assert_eq!(unknown.approval_mode, ApprovalMode::AskAll);
    let missing: SessionFacts =
        serde_json::from_value(json!({"workspaceRoot": "/w", "sessionId": "s1"})).unwrap();
    assert_eq!(missing.approval_mode, ApprovalMode::AskAll);
    // Facts written before model and mode existed still read, with neither chosen.
    let old: SessionFacts = serde_json::from_value(json!({
        "workspaceRoot": "/w", "sessionId": "s1", "approvalMode": "allow-workspace"
    }))
    .unwrap();
    assert_eq!(old.approval_mode, ApprovalMode::AllowWorkspace);
    assert_eq!((old.model, old.mode), (None, None));
}

// --- The property: any sequence of operations gives back, at each resume, what was stored. ---

/// One thing a client does.
#[derive(Clone, Debug)]
enum Op {
    Open(ApprovalMode, Option<&'static str>),
    Turn,
    Approvals(ApprovalMode),
    Model(&'static str),
    Close,
    Restart,
    /// Resumes the n-th session opened so far (modulo their number).
    Resume(usize),
}

fn mode() -> impl Strategy<Value = ApprovalMode> {
    prop_oneof![
        Just(ApprovalMode::AskAboveRead),
        Just(ApprovalMode::AskAll),
        Just(ApprovalMode::AllowWorkspace),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let model = prop_oneof![Just("gpt"), Just("claude")];
    prop_oneof![
        2 => (mode(), proptest::option::of(model.clone())).prop_map(|(m, n)| Op::Open(m, n)),
        3 => Just(Op::Turn),
        2 => mode().prop_map(Op::Approvals),
        1 => model.prop_map(Op::Model),
        1 => Just(Op::Close),
        1 => Just(Op::Restart),
        3 => (0usize..8).prop_map(Op::Resume),
    ]
}

/// A client of sessions: the gateway's API, or `hookline serve`'s routes.
#[async_trait(?Send)]
trait Client {
    async fn open(&mut self, mode: ApprovalMode, model: Option<&str>) -> (String, Kept);
    async fn turn(&mut self, key: &str) -> Kept;
    async fn command(&mut self, key: &str, command: &str) -> Kept;
    async fn close(&mut self, key: &str);
    async fn restart(&mut self);
    async fn resume(&mut self, key: &str) -> Kept;
    async fn stop(self: Box<Self>);
}

/// Runs `ops` and checks each status against the model of what was stored.
async fn check(mut client: Box<dyn Client>, ops: Vec<Op>) {
    let mut stored: BTreeMap<String, Kept> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut open: Option<String> = None;
    for op in ops {
        match op {
            Op::Open(mode, model) => {
                let (key, status) = client.open(mode, model).await;
                assert_eq!(status.approval_mode, mode.as_str());
                assert_eq!(status.model.as_deref(), model);
                assert_eq!(status.turns, 0);
                stored.insert(key.clone(), status);
                order.push(key.clone());
                open = Some(key);
            }
            Op::Turn | Op::Approvals(_) | Op::Model(_) => {
                let Some(key) = open.clone() else { continue };
                let status = match op {
                    Op::Turn => client.turn(&key).await,
                    Op::Approvals(mode) => {
                        client
                            .command(&key, &format!("/approvals {}", mode.as_str()))
                            .await
                    }
                    Op::Model(name) => client.command(&key, &format!("/model {name}")).await,
                    _ => unreachable!(),
                };
                let expected = stored.get_mut(&key).unwrap();
                match op {
                    Op::Turn => expected.turns += 1,
                    Op::Approvals(mode) => expected.approval_mode = mode.as_str().to_owned(),
                    Op::Model(name) => expected.model = Some(name.to_owned()),
                    _ => {}
                }
                assert_eq!(&status, expected, "after {op:?}");
            }
            Op::Close => {
                if let Some(key) = open.take() {
                    client.close(&key).await;
                }
            }
            Op::Restart => {
                client.restart().await;
                open = None;
            }
            Op::Resume(n) => {
                if order.is_empty() {
                    continue;
                }
                let key = order[n % order.len()].clone();
                if open.as_ref().is_some_and(|o| o != &key) {
                    // One session open at a time keeps the model simple; close it first.
                    client.close(open.as_ref().unwrap()).await;
                }
                let status = client.resume(&key).await;
                assert_eq!(&status, &stored[&key], "resume of {key}");
                open = Some(key);
            }
        }
    }
    client.stop().await;
}

/// The gateway's own API.
struct InProcess {
    dir: tempfile::TempDir,
    backend: Backend,
    gateway: Gateway,
}

impl InProcess {
    async fn new(backend: Backend) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let gateway = gateway(dir.path(), backend, Some(dir.path())).await;
        Self {
            dir,
            backend,
            gateway,
        }
    }

    fn handle(&self, key: &str) -> hookline::host::gateway::SessionHandle {
        self.gateway.session(&SessionId::new(key)).unwrap()
    }
}

fn command(text: &str) -> SessionCommand {
    hookline::messages::scenario::SlashCommand::parse(text)
        .unwrap()
        .into()
}

#[async_trait(?Send)]
impl Client for InProcess {
    async fn open(&mut self, mode: ApprovalMode, model: Option<&str>) -> (String, Kept) {
        let handle = self
            .gateway
            .open(OpenSession {
                approval_mode: Some(mode),
                model: model.map(str::to_owned),
                ..OpenSession::default()
            })
            .await
            .unwrap();
        (handle.key().to_string(), kept(&handle.status()))
    }
    async fn turn(&mut self, key: &str) -> Kept {
        let handle = self.handle(key);
        handle.turn(UserInput::work("hello")).await.unwrap();
        kept(&handle.status())
    }
    async fn command(&mut self, key: &str, text: &str) -> Kept {
        let handle = self.handle(key);
        handle.command(command(text), None).await.unwrap();
        kept(&handle.status())
    }
    async fn close(&mut self, key: &str) {
        self.gateway.close(&SessionId::new(key)).await.unwrap();
    }
    async fn restart(&mut self) {
        stop(self.gateway.clone()).await;
        self.gateway = gateway(self.dir.path(), self.backend, Some(self.dir.path())).await;
    }
    async fn resume(&mut self, key: &str) -> Kept {
        let handle = self.gateway.resume(&SessionId::new(key)).await.unwrap();
        kept(&handle.status())
    }
    async fn stop(self: Box<Self>) {
        stop(self.gateway.clone()).await;
    }
}

/// `hookline serve`'s routes, over HTTP, restarted on the same store.
struct ThroughServe {
    dir: tempfile::TempDir,
    backend: Backend,
    addr: SocketAddr,
    handle: Option<ServeHandle>,
    http: reqwest::Client,
    arbiter: actix::Arbiter,
}

impl ThroughServe {
    async fn new(backend: Backend) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let arbiter = actix::Arbiter::new();
        let (addr, handle) = Self::serve(dir.path(), backend, &arbiter).await;
        let http = reqwest::Client::builder()
            .timeout(DEADLINE)
            .build()
            .unwrap();
        Self {
            dir,
            backend,
            addr,
            handle: Some(handle),
            http,
            arbiter,
        }
    }

    /// A gateway on the store in `dir`, served as `hookline serve` serves it.
    async fn serve(
        dir: &std::path::Path,
        backend: Backend,
        arbiter: &actix::Arbiter,
    ) -> (SocketAddr, ServeHandle) {
        let limits = GatewayLimits {
            arbiters: vec![arbiter.handle()],
            ..GatewayLimits::default()
        };
        let gateway = gateway_on(dir, backend, Some(dir), limits).await;
        start(gateway, ServeConfig::new(dir)).await.unwrap()
    }

    async fn post(&self, path: &str, body: serde_json::Value) -> serde_json::Value {
        let response = self
            .http
            .post(format!("http://{}{path}", self.addr))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        let body: serde_json::Value = response.json().await.unwrap_or_default();
        assert!(status.is_success(), "{path}: {status} {body}");
        body
    }

    async fn status(&self, key: &str) -> Kept {
        let response = self
            .http
            .get(format!("http://{}/v1/sessions/{key}", self.addr))
            .send()
            .await
            .unwrap();
        let body: serde_json::Value = response.json().await.unwrap();
        from_json(&body["session"])
    }
}

fn from_json(status: &serde_json::Value) -> Kept {
    Kept {
        approval_mode: status["approvalMode"].as_str().unwrap().to_owned(),
        model: status["model"].as_str().map(str::to_owned),
        turns: status["turns"].as_u64().unwrap(),
        workspace: status["workspace"].as_str().unwrap().to_owned(),
    }
}

#[async_trait(?Send)]
impl Client for ThroughServe {
    async fn open(&mut self, mode: ApprovalMode, model: Option<&str>) -> (String, Kept) {
        let body = self
            .post(
                "/v1/sessions",
                json!({"approvalMode": mode.as_str(), "model": model}),
            )
            .await;
        (body["key"].as_str().unwrap().to_owned(), from_json(&body))
    }
    async fn turn(&mut self, key: &str) -> Kept {
        self.post(
            &format!("/v1/sessions/{key}/turns"),
            json!({"text": "hello"}),
        )
        .await;
        self.status(key).await
    }
    async fn command(&mut self, key: &str, text: &str) -> Kept {
        self.post(
            &format!("/v1/sessions/{key}/commands"),
            json!({"command": text}),
        )
        .await;
        self.status(key).await
    }
    async fn close(&mut self, key: &str) {
        let response = self
            .http
            .delete(format!("http://{}/v1/sessions/{key}", self.addr))
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success());
    }
    async fn restart(&mut self) {
        if let Some(handle) = self.handle.take() {
            let summary = handle.drain("restart", None).await.unwrap();
            assert!(summary.closed.wait(DEADLINE).await);
        }
        let (addr, handle) = Self::serve(self.dir.path(), self.backend, &self.arbiter).await;
        self.addr = addr;
        self.handle = Some(handle);
    }
    async fn resume(&mut self, key: &str) -> Kept {
        from_json(
            &self
                .post(&format!("/v1/sessions/{key}/resume"), json!({}))
                .await,
        )
    }
    async fn stop(mut self: Box<Self>) {
        if let Some(handle) = self.handle.take() {
            let summary = handle.drain("done", None).await.unwrap();
            assert!(summary.closed.wait(DEADLINE).await);
        }
        self.arbiter.stop();
    }
}

fn run(client: impl std::future::Future<Output = Box<dyn Client>> + 'static, ops: Vec<Op>) {
    actix::System::new().block_on(async move {
        let client = client.await;
        tokio::time::timeout(Duration::from_secs(120), check(client, ops))
            .await
            .expect("the sequence did not finish");
    });
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn every_resume_gives_back_what_was_stored_in_process_on_files(ops in prop::collection::vec(op(), 1..24)) {
        run(async { Box::new(InProcess::new(Backend::Files).await) as Box<dyn Client> }, ops);
    }

    #[test]
    fn every_resume_gives_back_what_was_stored_in_process_on_postgres(ops in prop::collection::vec(op(), 1..24)) {
        run(async { Box::new(InProcess::new(Backend::Postgres).await) as Box<dyn Client> }, ops);
    }

    #[test]
    fn every_resume_gives_back_what_was_stored_through_serve_on_files(ops in prop::collection::vec(op(), 1..24)) {
        run(async { Box::new(ThroughServe::new(Backend::Files).await) as Box<dyn Client> }, ops);
    }

    #[test]
    fn every_resume_gives_back_what_was_stored_through_serve_on_postgres(ops in prop::collection::vec(op(), 1..24)) {
        run(async { Box::new(ThroughServe::new(Backend::Postgres).await) as Box<dyn Client> }, ops);
    }
}
