//! Shared by the serve tests: a gateway with the bundled demo plugins served on an ephemeral
//! loopback port inside the test process, and a real HTTP client.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use hookline::actors::plugin::PluginRegistration;
use hookline::host::demo::example_plugins;
use hookline::host::gateway::{Activity, Gateway, GatewayLimits};
use hookline::host::provider::{Provider, ProviderError};
use hookline::host::tools::ToolRegistry;
use hookline::host::Host;
use hookline::messages::model::{ModelRequest, ModelResponse};
use hookline::messages::session::SessionId;
use hookline::server::{install_recorder, start, ServeConfig, ServeHandle};

/// A deadline for anything the tests wait for: far above what any step needs.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// A served gateway and what it needs kept alive.
pub struct Served {
    pub addr: SocketAddr,
    pub handle: Option<ServeHandle>,
    pub dir: tempfile::TempDir,
    pub client: reqwest::Client,
    arbiters: Vec<actix::Arbiter>,
}

impl Served {
    /// `http://addr{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// `ws://addr{path}`.
    pub fn ws(&self, path: &str) -> String {
        format!("ws://{}{path}", self.addr)
    }

    /// The gateway behind the server.
    pub fn gateway(&self) -> Gateway {
        self.handle.as_ref().unwrap().gateway().clone()
    }

    /// POSTs JSON and returns the status and the JSON answer.
    pub async fn post(&self, path: &str, body: serde_json::Value) -> (u16, serde_json::Value) {
        let response = self
            .client
            .post(self.url(path))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or_default())
    }

    /// GETs and returns the status and the JSON answer.
    pub async fn get(&self, path: &str) -> (u16, serde_json::Value) {
        let response = self.client.get(self.url(path)).send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or_default())
    }

    /// DELETEs and returns the status and the JSON answer.
    pub async fn delete(&self, path: &str) -> (u16, serde_json::Value) {
        let response = self.client.delete(self.url(path)).send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or_default())
    }

    /// Opens a session and returns its key.
    pub async fn open(&self) -> String {
        let (status, body) = self.post("/v1/sessions", serde_json::json!({})).await;
        assert_eq!(status, 201, "{body}");
        body["key"].as_str().unwrap().to_owned()
    }

    /// Opens a session as `credential`'s principal (a bearer API key or JWT) and returns its key.
    pub async fn open_as(&self, credential: &str) -> String {
        let response = self
            .client
            .post(self.url("/v1/sessions"))
            .bearer_auth(credential)
            .json(&serde_json::json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 201);
        let body: serde_json::Value = response.json().await.unwrap();
        body["key"].as_str().unwrap().to_owned()
    }

    /// Drains the gateway and closes the listener.
    pub async fn shutdown(mut self) {
        if let Some(handle) = self.handle.take() {
            tokio::time::timeout(DEADLINE, handle.drain("test", None))
                .await
                .expect("the drain did not end")
                .unwrap();
        }
        for arbiter in self.arbiters.drain(..) {
            arbiter.stop();
        }
    }
}

/// Serves a gateway over `provider` with the demo plugins; `limits` and `config` adjust it.
pub async fn serve(
    provider: Arc<dyn Provider>,
    limits: impl FnOnce(&mut GatewayLimits),
    config: impl FnOnce(&mut ServeConfig),
) -> Served {
    serve_plugins(example_plugins(), provider, limits, config).await
}

