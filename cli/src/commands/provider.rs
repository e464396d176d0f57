//! The provider flags `hookline run`, `hookline chat` and `hookline serve` share (issue 12
//! item 6, issue 21): `--provider openai|anthropic --base-url URL --model NAME
//! [--api-key-env VAR] [--timeout SECONDS] [--max-tokens N] [--no-stream]`, and `--config FILE`
//! ([`Config`]). One code path builds the model for all three: the flags' model when
//! `--provider` is given (flags override the file), else the file's `[[model]]`s behind one
//! [`Routed`] provider, else `None` (each command's built-in model).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use clap::Args;
use hookline_messages::model::{ModelRequest, ModelResponse};

use super::config::{Config, ConfigError, ModelEntry, ProviderKind};
use hookline_host::provider::{OnText, Provider, ProviderError};
use hookline_host::tools::ToolRegistry;
use hookline_providers::{
    AnthropicConfig, AnthropicProvider, KeySource, OpenAiConfig, OpenAiProvider, Routed,
    RoutedModel,
};

/// The variable read for an OpenAI key when `--api-key-env` is not given (only if it is set).
const DEFAULT_OPENAI_KEY_ENV: &str = "OPENAI_API_KEY";
/// The variable read for an Anthropic key when `--api-key-env` is not given (only if it is set).
const DEFAULT_ANTHROPIC_KEY_ENV: &str = "ANTHROPIC_API_KEY";
/// Seconds a model server may take to start answering, unless configured.
const DEFAULT_TIMEOUT_SECS: u64 = 60;

/// The provider flags.
#[derive(Clone, Debug, Args)]
pub(crate) struct ProviderArgs {
    /// A config file (TOML; docs/configuration.md): models, and serve's settings. Flags
    /// override it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// A real model: `openai` for any OpenAI-compatible server, `anthropic` for the Messages
    /// API (with --base-url and --model). Replaces the config file's models.
    #[arg(long, value_enum)]
    provider: Option<ProviderKind>,
    /// The API's base URL: up to the version for openai (`http://127.0.0.1:8080/v1`), without
    /// it for anthropic (`https://api.anthropic.com`).
    #[arg(long, value_name = "URL", requires = "provider")]
    base_url: Option<String>,
    /// The model name the server knows (also the name sessions ask for).
    #[arg(long, value_name = "NAME", requires = "provider")]
    model: Option<String>,
    /// The environment variable holding the API key (default: OPENAI_API_KEY or
    /// ANTHROPIC_API_KEY when set, else no key). The key itself is never a flag, never printed.
    #[arg(long, value_name = "VAR", requires = "provider")]
    api_key_env: Option<String>,
    /// Seconds the server may take to start answering, or to send the next piece of a stream.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = DEFAULT_TIMEOUT_SECS,
        requires = "provider"
    )]
    timeout: u64,
    /// The most tokens one answer may have (anthropic default: 4096).
    #[arg(long, value_name = "N", requires = "provider")]
    max_tokens: Option<u32>,
    /// Ask for whole answers instead of streamed ones.
    #[arg(long, requires = "provider")]
    no_stream: bool,
}

/// Why the model could not be set up.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ModelSetupError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Provider(#[from] ProviderError),
}

impl ProviderArgs {
    /// The config file, read and checked, if `--config` was given.
    ///
    /// # Errors
    /// [`ConfigError`]: one sentence naming the file, the line and the key.
    pub(crate) fn config(&self) -> Result<Option<Config>, ConfigError> {
        self.config
            .as_deref()
            .map(|path| {
                Config::load(path, &|var| {
                    std::env::var_os(var).is_some_and(|v| !v.is_empty())
                })
            })
            .transpose()
    }

    /// A one-line description of the model chosen, for banners.
    pub(crate) fn describe(&self, config: Option<&Config>) -> Option<String> {
        if self.provider.is_some() {
            return Some(format!(
                "{} at {}",
                self.model.as_deref().unwrap_or("?"),
                self.base_url.as_deref().unwrap_or("?")
            ));
        }
        let config = config.filter(|c| !c.models.is_empty())?;
        let names: Vec<&str> = config.models.iter().map(|m| m.name.as_str()).collect();
        Some(format!(
            "the models of {} ({})",
            config.path.display(),
            names.join(", ")
        ))
    }

