//! The provider flags `hookline run` and `hookline chat` share (issue 12 item 6):
//! `--provider openai --base-url URL --model NAME [--api-key-env VAR] [--timeout SECONDS]
//! [--no-stream]`. Without `--provider`, each command uses its own built-in model.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use clap::{Args, ValueEnum};
use hookline_messages::model::{ModelRequest, ModelResponse};

use hookline_host::provider::{OnText, Provider, ProviderError};
use hookline_host::tools::ToolRegistry;
use hookline_providers::{KeySource, OpenAiConfig, OpenAiProvider};

/// The variable read for the key when `--api-key-env` is not given (only if it is set).
const DEFAULT_KEY_ENV: &str = "OPENAI_API_KEY";

/// Which provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ProviderKind {
    /// Any server speaking the OpenAI chat-completions API.
    Openai,
}

/// The provider flags.
#[derive(Clone, Debug, Args)]
pub(crate) struct ProviderArgs {
    /// A real model: `openai` for any OpenAI-compatible server (with --base-url and --model).
    #[arg(long, value_enum)]
    provider: Option<ProviderKind>,
    /// The API's base URL, up to the version, e.g. `http://127.0.0.1:8080/v1`.
    #[arg(long, value_name = "URL", requires = "provider")]
    base_url: Option<String>,
    /// The model name the server knows.
    #[arg(long, value_name = "NAME", requires = "provider")]
    model: Option<String>,
    /// The environment variable holding the API key (default: OPENAI_API_KEY when set, else
    /// no key). The key itself is never a flag, never printed.
    #[arg(long, value_name = "VAR", requires = "provider")]
    api_key_env: Option<String>,
    /// Seconds the server may take to start answering, or to send the next piece of a stream.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 60,
        requires = "provider"
    )]
    timeout: u64,
    /// Ask for whole answers instead of streamed ones.
    #[arg(long, requires = "provider")]
    no_stream: bool,
}

impl ProviderArgs {
    /// A one-line description of the model chosen, for banners.
    pub(crate) fn describe(&self) -> Option<String> {
        self.provider?;
        Some(format!(
            "{} at {}",
            self.model.as_deref().unwrap_or("?"),
            self.base_url.as_deref().unwrap_or("?")
        ))
    }

    /// The configured provider offering `tools`, or `None` without `--provider`.
    ///
    /// # Errors
    /// A missing `--base-url` or `--model`, or [`OpenAiProvider::new`]'s errors.
    pub(crate) fn build(
        &self,
        tools: &ToolRegistry,
    ) -> Result<Option<OpenAiProvider>, ProviderError> {
        let Some(ProviderKind::Openai) = self.provider else {
            return Ok(None);
        };
        let missing = |flag: &str| ProviderError::Config(format!("--provider openai needs {flag}"));
        let base_url = self
            .base_url
            .clone()
            .ok_or_else(|| missing("--base-url URL"))?;
        let model = self.model.clone().ok_or_else(|| missing("--model NAME"))?;
        let key = match &self.api_key_env {
            Some(var) => KeySource::Env(var.clone()),
            None => KeySource::EnvIfSet(DEFAULT_KEY_ENV.into()),
        };
        let config = OpenAiConfig {
            key,
            timeout: Duration::from_secs(self.timeout.max(1)),
            stream: !self.no_stream,
            ..OpenAiConfig::new(base_url, model)
        };
        Ok(Some(OpenAiProvider::new(config)?.with_tools(tools)))
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
}
