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
use hookline_messages::model::{Item, ModelRequest, ModelResponse};
use reqwest::header::{HeaderName, HeaderValue};
use reqwest::Response;

use crate::family;
use crate::openai::ImageSource;
use crate::prefix::{unsendable, write_messages, Messages, PrefixCache};
use crate::retry::RetryPolicy;
use crate::transport::{endpoint, secret_header, KeySource, Transport};
use hookline_host::provider::{OnText, Provider, ProviderError};
use hookline_host::tools::ToolRegistry;
use mapping::{Answer, CallParts, Model};
use stream::Assembler;
use wire::{BlockOut, MessageOut, MessagesRequest, RequestHead, RequestTail, ToolDef};

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
    /// Each conversation's messages, encoded once (issue 47).
    prefix: PrefixCache,
}

/// The messages of a text-only model, for [`PrefixCache`].
struct TextMessages;

/// A model that takes no images: the only kind whose messages are kept.
const TEXT_ONLY: Model<'static> = Model {
    takes_images: false,
    images: None,
};

impl Messages for TextMessages {
    fn starts_message(&self, items: &[Arc<Item>], at: usize) -> bool {
        mapping::starts_message(items, at, &TEXT_ONLY)
    }

    fn encode(&self, items: &[Arc<Item>], out: &mut Vec<u8>) -> Result<(), ProviderError> {
        write_messages(&mapping::messages_of(items, &TEXT_ONLY)?, out)
    }
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
            prefix: PrefixCache::default(),
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

