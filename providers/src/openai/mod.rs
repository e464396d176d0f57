//! [`OpenAiProvider`]: a model behind any server that speaks the OpenAI chat-completions API
//! (issue 12). Configuration is a struct ([`OpenAiConfig`]); the provider owns one pooled HTTP
//! client (reqwest over rustls), and retries live in one place ([`RetryPolicy`]).
//!
//! The API key is read once, from the environment variable the configuration names. It goes
//! into the `Authorization` header (marked sensitive) and nowhere else: it is never logged, and
//! every text that comes back from a server has it removed before it reaches an error or a note.
//!
//! ```no_run
//! use hookline_providers::openai::{KeySource, OpenAiConfig, OpenAiProvider};
//!
//! let config = OpenAiConfig {
//!     key: KeySource::Env("OPENAI_API_KEY".into()),
//!     ..OpenAiConfig::new("https://api.openai.com/v1", "gpt-4o-mini")
//! };
//! let provider = OpenAiProvider::new(config)?;
//! # Ok::<(), hookline_host::provider::ProviderError>(())
//! ```

mod mapping;
mod retry;
mod stream;
mod wire;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt as _;
use hookline_messages::model::{ImageRef, ModelRequest, ModelResponse};
use reqwest::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use reqwest::{Response, Url};

use hookline_host::provider::{OnText, Provider, ProviderError};
use hookline_host::tools::ToolRegistry;
use mapping::{Answer, Model};
use retry::Next;
pub use retry::RetryPolicy;
use stream::Assembler;
use wire::{ChatRequest, ChatResponse, ErrorEnvelope, FunctionDef, StreamOptions, ToolDef};

/// The longest whole answer (or error body) read; past it the reply is refused.
const MAX_BODY: usize = 16 * 1024 * 1024;
/// How much of a server's error text an error keeps.
const MAX_MESSAGE: usize = 300;

/// Where the API key comes from. The key itself never appears in a configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeySource {
    /// No key: no `Authorization` header (most local servers).
    None,
    /// The named environment variable, which must be set.
    Env(String),
    /// The named environment variable if it is set, else no key.
    EnvIfSet(String),
}

/// Where the bytes of an image marker come from. The host refers to images by marker (SPEC
/// R5.4); a provider that sends images needs their bytes.
pub trait ImageSource: Send + Sync + 'static {
    /// The bytes of `image`, if this source holds them.
    fn bytes(&self, image: &ImageRef) -> Option<Vec<u8>>;
}

/// An [`OpenAiProvider`]'s configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenAiConfig {
    /// The API's base URL, up to and including the version: `http://127.0.0.1:8080/v1`.
    pub base_url: String,
    /// The model name sent with each request.
    pub model: String,
    /// Where the API key comes from.
    pub key: KeySource,
    /// How long the server may take to start answering, and (streaming) to send the next piece.
    pub timeout: Duration,
    /// Whether the model takes images (SPEC R5.6). Without, no image is ever sent.
    pub takes_images: bool,
    /// Whether answers are streamed (`stream: true`): text arrives piece by piece.
    pub stream: bool,
    /// The most tokens one answer may have (`max_tokens`), if bounded.
    pub max_tokens: Option<u32>,
    /// How failed attempts are retried.
    pub retry: RetryPolicy,
}

impl OpenAiConfig {
    /// A configuration for `model` at `base_url`: no key, 60 s timeout, text only, streaming,
    /// the default retries.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: model.into(),
            key: KeySource::None,
            timeout: Duration::from_secs(60),
            takes_images: false,
            stream: true,
            max_tokens: None,
            retry: RetryPolicy::default(),
        }
    }
}