/// As [`serve`], with `plugins` in load order.
pub async fn serve_plugins(
    plugins: Vec<PluginRegistration>,
    provider: Arc<dyn Provider>,
    limits: impl FnOnce(&mut GatewayLimits),
    config: impl FnOnce(&mut ServeConfig),
) -> Served {
    // As `hookline serve` does: the recorder first, so the pipeline's metric handles count.
    install_recorder();
    let dir = tempfile::tempdir().unwrap();
    let arbiters = vec![actix::Arbiter::new(), actix::Arbiter::new()];
    let mut gateway_limits = GatewayLimits {
        arbiters: arbiters.iter().map(actix::Arbiter::handle).collect(),
        ..GatewayLimits::default()
    };
    limits(&mut gateway_limits);
    let gateway = Host::builder()
        .plugins(plugins)
        .tools(ToolRegistry::with_builtins())
        .provider(provider)
        .workspace(dir.path())
        .spaces_root(dir.path())
        .start_gateway(gateway_limits)
        .unwrap();
    let mut serve_config = ServeConfig::new(dir.path());
    config(&mut serve_config);
    let (addr, handle) = start(gateway, serve_config).await.unwrap();
    let client = reqwest::Client::builder()
        .timeout(DEADLINE)
        .build()
        .unwrap();
    Served {
        addr,
        handle: Some(handle),
        dir,
        client,
        arbiters,
    }
}

/// A model that never answers: the turn stays in its model call until it is stopped.
pub struct Hanging;

#[async_trait]
impl Provider for Hanging {
    fn takes_images(&self) -> bool {
        false
    }
    async fn complete(&self, _: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        futures::future::pending().await
    }
}

/// Waits (bounded) until the session's activity is `activity`, on the gateway's own status
/// channel.
pub async fn until_activity(served: &Served, key: &str, activity: Activity) {
    let handle = served
        .gateway()
        .session(&SessionId::new(key))
        .expect("no such session");
    let mut status = handle.watch_status();
    tokio::time::timeout(DEADLINE, status.wait_for(|s| s.activity == activity))
        .await
        .expect("the session never reached that activity")
        .unwrap();
}

/// Reads server-sent events from a response.
pub struct SseReader {
    body: std::pin::Pin<Box<dyn futures::Stream<Item = reqwest::Result<Vec<u8>>> + Send>>,
    buffer: String,
}

impl SseReader {
    pub fn new(response: reqwest::Response) -> Self {
        Self {
            body: Box::pin(futures::StreamExt::map(response.bytes_stream(), |chunk| {
                chunk.map(|b| b.to_vec())
            })),
            buffer: String::new(),
        }
    }

    /// The next event as (kind, data), or None at the end of the stream (bounded).
    pub async fn next(&mut self) -> Option<(String, serde_json::Value)> {
        use futures::StreamExt as _;
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut kind = String::from("message");
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(k) = line.strip_prefix("event: ") {
                        kind = k.to_owned();
                    } else if let Some(d) = line.strip_prefix("data: ") {
                        data.push_str(d);
                    }
                }
                if data.is_empty() {
                    continue; // a keep-alive comment
                }
                return Some((kind, serde_json::from_str(&data).unwrap()));
            }
            let chunk = tokio::time::timeout(DEADLINE, self.body.next())
                .await
                .expect("no event came")?;
            self.buffer
                .push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        }
    }

    /// Reads until an event of `kind` and returns its data (bounded).
    pub async fn until(&mut self, kind: &str) -> serde_json::Value {
        while let Some((k, data)) = self.next().await {
            if k == kind {
                return data;
            }
        }
        panic!("the stream ended before a '{kind}' event")
    }
}

/// Milliseconds since the Unix epoch, as API keys and JWTs count time.
pub fn now_ms() -> u64 {
    u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// A new API key of `tenant` with `role`, stored in `table`; the key's text.
pub async fn add_key(
    table: &hookline::host::store::FileApiKeys,
    tenant: &str,
    role: hookline::host::store::Role,
) -> String {
    use hookline::host::store::{ApiKeyRecord, ApiKeyTable as _};
    let (key, record) = ApiKeyRecord::create(tenant, role, None, None, now_ms()).unwrap();
    table.insert(&record).await.unwrap();
    key
}

/// A server over the echo model whose credentials are the API keys of `table`, under `tenants`'
/// policies.
pub async fn serve_with_keys(
    table: Arc<dyn hookline::host::store::ApiKeyTable>,
    tenants: hookline::server::Tenants,
) -> Served {
    serve(
        Arc::new(hookline::host::provider::EchoProvider::new()),
        |_| {},
        move |config| {
            config.keys = Some(hookline::server::KeyTable(table));
            config.tenants = tenants;
        },
    )
    .await
}
