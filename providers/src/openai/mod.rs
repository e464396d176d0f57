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
mod stream;
mod wire;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use hookline_messages::model::{ImageRef, ModelRequest, ModelResponse};
use reqwest::header::AUTHORIZATION;
use reqwest::Response;

use crate::family;
use crate::prefix::{unsendable, write_messages, Messages, PrefixCache};
pub use crate::retry::RetryPolicy;
pub use crate::transport::KeySource;
use crate::transport::{endpoint, secret_header, Transport};
use hookline_host::provider::{OnText, Provider, ProviderError};
use hookline_host::tools::ToolRegistry;
use mapping::{Answer, Model};
use stream::Assembler;
use wire::{ChatHead, ChatOptions, ChatRequest, ChatResponse, FunctionDef, StreamOptions, ToolDef};

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
    transport: Transport,
    tools: Vec<ToolDef>,
    images: Option<Arc<dyn ImageSource>>,
    /// Each conversation's messages, encoded once (issue 47).
    prefix: PrefixCache,
}

/// The messages of a text-only model, for [`PrefixCache`].
struct TextMessages;

impl Messages for TextMessages {
    fn starts_message(&self, items: &[Arc<hookline_messages::model::Item>], at: usize) -> bool {
        items
            .get(at)
            .is_some_and(|item| mapping::starts_message(item))
    }

    fn encode(
        &self,
        items: &[Arc<hookline_messages::model::Item>],
        out: &mut Vec<u8>,
    ) -> Result<(), ProviderError> {
        let model = Model {
            takes_images: false,
            images: None,
        };
        write_messages(&mapping::messages_of(items, &model)?, out)
    }
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiProvider")
            .field("url", &self.transport.url.as_str())
            .field("model", &self.config.model)
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
        let key = config.key.read()?;
        let mut headers = Vec::new();
        if let Some(key) = &key {
            headers.push((AUTHORIZATION, secret_header(&format!("Bearer {key}"))?));
        }
        let url = endpoint(&config.base_url, &["chat", "completions"])?;
        let transport = Transport::new(url, headers, key, config.timeout, config.retry.clone())?;
        Ok(Self {
            config,
            transport,
            tools: Vec::new(),
            images: None,
            prefix: PrefixCache::default(),
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
}

impl family::Family for OpenAiProvider {
    type Answer = Answer;
    type Assembler = Assembler;

    fn transport(&self) -> &Transport {
        &self.transport
    }

    fn streams(&self) -> bool {
        self.config.stream
    }

    /// The body for `request`, serialised. A text-only model's messages come from the
    /// conversation's kept prefix ([`PrefixCache`]): only the items new since the last call
    /// are encoded. Byte for byte the body [`ChatRequest`] serialises to.
    fn body(&self, request: &ModelRequest, stream: bool) -> Result<Vec<u8>, ProviderError> {
        // Side questions and compaction answer in text: no tools offered.
        let tools: &[ToolDef] = if request.purpose.is_turn_call() {
            &self.tools
        } else {
            &[]
        };
        let options = ChatOptions {
            tools,
            max_tokens: self.config.max_tokens,
            stream,
            stream_options: stream.then_some(StreamOptions {
                include_usage: true,
            }),
        };
        if self.config.takes_images {
            // Images follow a run of tool results as one message: encoded whole, not kept.
            let model = Model {
                takes_images: true,
                images: self.images.as_deref(),
            };
            let body = ChatRequest {
                model: &self.config.model,
                messages: mapping::messages(request, &model)?,
                options,
            };
            return serde_json::to_vec(&body).map_err(unsendable);
        }
        self.prefix.body(
            &ChatHead {
                model: &self.config.model,
            },
            &request.items,
            &TextMessages,
            &options,
        )
    }

    /// A whole answer, parsed.
    async fn whole(&self, response: Response) -> Result<Answer, ProviderError> {
        let body = self.transport.read_body(response).await?;
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
}

#[async_trait]
impl Provider for OpenAiProvider {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::family::Family as _;
    use hookline_messages::model::{Item, ItemBody, Purpose};

    fn item(n: usize) -> Item {
        let body = match n % 6 {
            0 => ItemBody::User {
                text: format!("question {n} with \"quotes\" and \\ a backslash"),
                images: Vec::new(),
            },
            1 => ItemBody::Reasoning {
                text: format!("thinking {n}"),
                provider_state: None,
            },
            2 => ItemBody::Assistant {
                text: format!("answer {n} \u{e9}"),
                images: Vec::new(),
            },
            3 | 4 => ItemBody::ToolCall {
                call_id: format!("call-{n}"),
                name: "read_file".into(),
                arguments: serde_json::json!({ "path": format!("src/{n}.rs") }),
            },
            _ => ItemBody::ToolResult {
                call_id: format!("call-{}", n - 1),
                name: "read_file".into(),
                text: format!("contents {n}"),
                images: Vec::new(),
                success: true,
            },
        };
        Item::new(format!("i{n}"), body)
    }

    /// The body of a conversation grown call by call (each call a new system item, as the
    /// host builds it) is byte for byte what serialising the whole request gives, streamed or
    /// not, with tools or without.
    #[test]
    fn bodies_from_the_kept_prefix_equal_the_whole_encoding() {
        let mut config = OpenAiConfig::new("http://127.0.0.1:9/v1", "stub \"model\"");
        config.max_tokens = Some(64);
        let provider = OpenAiProvider::new(config).unwrap();
        let model = Model {
            takes_images: false,
            images: None,
        };
        let mut history: Vec<Arc<Item>> = Vec::new();
        for call in 0..60 {
            history.extend((0..3).map(|k| Arc::new(item(call * 3 + k))));
            let system = Item::new(
                "system",
                ItemBody::System {
                    text: format!("be brief ({call})"),
                    images: Vec::new(),
                },
            );
            let mut items = vec![Arc::new(system)];
            items.extend(history.iter().cloned());
            let purpose = if call % 5 == 4 {
                Purpose::Compaction
            } else {
                Purpose::Work
            };
            let request = ModelRequest {
                purpose,
                accepts_images: false,
                items: items.into(),
            };
            let stream = call % 2 == 0;
            let whole = serde_json::to_vec(&ChatRequest {
                model: "stub \"model\"",
                messages: mapping::messages(&request, &model).unwrap(),
                options: ChatOptions {
                    tools: &[],
                    max_tokens: Some(64),
                    stream,
                    stream_options: stream.then_some(StreamOptions {
                        include_usage: true,
                    }),
                },
            })
            .unwrap();
            let body = provider.body(&request, stream).unwrap();
            assert_eq!(
                String::from_utf8(body).unwrap(),
                String::from_utf8(whole).unwrap(),
                "call {call}"
            );
        }
    }
}