/// A model behind an OpenAI-compatible chat-completions API.
pub struct OpenAiProvider {
    config: OpenAiConfig,
    url: Url,
    http: reqwest::Client,
    /// The `Authorization` header, marked sensitive; `None` without a key.
    auth: Option<HeaderValue>,
    /// The key's text, only to remove it from what servers send back.
    key: Option<String>,
    tools: Vec<ToolDef>,
    images: Option<Arc<dyn ImageSource>>,
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiProvider")
            .field("url", &self.url.as_str())
            .field("model", &self.config.model)
            .field("key", &self.key.as_ref().map(|_| "[redacted]"))
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl OpenAiProvider {
    /// A provider for `config`, reading the key from the environment now.
    ///
    /// # Errors
    /// [`ProviderError::Config`] for a base URL that is not `http(s)://`, a key variable that
    /// must be set and is not (the error names the variable, never a value), or a key that
    /// cannot be a header.
    pub fn new(config: OpenAiConfig) -> Result<Self, ProviderError> {
        let key = match &config.key {
            KeySource::None => None,
            KeySource::Env(var) => Some(std::env::var(var).map_err(|_| {
                ProviderError::Config(format!(
                    "the environment variable {var} (the API key) is not set"
                ))
            })?),
            KeySource::EnvIfSet(var) => std::env::var(var).ok(),
        }
        .filter(|key| !key.is_empty());
        let auth = key
            .as_ref()
            .map(|key| {
                let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                    ProviderError::Config("the API key holds characters a header cannot".into())
                })?;
                value.set_sensitive(true);
                Ok::<_, ProviderError>(value)
            })
            .transpose()?;
        let url = endpoint(&config.base_url)?;
        let http = reqwest::Client::builder()
            .connect_timeout(config.timeout)
            .build()
            .map_err(|e| ProviderError::Config(format!("the HTTP client cannot start ({e})")))?;
        Ok(Self {
            config,
            url,
            http,
            auth,
            key,
            tools: Vec::new(),
            images: None,
        })
    }

    /// Offers the model the tools of `registry`, each with its JSON Schema
    /// ([`Tool::parameters`](hookline_host::tools::Tool::parameters)), on work and plan calls.
    #[must_use]
    pub fn with_tools(mut self, registry: &ToolRegistry) -> Self {
        self.tools = registry
            .specs()
            .filter_map(|spec| registry.get(&spec.name))
            .map(|tool| ToolDef {
                kind: "function",
                function: FunctionDef {
                    name: tool.spec().name.clone(),
                    description: tool.spec().description.clone(),
                    parameters: tool.parameters(),
                },
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
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// The body for `request`, serialised.
    fn body(&self, request: &ModelRequest, stream: bool) -> Result<Vec<u8>, ProviderError> {
        let model = Model {
            takes_images: self.config.takes_images,
            images: self.images.as_deref(),
        };
        // Side questions and compaction answer in text: no tools offered.
        let tools: &[ToolDef] = if request.purpose.is_turn_call() {
            &self.tools
        } else {
            &[]
        };
        let body = ChatRequest {
            model: &self.config.model,
            messages: mapping::messages(request, &model)?,
            tools,
            max_tokens: self.config.max_tokens,
            stream,
            stream_options: stream.then_some(StreamOptions {
                include_usage: true,
            }),
        };
        serde_json::to_vec(&body)
            .map_err(|e| ProviderError::Unsendable(format!("the request cannot be encoded ({e})")))
    }

    /// Sends `body`, retrying as the policy says, and returns the first successful answer.
    async fn send(&self, body: Vec<u8>) -> Result<Response, ProviderError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            // The error of this attempt, and the headers that may say when to retry.
            let (error, headers) = match self.attempt(body.clone()).await {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response) => {
                    let status = response.status();
                    let headers = response.headers().clone();
                    let error = ProviderError::Status {
                        status: status.as_u16(),
                        attempts: attempt,
                        message: self.error_message(response).await,
                    };
                    if !retry::retryable(status) {
                        return Err(error);
                    }
                    (error, Some(headers))
                }
                Err(error) => (error, None),
            };
            let jitter = fastrand::f64();
            match self.config.retry.next(attempt, headers.as_ref(), jitter) {
                Next::Wait(wait) => {
                    tracing::debug!(attempt, ?wait, "retrying the model call");
                    tokio::time::sleep(wait).await;
                }
                Next::GiveUp => return Err(error),
                Next::TooLong(wait) => {
                    return Err(ProviderError::Unreachable(format!(
                    "the server asked to retry after {} s, longer than the {} s limit ({error})",
                    wait.as_secs(),
                    self.config.retry.max_retry_after.as_secs(),
                )))
                }
            }
        }
    }

    /// One attempt: the answer's status and headers, within the timeout. Transport failures
    /// (no connection, no answer in time) may be retried.
    async fn attempt(&self, body: Vec<u8>) -> Result<Response, ProviderError> {
        let mut request = self
            .http
            .post(self.url.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(body);
        if let Some(auth) = &self.auth {
            request = request.header(AUTHORIZATION, auth.clone());
        }
        match tokio::time::timeout(self.config.timeout, request.send()).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(error)) => Err(ProviderError::Unreachable(
                self.redact(&error.without_url_ref()),
            )),
            Err(_) => Err(self.timed_out()),
        }
    }

    fn timed_out(&self) -> ProviderError {
        ProviderError::Unreachable(format!(
            "no answer within {} s",
            self.config.timeout.as_secs_f64()
        ))
    }

    /// The server's explanation of an error status: its `error.message`, else the body's
    /// start, shortened and without the key.
    async fn error_message(&self, response: Response) -> String {
        let status = response.status();
        let body = self.read_body(response).await.unwrap_or_default();
        let text = match serde_json::from_slice::<ErrorEnvelope>(&body) {
            Ok(envelope) => envelope.error.message().to_owned(),
            Err(_) => String::from_utf8_lossy(&body).trim().to_owned(),
        };
        let text = if text.is_empty() {
            status
                .canonical_reason()
                .unwrap_or("no explanation")
                .to_owned()
        } else {
            text
        };
        shorten(&self.redact(&text))
    }

    /// The whole body, within the timeout and [`MAX_BODY`].
    async fn read_body(&self, response: Response) -> Result<Vec<u8>, ProviderError> {
        let mut body = Vec::new();
        let mut pieces = response.bytes_stream();
        loop {
            let piece = tokio::time::timeout(self.config.timeout, pieces.next())
                .await
                .map_err(|_| self.timed_out())?;
            match piece {
                None => return Ok(body),
                Some(Ok(bytes)) if body.len() + bytes.len() <= MAX_BODY => {
                    body.extend_from_slice(&bytes)
                }
                Some(Ok(_)) => {
                    return Err(ProviderError::Malformed(format!(
                        "the reply is longer than {MAX_BODY} bytes"
                    )))
                }
                Some(Err(e)) => return Err(self.cut(&e)),
            }
        }
    }

    fn cut(&self, error: &reqwest::Error) -> ProviderError {
        ProviderError::Malformed(format!(
            "the reply was cut off ({})",
            self.redact(&error.without_url_ref())
        ))
    }

    /// A whole answer, parsed.
    async fn whole(&self, response: Response) -> Result<Answer, ProviderError> {
        let body = self.read_body(response).await?;
        let reply: ChatResponse = serde_json::from_slice(&body).map_err(|e| {
            ProviderError::Malformed(format!("the reply is not the JSON expected ({e})"))
        })?;
        let choice = reply
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| ProviderError::Malformed("the reply has no choices".into()))?;
        let message = choice.message;
        let tool_calls = message
            .tool_calls
            .unwrap_or_default()
            .into_iter()
            .map(|call| {
                let function = call.function.unwrap_or_default();
                mapping::CallParts {
                    id: call.id,
                    name: function.name,
                    arguments: function.arguments.unwrap_or_default(),
                }
            })
            .collect();
        Ok(Answer {
            reasoning: message.reasoning_content.unwrap_or_default(),
            text: message.content.unwrap_or_default(),
            tool_calls,
            finish_reason: choice.finish_reason,
            usage: reply.usage,
        })
    }

    /// A streamed answer, each text delta offered as it arrives. A server that ignores
    /// `stream: true` and answers whole is read whole, its text offered once.
    async fn streamed(
        &self,
        response: Response,
        on_text: OnText<'_>,
    ) -> Result<Answer, ProviderError> {
        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        if is_json {
            let answer = self.whole(response).await?;
            if !answer.text.is_empty() {
                on_text(&answer.text);
            }
            return Ok(answer);
        }
        let mut assembler = Assembler::default();
        let mut pieces = response.bytes_stream();
        loop {
            let piece = tokio::time::timeout(self.config.timeout, pieces.next())
                .await
                .map_err(|_| self.timed_out())?;
            match piece {
                None => return assembler.finish(on_text),
                Some(Ok(bytes)) => assembler.feed(&bytes, on_text)?,
                // A connection lost after the answer completed costs nothing.
                Some(Err(_)) if assembler.is_done() => return assembler.finish(on_text),
                Some(Err(e)) => return Err(self.cut(&e)),
            }
        }
    }

    /// Removes the key from a text a server (or the HTTP client) produced.
    fn redact(&self, text: &str) -> String {
        match &self.key {
            Some(key) if !key.is_empty() => text.replace(key.as_str(), "[redacted]"),
            _ => text.to_owned(),
        }
    }

    /// One call: streamed when the configuration says so (text offered to `on_text`, if any),
    /// whole otherwise.
    async fn call(
        &self,
        request: &ModelRequest,
        on_text: Option<OnText<'_>>,
    ) -> Result<ModelResponse, ProviderError> {
        let stream = self.config.stream;
        let response = self.send(self.body(request, stream)?).await?;
        let answer = if stream {
            self.streamed(response, on_text.unwrap_or(&|_| {})).await?
        } else {
            let answer = self.whole(response).await?;
            if let Some(on_text) = on_text.filter(|_| !answer.text.is_empty()) {
                on_text(&answer.text);
            }
            answer
        };
        answer.into_response(request.purpose)
    }
}

