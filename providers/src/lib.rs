//! hookline's HTTP model providers: implementations of
//! [`Provider`](hookline_host::provider::Provider) that talk to a model server over the network
//! (reqwest over rustls, no OpenSSL). The runtime (`hookline-host`) keeps the trait and the
//! offline providers; an embedder that brings its own model never compiles an HTTP client.
//!
//! - [`openai`]: [`OpenAiProvider`], any server that speaks the OpenAI chat-completions API
//!   (hosted services, vLLM, llama.cpp's server, Ollama, LM Studio, ...), streaming or not, with
//!   retries (`docs/providers.md`).
//! - [`anthropic`]: [`AnthropicProvider`], Anthropic's Messages API, built the same way.
//! - [`routed`]: [`Routed`], several named models behind one provider; each call goes to the
//!   model its session asks for (issue 21).
//!
//! Both families share the key handling, the retries and the bounded reads (`transport`).
//!
//! In the facade crate this is `hookline::providers`, behind the `providers` feature.

pub mod anthropic;
mod family;
pub mod openai;
mod prefix;
mod retry;
pub mod routed;
mod sse;
mod transport;

pub use anthropic::{AnthropicConfig, AnthropicProvider};
pub use openai::{ImageSource, OpenAiConfig, OpenAiProvider};
pub use retry::RetryPolicy;
pub use routed::{Routed, RoutedModel};
pub use transport::KeySource;
