//! hookline's HTTP model providers: implementations of
//! [`Provider`](hookline_host::provider::Provider) that talk to a model server over the network
//! (reqwest over rustls, no OpenSSL). The runtime (`hookline-host`) keeps the trait and the
//! offline providers; an embedder that brings its own model never compiles an HTTP client.
//!
//! - [`openai`]: [`OpenAiProvider`], any server that speaks the OpenAI chat-completions API
//!   (hosted services, vLLM, llama.cpp's server, Ollama, LM Studio, ...), streaming or not, with
//!   retries (`docs/providers.md`).
//!
//! In the facade crate this is `hookline::providers`, behind the `providers` feature.

pub mod openai;

pub use openai::{ImageSource, KeySource, OpenAiConfig, OpenAiProvider, RetryPolicy};
