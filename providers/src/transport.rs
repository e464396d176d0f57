//! What every HTTP provider family shares (issue 12, issue 21): the API key read from the
//! environment (never from a file or a flag), the pooled client, one `POST` with its retries
//! ([`RetryPolicy`]), bounded reads of a body or a stream, and the removal of the key from every
//! text a server sends back; and the W3C `traceparent` of the model call's span, when the binary
//! exports traces ([`hookline_host::trace`]). A family adds its own headers, body and answer
//! parsing.
//!
//! Dropping the future of [`Transport::send`] or of a body read drops the request: `/stop`
//! closes the connection and costs the server nothing more.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt as _;
use reqwest::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use reqwest::{Response, Url};
use serde::Deserialize;
use thread_local::ThreadLocal;

use crate::retry::{self, Next, RetryPolicy};
use hookline_host::provider::ProviderError;

/// The longest whole answer (or error body) read; past it the reply is refused.
pub(crate) const MAX_BODY: usize = 16 * 1024 * 1024;
/// How much of a server's error text an error keeps.
const MAX_MESSAGE: usize = 300;
/// The W3C trace context header.
const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");

/// Where the API key comes from. The key itself never appears in a configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeySource {
    /// No key (most local servers).
    None,
    /// The named environment variable, which must be set.
    Env(String),
    /// The named environment variable if it is set, else no key.
    EnvIfSet(String),
}

impl KeySource {
    /// The key, read now; `None` when there is none (or it is empty).
    ///
    /// # Errors
    /// [`ProviderError::Config`] naming the variable (never a value) when it must be set and is
    /// not.
    pub fn read(&self) -> Result<Option<String>, ProviderError> {
        let key = match self {
            Self::None => None,
            Self::Env(var) => Some(std::env::var(var).map_err(|_| {
                ProviderError::Config(format!(
                    "the environment variable {var} (the API key) is not set"
                ))
            })?),
            Self::EnvIfSet(var) => std::env::var(var).ok(),
        };
        Ok(key.filter(|key| !key.is_empty()))
    }
}

