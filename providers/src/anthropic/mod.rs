//! [`AnthropicProvider`]: a model behind Anthropic's Messages API (issue 21), built like the
//! OpenAI-compatible provider: a configuration struct ([`AnthropicConfig`]), one pooled HTTP
//! client (reqwest over rustls), the shared retries (429, 529 and 5xx, honouring
//! `retry-after`), its own wire types, a pure mapping ([`mapping`]) and a stream assembler.
//!
//! `POST {base_url}/v1/messages` with `x-api-key` (marked sensitive; removed from every text a
//! server sends back) and `anthropic-version`. Dropping a call's future (`/stop`) drops the
//! request.
//!
//! ```no_run
//! use hookline_providers::anthropic::{AnthropicConfig, AnthropicProvider};
//! use hookline_providers::KeySource;
//!
//! let config = AnthropicConfig {
//!     key: KeySource::Env("ANTHROPIC_API_KEY".into()),
//!     ..AnthropicConfig::new("https://api.anthropic.com", "claude-sonnet-4-5")
//! };
//! let provider = AnthropicProvider::new(config)?;
//! # Ok::<(), hookline_host::provider::ProviderError>(())
//! ```

mod mapping;
mod stream;
mod wire;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use hookline_messages::model::{ModelRequest, ModelResponse};
use reqwest::header::{HeaderName, HeaderValue};
use reqwest::Response;

use crate::family;
use crate::openai::ImageSource;
use crate::retry::RetryPolicy;
use crate::transport::{endpoint, secret_header, KeySource, Transport};
use hookline_host::provider::{OnText, Provider, ProviderError};
use hookline_host::tools::ToolRegistry;
use mapping::{Answer, CallParts, Model};
use stream::Assembler;
use wire::{BlockOut, MessageOut, MessagesRequest, ToolDef};

/// The API version sent as `anthropic-version` unless configured otherwise.
pub const DEFAULT_VERSION: &str = "2023-06-01";
/// The `max_tokens` sent unless configured otherwise (the API requires one).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// An [`AnthropicProvider`]'s configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnthropicConfig {
    /// The API's base URL, without the version: `https://api.anthropic.com`.
    pub base_url: String,
    /// The model name sent with each request.
    pub model: String,
    /// Where the API key comes from (sent as `x-api-key`).
    pub key: KeySource,
    /// The `anthropic-version` header.
    pub version: String,
    /// How long the server may take to start answering, and (streaming) to send the next piece.
    pub timeout: Duration,
    /// Whether the model takes images (SPEC R5.6). Without, no image is ever sent.
    pub takes_images: bool,
    /// Whether answers are streamed (`stream: true`).
    pub stream: bool,
    /// The most tokens one answer may have (`max_tokens`, required by the API).
    pub max_tokens: u32,
    /// How failed attempts are retried.
    pub retry: RetryPolicy,
}

impl AnthropicConfig {
    /// A configuration for `model` at `base_url`: the key from `ANTHROPIC_API_KEY` if set,
    /// 60 s timeout, text only, streaming, 4096 tokens, the default retries.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            key: KeySource::EnvIfSet("ANTHROPIC_API_KEY".into()),
            version: DEFAULT_VERSION.into(),
            timeout: Duration::from_secs(60),
            takes_images: false,
            stream: true,
            max_tokens: DEFAULT_MAX_TOKENS,
            retry: RetryPolicy::default(),
        }
    }
}

/// A model behind the Anthropic Messages API.
pub struct AnthropicProvider {
    config: AnthropicConfig,
    transport: Transport,
    tools: Vec<ToolDef>,
    images: Option<Arc<dyn ImageSource>>,
}