/// `{base}/chat/completions`, for an `http` or `https` base.
fn endpoint(base: &str) -> Result<Url, ProviderError> {
    let bad = |why: String| ProviderError::Config(format!("the base URL {base:?} {why}"));
    let base =
        Url::parse(base.trim_end_matches('/')).map_err(|e| bad(format!("is not a URL ({e})")))?;
    if !matches!(base.scheme(), "http" | "https") {
        return Err(bad("is not http or https".into()));
    }
    if !base.username().is_empty() || base.password().is_some() {
        // A key in the URL would be printed wherever the URL is: not even this error repeats it.
        return Err(ProviderError::Config(
            "the base URL holds credentials; give the key by environment variable".into(),
        ));
    }
    let mut url = base;
    url.path_segments_mut()
        .map_err(|()| bad("cannot take a path".into()))?
        .pop_if_empty()
        .extend(["chat", "completions"]);
    Ok(url)
}

/// At most [`MAX_MESSAGE`] characters, cut at a character boundary.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(MAX_MESSAGE) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_owned(),
    }
}

/// A reqwest error's text without the URL (which carries no key, but adds nothing), with its
/// causes, so "connection refused" is said.
trait WithoutUrlRef {
    fn without_url_ref(&self) -> String;
}

impl WithoutUrlRef for reqwest::Error {
    fn without_url_ref(&self) -> String {
        let mut text = self.to_string();
        if let Some(url) = self.url() {
            text = text.replace(&format!(" ({url})"), "");
        }
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            text.push_str(": ");
            text.push_str(&cause.to_string());
            source = cause.source();
        }
        text
    }
}

