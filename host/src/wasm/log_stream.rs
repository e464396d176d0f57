//! A component's stdout and stderr under the `stdio` capability: each line it writes becomes
//! one line of the plugin's log, as an external plugin's stderr line does (docs/wasm.md).

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::Bytes;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};

use super::guest::Limits;

/// The most a guest may leave unterminated before it is logged as a line anyway.
const PENDING_CAP: usize = 16 * 1024;

/// Lines of one instance's output, logged as they end.
#[derive(Clone)]
pub(crate) struct LogStream {
    limits: Arc<Limits>,
    pending: Arc<Mutex<Vec<u8>>>,
}

impl LogStream {
    pub(crate) fn new(limits: &Arc<Limits>) -> Self {
        Self {
            limits: limits.clone(),
            pending: Arc::default(),
        }
    }

    /// Takes `bytes` in: every complete line is logged, the rest kept for the next write.
    fn take(&self, bytes: &[u8]) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        pending.extend_from_slice(bytes);
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            self.limits
                .log_line(line.strip_suffix(b"\n").unwrap_or(&line));
        }
        if pending.len() > PENDING_CAP {
            self.limits.log_line(&pending);
            pending.clear();
        }
    }
}

impl IsTerminal for LogStream {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LogStream {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl OutputStream for LogStream {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.take(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(PENDING_CAP)
    }
}

#[async_trait::async_trait]
impl Pollable for LogStream {
    async fn ready(&mut self) {}
}

impl tokio::io::AsyncWrite for LogStream {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.take(bytes);
        Poll::Ready(Ok(bytes.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