impl fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicProvider")
            .field("url", &self.transport.url.as_str())
            .field("model", &self.config.model)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl AnthropicProvider {
    /// A provider for `config`, reading the key from the environment now.
    ///
    /// # Errors
    /// [`ProviderError::Config`] for a base URL that is not `http(s)://`, a key variable that
    /// must be set and is not (naming the variable, never a value), or a header that cannot be.
    pub fn new(config: AnthropicConfig) -> Result<Self, ProviderError> {
        let key = config.key.read()?;
        let version = HeaderValue::from_str(&config.version).map_err(|_| {
            ProviderError::Config(format!(
                "the API version {:?} cannot be a header",
                config.version
            ))
        })?;
        let mut headers = vec![(HeaderName::from_static("anthropic-version"), version)];
        if let Some(key) = &key {
            headers.push((HeaderName::from_static("x-api-key"), secret_header(key)?));
        }
        let url = endpoint(&config.base_url, &["v1", "messages"])?;
        let transport = Transport::new(url, headers, key, config.timeout, config.retry.clone())?;
        Ok(Self {
            config,
            transport,
            tools: Vec::new(),
            images: None,
        })
    }

    /// Offers the model the tools of `registry` (name, description, input schema) on work and
    /// plan calls.
    #[must_use]
    pub fn with_tools(mut self, registry: &ToolRegistry) -> Self {
        self.tools = registry
            .specs()
            .filter_map(|spec| registry.get(&spec.name))
            .map(|tool| ToolDef {
                name: tool.spec().name.clone(),
                description: tool.spec().description.clone(),
                input_schema: tool.parameters(),
            })
            .collect();
        self
    }

    /// Where image bytes come from, for a model that takes images.
    #[must_use]
    pub fn with_images(mut self, source: Arc<dyn ImageSource>) -> Self {
        self.images = Some(source);
        self
    }

    /// The configuration.
    pub fn config(&self) -> &AnthropicConfig {
        &self.config
    }
}

impl family::Family for AnthropicProvider {
    type Answer = Answer;
    type Assembler = Assembler;

    fn transport(&self) -> &Transport {
        &self.transport
    }

    fn streams(&self) -> bool {
        self.config.stream
    }

    /// The body for `request`, serialised.
    fn body(&self, request: &ModelRequest, stream: bool) -> Result<Vec<u8>, ProviderError> {
        let model = Model {
            takes_images: self.config.takes_images,
            images: self.images.as_deref(),
        };
        let mapped = mapping::request(request, &model)?;
        // Side questions and compaction answer in text: no tools offered.
        let tools: &[ToolDef] = if request.purpose.is_turn_call() {
            &self.tools
        } else {
            &[]
        };
        let body = MessagesRequest {
            model: &self.config.model,
            max_tokens: self.config.max_tokens,
            system: mapped.system,
            messages: mapped.messages,
            tools,
            stream,
        };
        serde_json::to_vec(&body)
            .map_err(|e| ProviderError::Unsendable(format!("the request cannot be encoded ({e})")))
    }

    /// A whole answer, parsed.
    async fn whole(&self, response: Response) -> Result<Answer, ProviderError> {
        let body = self.transport.read_body(response).await?;
        let reply: MessageOut = serde_json::from_slice(&body).map_err(|e| {
            ProviderError::Malformed(format!("the reply is not the JSON expected ({e})"))
        })?;
        let mut answer = Answer {
            stop_reason: reply.stop_reason,
            usage: reply.usage,
            ..Answer::default()
        };
        for block in reply.content {
            match block {
                BlockOut::Text { text } => answer.text.push_str(&text),
                BlockOut::Thinking { thinking } => answer.reasoning.push_str(&thinking),
                BlockOut::ToolUse { id, name, input } => answer.tool_calls.push(CallParts {
                    id,
                    name,
                    input,
                    partial_json: String::new(),
                }),
                BlockOut::Other => {}
            }
        }
        Ok(answer)
    }
}

#[async_trait]
impl Provider for AnthropicProvider {
    fn takes_images(&self) -> bool {
        self.config.takes_images
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        family::call(self, request, None).await
    }

    async fn complete_streaming(
        &self,
        request: &ModelRequest,
        on_text: OnText<'_>,
    ) -> Result<ModelResponse, ProviderError> {
        family::call(self, request, Some(on_text)).await
    }
}