/// A header value marked sensitive (never printed by the HTTP client's debug output).
pub(crate) fn secret_header(value: &str) -> Result<HeaderValue, ProviderError> {
    let mut value = HeaderValue::from_str(value).map_err(|_| {
        ProviderError::Config("the API key holds characters a header cannot".into())
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// `{base}/{segments...}`, for an `http` or `https` base without credentials.
pub(crate) fn endpoint(base: &str, segments: &[&str]) -> Result<Url, ProviderError> {
    let bad = |why: String| ProviderError::Config(format!("the base URL {base:?} {why}"));
    let parsed =
        Url::parse(base.trim_end_matches('/')).map_err(|e| bad(format!("is not a URL ({e})")))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad("is not http or https".into()));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        // A key in the URL would be printed wherever the URL is: not even this error repeats it.
        return Err(ProviderError::Config(
            "the base URL holds credentials; give the key by environment variable".into(),
        ));
    }
    let mut url = parsed;
    url.path_segments_mut()
        .map_err(|()| bad("cannot take a path".into()))?
        .pop_if_empty()
        .extend(segments);
    Ok(url)
}

/// One endpoint of one provider: where to post, the headers every request carries (the key's
/// marked sensitive), how long to wait, how to retry.
#[derive(Debug)]
pub(crate) struct Transport {
    pub(crate) url: Url,
    /// One client, so one connection pool, per calling thread (issue 47): hyper drives a pooled
    /// connection on the runtime that opened it, so a call on one arbiter over a connection
    /// another arbiter opened crossed threads twice (a wake-up each way). Each arbiter's
    /// sessions now reuse connections their own thread drives.
    http: ThreadLocal<reqwest::Client>,
    headers: Vec<(HeaderName, HeaderValue)>,
    /// The key's text, only to remove it from what servers send back.
    key: Option<String>,
    pub(crate) timeout: Duration,
    retry: RetryPolicy,
}

/// A client that waits at most `connect_timeout` for a connection (the transport's timeout).
fn client(connect_timeout: Duration) -> Result<reqwest::Client, ProviderError> {
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .build()
        .map_err(|e| ProviderError::Config(format!("the HTTP client cannot start ({e})")))
}

impl Transport {
    /// A transport posting to `url` with `headers`; `key` is what [`Transport::redact`] removes.
    pub(crate) fn new(
        url: Url,
        headers: Vec<(HeaderName, HeaderValue)>,
        key: Option<String>,
        timeout: Duration,
        retry: RetryPolicy,
    ) -> Result<Self, ProviderError> {
        // Built once here, so a client that cannot start is a configuration error at once
        // rather than at the first call.
        let http = ThreadLocal::new();
        http.get_or_try(|| client(timeout))?;
        Ok(Self {
            url,
            http,
            headers,
            key,
            timeout,
            retry,
        })
    }

    /// Sends `body`, retrying as the policy says, and returns the first successful answer.
    pub(crate) async fn send(&self, body: Vec<u8>) -> Result<Response, ProviderError> {
        // Shared, not copied, by each attempt: the body holds the whole history.
        let body = Bytes::from(body);
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
            match self.retry.next(attempt, headers.as_ref(), jitter) {
                Next::Wait(wait) => {
                    tracing::debug!(attempt, ?wait, "retrying the model call");
                    tokio::time::sleep(wait).await;
                }
                Next::GiveUp => return Err(error),
                Next::TooLong(wait) => {
                    return Err(ProviderError::Unreachable(format!(
                    "the server asked to retry after {} s, longer than the {} s limit ({error})",
                    wait.as_secs(),
                    self.retry.max_retry_after.as_secs(),
                )))
                }
            }
        }
    }

    /// One attempt: the answer's status and headers, within the timeout. Transport failures
    /// (no connection, no answer in time) may be retried.
    async fn attempt(&self, body: Bytes) -> Result<Response, ProviderError> {
        let http = self.http.get_or_try(|| client(self.timeout))?;
        let mut request = http
            .post(self.url.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(body);
        for (name, value) in &self.headers {
            request = request.header(name, value.clone());
        }
        // Read under the model call's span: a provider or a proxy that traces joins the turn's
        // trace (docs/observability.md). `None` unless the binary exports traces.
        if let Some(traceparent) = hookline_host::trace::traceparent() {
            request = request.header(TRACEPARENT, traceparent);
        }
        match tokio::time::timeout(self.timeout, request.send()).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(error)) => Err(ProviderError::Unreachable(
                self.redact(&error.without_url_ref()),
            )),
            Err(_) => Err(self.timed_out()),
        }
    }

    pub(crate) fn timed_out(&self) -> ProviderError {
        ProviderError::Unreachable(format!("no answer within {} s", self.timeout.as_secs_f64()))
    }

    /// The server's explanation of an error status: its `error.message` (both families nest it
    /// so), else the body's start, shortened and without the key.
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
    pub(crate) async fn read_body(&self, response: Response) -> Result<Vec<u8>, ProviderError> {
        let mut body = Vec::new();
        let mut pieces = response.bytes_stream();
        loop {
            let piece = tokio::time::timeout(self.timeout, pieces.next())
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

    /// A body that broke off.
    pub(crate) fn cut(&self, error: &reqwest::Error) -> ProviderError {
        ProviderError::Malformed(format!(
            "the reply was cut off ({})",
            self.redact(&error.without_url_ref())
        ))
    }

    /// Removes the key from a text a server (or the HTTP client) produced.
    pub(crate) fn redact(&self, text: &str) -> String {
        match &self.key {
            Some(key) if !key.is_empty() => text.replace(key.as_str(), "[redacted]"),
            _ => text.to_owned(),
        }
    }

    /// Whether the answer is one whole JSON document (a server that ignored `stream: true`).
    pub(crate) fn is_json(response: &Response) -> bool {
        response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"))
    }
}

/// `{"error": {...}}`, in an error body or a stream, of either family.
#[derive(Debug, Deserialize)]
pub(crate) struct ErrorEnvelope {
    pub(crate) error: ErrorBody,
}

/// An API error: its message is what the operator reads.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum ErrorBody {
    Object {
        #[serde(default)]
        message: Option<String>,
    },
    Text(String),
}

impl ErrorBody {
    /// The error's message, or a stand-in when it has none.
    pub(crate) fn message(&self) -> &str {
        match self {
            Self::Object {
                message: Some(message),
            }
            | Self::Text(message) => message,
            Self::Object { message: None } => "no message",
        }
    }
}

/// At most [`MAX_MESSAGE`] characters, cut at a character boundary.
pub(crate) fn shorten(text: &str) -> String {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_endpoint_follows_the_base_url() {
        let url = |base: &str| endpoint(base, &["chat", "completions"]).map(|u| u.to_string());
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
        assert_eq!(
            endpoint("https://api.anthropic.com", &["v1", "messages"])
                .unwrap()
                .to_string(),
            "https://api.anthropic.com/v1/messages"
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

    #[test]
    fn error_bodies_of_both_families_give_their_message() {
        let openai: ErrorEnvelope =
            serde_json::from_str(r#"{"error":{"message":"bad model","type":"x"}}"#).unwrap();
        assert_eq!(openai.error.message(), "bad model");
        let anthropic: ErrorEnvelope = serde_json::from_str(
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        )
        .unwrap();
        assert_eq!(anthropic.error.message(), "Overloaded");
    }
}
