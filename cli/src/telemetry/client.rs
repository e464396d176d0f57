//! The HTTP client the OTLP exporter sends with: the workspace's `reqwest` (rustls), driven by a
//! small runtime of its own. The SDK's batch processor exports from its own thread with a plain
//! executor, where no tokio reactor runs; this client brings one, so exports never touch the
//! server's runtime.

use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};

/// `reqwest` behind [`HttpClient`], with its own single-threaded runtime.
#[derive(Debug)]
pub(super) struct OtlpHttp {
    client: reqwest::Client,
    runtime: tokio::runtime::Runtime,
}

impl OtlpHttp {
    /// A client whose every export is bounded by `timeout` (connection, request and body).
    pub(super) fn new(timeout: Duration) -> Result<Self, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the trace exporter's runtime: {e}"))?;
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|e| format!("cannot build the trace exporter's HTTP client: {e}"))?;
        Ok(Self { client, runtime })
    }
}

#[async_trait]
impl HttpClient for OtlpHttp {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let request = reqwest::Request::try_from(request)?;
        let client = self.client.clone();
        // Called from the batch processor's thread (never from inside a runtime): block here.
        let (status, headers, body) = self.runtime.block_on(async move {
            let response = client.execute(request).await?;
            let status = response.status();
            let headers = response.headers().clone();
            let body = response.bytes().await?;
            Ok::<_, reqwest::Error>((status, headers, body))
        })?;
        let mut response = Response::new(body);
        *response.status_mut() = status;
        *response.headers_mut() = headers;
        Ok(response)
    }
}