    /// The body for `request`, serialised. A text-only model's messages come from the
    /// conversation's kept prefix ([`PrefixCache`]): only the items new since the last call
    /// are encoded, and the `system` text (new at every call) is encoded whole. Byte for byte
    /// the body [`MessagesRequest`] serialises to.
    fn body(&self, request: &ModelRequest, stream: bool) -> Result<Vec<u8>, ProviderError> {
        // Side questions and compaction answer in text: no tools offered.
        let tools: &[ToolDef] = if request.purpose.is_turn_call() {
            &self.tools
        } else {
            &[]
        };
        if self.config.takes_images {
            // Image blocks are base64 of bytes from elsewhere: encoded whole, not kept.
            let model = Model {
                takes_images: true,
                images: self.images.as_deref(),
            };
            let mapped = mapping::request(request, &model)?;
            let body = MessagesRequest {
                model: &self.config.model,
                max_tokens: self.config.max_tokens,
                system: mapped.system,
                messages: mapped.messages,
                tools,
                stream,
            };
            return serde_json::to_vec(&body).map_err(unsendable);
        }
        let system = mapping::system_of(&request.items);
        // `MessagesRequest`'s fields in its order: model, max_tokens, system, then messages,
        // then tools and stream.
        let head = RequestHead {
            model: &self.config.model,
            max_tokens: self.config.max_tokens,
            system: system.as_deref(),
        };
        self.prefix.body(
            &head,
            &request.items,
            &TextMessages,
            &RequestTail { tools, stream },
        )
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::family::Family as _;
    use hookline_messages::model::{ItemBody, Purpose};

    /// A small deterministic generator (no `rand` needed for a fixed sequence).
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self, below: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 33) % below
        }
    }

    /// An item of every kind the history holds, chosen by `kind`; texts with characters JSON
    /// escapes, and some empty (they send nothing, so their neighbours merge).
    fn item(n: u64, kind: u64) -> Arc<Item> {
        let body = match kind {
            0 => ItemBody::User {
                text: format!("question {n} with \"quotes\" and \\ a backslash"),
                images: Vec::new(),
            },
            1 => ItemBody::Reasoning {
                text: format!("thinking {n}"),
                provider_state: None,
            },
            2 => ItemBody::Reasoning {
                text: format!("signed thinking {n}"),
                provider_state: Some(format!("state-{n}")),
            },
            3 => ItemBody::Assistant {
                text: format!("answer {n} \u{e9}\n"),
                images: Vec::new(),
            },
            4 | 5 => ItemBody::ToolCall {
                call_id: format!("call-{n}"),
                name: "read_file".into(),
                arguments: serde_json::json!({ "path": format!("src/{n}.rs") }),
            },
            6 | 7 => ItemBody::ToolResult {
                call_id: format!("call-{}", n - 1),
                name: "read_file".into(),
                text: format!("contents {n}\t"),
                images: Vec::new(),
                success: n % 3 != 0,
            },
            8 => ItemBody::System {
                text: format!("a plugin's note {n}"),
                images: Vec::new(),
            },
            9 => ItemBody::Assistant {
                text: String::new(),
                images: Vec::new(),
            },
            _ => ItemBody::User {
                text: String::new(),
                images: Vec::new(),
            },
        };
        Arc::new(Item::new(format!("i{n}"), body))
    }

    fn provider(tools: bool) -> AnthropicProvider {
        let mut config = AnthropicConfig::new("http://127.0.0.1:9", "stub \"model\"");
        config.key = KeySource::None;
        config.max_tokens = 64;
        let mut provider = AnthropicProvider::new(config).unwrap();
        if tools {
            provider.tools = vec![ToolDef {
                name: "read_file".into(),
                description: "Reads a \"file\".".into(),
                input_schema: serde_json::json!({"type": "object"}),
            }];
        }
        provider
    }

    /// What serialising the whole request gives.
    fn whole(provider: &AnthropicProvider, request: &ModelRequest, stream: bool) -> String {
        let mapped = mapping::request(request, &TEXT_ONLY).unwrap();
        let tools: &[ToolDef] = if request.purpose.is_turn_call() {
            &provider.tools
        } else {
            &[]
        };
        let body = serde_json::to_vec(&MessagesRequest {
            model: &provider.config.model,
            max_tokens: provider.config.max_tokens,
            system: mapped.system,
            messages: mapped.messages,
            tools,
            stream,
        })
        .unwrap();
        String::from_utf8(body).unwrap()
    }

    /// The body of a conversation grown call by call (each call a new system item, as the host
    /// builds it) is byte for byte what serialising the whole request gives: every item kind,
    /// neighbours of one role that merge across calls, streamed or not, with tools or without,
    /// every purpose, a hook's edit of an earlier item (a new allocation) and a history cut
    /// short (compaction).
    #[test]
    fn bodies_from_the_kept_prefix_equal_the_whole_encoding() {
        for (seed, tools) in [(1, true), (2, false), (3, true), (4, false)] {
            let provider = provider(tools);
            let mut random = Lcg(seed);
            let mut history: Vec<Arc<Item>> = Vec::new();
            let mut n = 0;
            let mut sent = 0;
            for call in 0..150 {
                for _ in 0..=random.next(3) {
                    n += 1;
                    history.push(item(n, random.next(11)));
                }
                match random.next(20) {
                    0 if !history.is_empty() => {
                        // A hook's edit: the item at `at` becomes a new allocation.
                        let at = usize::try_from(random.next(history.len() as u64)).unwrap();
                        n += 1;
                        history[at] = item(n, random.next(11));
                    }
                    1 => history.truncate(history.len() / 2),
                    _ => {}
                }
                let system = Item::new(
                    "system",
                    ItemBody::System {
                        text: format!("be brief ({call})"),
                        images: Vec::new(),
                    },
                );
                let mut items = vec![Arc::new(system)];
                items.extend(history.iter().cloned());
                let purpose = match call % 7 {
                    5 => Purpose::Compaction,
                    6 => Purpose::Side,
                    3 => Purpose::Plan,
                    _ => Purpose::Work,
                };
                let request = ModelRequest {
                    purpose,
                    accepts_images: false,
                    items: items.into(),
                };
                let stream = random.next(2) == 0;
                let body = provider.body(&request, stream).unwrap();
                assert_eq!(
                    String::from_utf8(body).unwrap(),
                    whole(&provider, &request, stream),
                    "seed {seed}, call {call}"
                );
                sent += request.items.len();
            }
            // Most of what each call sends again comes from the kept prefix (about 80 %: the
            // first calls are short, edits and cuts start over, the last message is new).
            let reused = provider.prefix.reused();
            assert!(
                reused * 3 > sent * 2,
                "seed {seed}: {reused} of {sent} items reused"
            );
        }
    }
}