#[async_trait]
impl Provider for OpenAiProvider {
    fn takes_images(&self) -> bool {
        self.config.takes_images
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        self.call(request, None).await
    }

    async fn complete_streaming(
        &self,
        request: &ModelRequest,
        on_text: OnText<'_>,
    ) -> Result<ModelResponse, ProviderError> {
        self.call(request, Some(on_text)).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_endpoint_follows_the_base_url() {
        let url = |base: &str| endpoint(base).map(|u| u.to_string());
        assert_eq!(
            url("http://127.0.0.1:8080/v1").unwrap(),
            "http://127.0.0.1:8080/v1/chat/completions"
        );
        assert_eq!(
            url("http://127.0.0.1:8080/v1/").unwrap(),
            "http://127.0.0.1:8080/v1/chat/completions"
        );
        assert_eq!(
            url("https://host").unwrap(),
            "https://host/chat/completions"
        );
        assert!(url("ftp://host").is_err());
        let error = url("https://user:sk-secret@host/v1")
            .unwrap_err()
            .to_string();
        assert!(!error.contains("sk-secret"), "{error}");
    }

    #[test]
    fn long_server_texts_are_shortened_at_a_character_boundary() {
        let text = "é".repeat(MAX_MESSAGE + 5);
        let short = shorten(&text);
        assert_eq!(short.chars().count(), MAX_MESSAGE + 3);
    }
}