    /// The model calls go to, offering `tools`: the flags' model, else the file's models, else
    /// `None`.
    ///
    /// # Errors
    /// A missing `--base-url` or `--model`, or a provider's configuration errors.
    pub(crate) fn build(
        &self,
        config: Option<&Config>,
        tools: &ToolRegistry,
    ) -> Result<Option<Arc<dyn Provider>>, ModelSetupError> {
        if let Some(kind) = self.provider {
            let missing = |flag: &str| {
                ProviderError::Config(format!("--provider {} needs {flag}", kind_name(kind)))
            };
            let base_url = self
                .base_url
                .clone()
                .ok_or_else(|| missing("--base-url URL"))?;
            let model = self.model.clone().ok_or_else(|| missing("--model NAME"))?;
            let key = match (&self.api_key_env, kind) {
                (Some(var), _) => KeySource::Env(var.clone()),
                (None, ProviderKind::Openai) => KeySource::EnvIfSet(DEFAULT_OPENAI_KEY_ENV.into()),
                (None, ProviderKind::Anthropic) => {
                    KeySource::EnvIfSet(DEFAULT_ANTHROPIC_KEY_ENV.into())
                }
            };
            let spec = ModelSpec {
                kind,
                base_url,
                model,
                key,
                timeout: Duration::from_secs(self.timeout.max(1)),
                stream: !self.no_stream,
                max_tokens: self.max_tokens,
                takes_images: false,
            };
            // One model, named as the server knows it: sessions that ask for another are
            // refused as with a config file's models.
            let name = spec.model.clone();
            let routed = Routed::new(
                vec![RoutedModel {
                    name: name.clone(),
                    provider: spec.build(tools)?,
                }],
                &name,
            )?;
            return Ok(Some(Arc::new(routed)));
        }
        let Some(config) = config.filter(|c| !c.models.is_empty()) else {
            return Ok(None);
        };
        let models = config
            .models
            .iter()
            .map(|entry| {
                Ok(RoutedModel {
                    name: entry.name.clone(),
                    provider: ModelSpec::from_entry(entry).build(tools)?,
                })
            })
            .collect::<Result<Vec<_>, ProviderError>>()?;
        let default = config
            .default_model
            .clone()
            .unwrap_or_else(|| config.models[0].name.clone());
        Ok(Some(Arc::new(Routed::new(models, &default)?)))
    }
}

fn kind_name(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Openai => "openai",
        ProviderKind::Anthropic => "anthropic",
    }
}

/// One model, from flags or a `[[model]]`: the one place either family is built.
struct ModelSpec {
    kind: ProviderKind,
    base_url: String,
    model: String,
    key: KeySource,
    timeout: Duration,
    stream: bool,
    max_tokens: Option<u32>,
    takes_images: bool,
}

impl ModelSpec {
    fn from_entry(entry: &ModelEntry) -> Self {
        Self {
            kind: entry.provider,
            base_url: entry.base_url.clone(),
            model: entry.model.clone(),
            // A file names the key's variable or sends none.
            key: entry
                .api_key_env()
                .map_or(KeySource::None, |var| KeySource::Env(var.to_owned())),
            timeout: Duration::from_secs(entry.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS).max(1)),
            stream: entry.stream.unwrap_or(true),
            max_tokens: entry.max_tokens,
            takes_images: entry.images.unwrap_or(false),
        }
    }

    fn build(self, tools: &ToolRegistry) -> Result<Arc<dyn Provider>, ProviderError> {
        Ok(match self.kind {
            ProviderKind::Openai => {
                let config = OpenAiConfig {
                    key: self.key,
                    timeout: self.timeout,
                    stream: self.stream,
                    max_tokens: self.max_tokens,
                    takes_images: self.takes_images,
                    ..OpenAiConfig::new(self.base_url, self.model)
                };
                Arc::new(OpenAiProvider::new(config)?.with_tools(tools))
            }
            ProviderKind::Anthropic => {
                let defaults = AnthropicConfig::new(self.base_url, self.model);
                let config = AnthropicConfig {
                    key: self.key,
                    timeout: self.timeout,
                    stream: self.stream,
                    max_tokens: self.max_tokens.unwrap_or(defaults.max_tokens),
                    takes_images: self.takes_images,
                    ..defaults
                };
                Arc::new(AnthropicProvider::new(config)?.with_tools(tools))
            }
        })
    }
}

/// A provider that keeps every request it sends, exactly as sent (for `hookline run`'s report).
pub(crate) struct Recorded {
    inner: Arc<dyn Provider>,
    sent: Arc<Mutex<Vec<ModelRequest>>>,
}

impl Recorded {
    /// Wraps `inner`; the returned list fills as requests are sent.
    pub(crate) fn new(inner: Arc<dyn Provider>) -> (Self, Arc<Mutex<Vec<ModelRequest>>>) {
        let sent = Arc::new(Mutex::new(Vec::new()));
        (
            Self {
                inner,
                sent: sent.clone(),
            },
            sent,
        )
    }

    fn record(&self, request: &ModelRequest) {
        self.sent
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push(request.clone());
    }
}

#[async_trait]
impl Provider for Recorded {
    fn takes_images(&self) -> bool {
        self.inner.takes_images()
    }

    fn takes_images_for(&self, model: Option<&str>) -> bool {
        self.inner.takes_images_for(model)
    }

    fn serves_model(&self, name: &str) -> bool {
        self.inner.serves_model(name)
    }

    fn default_model(&self) -> Option<String> {
        self.inner.default_model()
    }

    fn model_names(&self) -> Vec<String> {
        self.inner.model_names()
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        self.record(request);
        self.inner.complete(request).await
    }

    async fn complete_streaming(
        &self,
        request: &ModelRequest,
        on_text: OnText<'_>,
    ) -> Result<ModelResponse, ProviderError> {
        self.record(request);
        self.inner.complete_streaming(request, on_text).await
    }

    async fn complete_for(
        &self,
        model: Option<&str>,
        request: &ModelRequest,
        on_text: OnText<'_>,
    ) -> Result<ModelResponse, ProviderError> {
        self.record(request);
        self.inner.complete_for(model, request, on_text).await
    }
}
