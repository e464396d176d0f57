//! What a call does the same way for both wire families (OpenAI-compatible chat completions and
//! Anthropic messages): send the body, then read the answer whole or assemble it from the stream
//! with the transport's bounds, offering text as it comes. Each family says only how its body is
//! built, how a whole answer is parsed and how stream pieces fold into an answer.

use std::future::Future;

use futures::StreamExt as _;
use hookline_host::provider::{OnText, ProviderError};
use hookline_messages::model::{ModelRequest, ModelResponse, Purpose};
use reqwest::Response;

use crate::transport::Transport;

/// An answer's parts, read whole or assembled.
pub(crate) trait Answer: Send {
    /// The answer's text so far.
    fn text(&self) -> &str;
    /// The response this answer stands for.
    fn into_response(self, purpose: Purpose) -> Result<ModelResponse, ProviderError>;
}

/// Folds a stream's bytes into an answer, offering each text delta.
pub(crate) trait Assemble: Default + Send {
    /// What it assembles.
    type Answer: Answer;
    /// Takes the next bytes of the stream.
    fn feed(&mut self, bytes: &[u8], on_text: OnText<'_>) -> Result<(), ProviderError>;
    /// Whether the stream said it is complete.
    fn is_done(&self) -> bool;
    /// The answer, once the stream ended.
    fn finish(self, on_text: OnText<'_>) -> Result<Self::Answer, ProviderError>;
}

/// One wire family of model providers.
pub(crate) trait Family: Sync {
    /// Its answer's parts.
    type Answer: Answer;
    /// Its stream's assembler.
    type Assembler: Assemble<Answer = Self::Answer>;
    /// The HTTP transport with its bounds.
    fn transport(&self) -> &Transport;
    /// Whether calls stream.
    fn streams(&self) -> bool;
    /// The body for `request`, serialised.
    fn body(&self, request: &ModelRequest, stream: bool) -> Result<Vec<u8>, ProviderError>;
    /// A whole answer, parsed.
    fn whole(
        &self,
        response: Response,
    ) -> impl Future<Output = Result<Self::Answer, ProviderError>> + Send;
}

/// One call: streamed when the family's configuration says so (text offered to `on_text`, if
/// any), whole otherwise.
pub(crate) async fn call<F: Family>(
    family: &F,
    request: &ModelRequest,
    on_text: Option<OnText<'_>>,
) -> Result<ModelResponse, ProviderError> {
    let stream = family.streams();
    let response = family
        .transport()
        .send(family.body(request, stream)?)
        .await?;
    let answer = if stream {
        streamed(family, response, on_text.unwrap_or(&|_| {})).await?
    } else {
        let answer = family.whole(response).await?;
        if let Some(on_text) = on_text.filter(|_| !answer.text().is_empty()) {
            on_text(answer.text());
        }
        answer
    };
    answer.into_response(request.purpose)
}

/// A streamed answer, each text delta offered as it arrives. A server that ignores the stream
/// flag and answers whole is read whole, its text offered once.
async fn streamed<F: Family>(
    family: &F,
    response: Response,
    on_text: OnText<'_>,
) -> Result<F::Answer, ProviderError> {
    if Transport::is_json(&response) {
        let answer = family.whole(response).await?;
        if !answer.text().is_empty() {
            on_text(answer.text());
        }
        return Ok(answer);
    }
    let transport = family.transport();
    let mut assembler = F::Assembler::default();
    let mut pieces = response.bytes_stream();
    loop {
        let piece = tokio::time::timeout(transport.timeout, pieces.next())
            .await
            .map_err(|_| transport.timed_out())?;
        match piece {
            None => return assembler.finish(on_text),
            Some(Ok(bytes)) => assembler.feed(&bytes, on_text)?,
            // A connection lost after the answer completed costs nothing.
            Some(Err(_)) if assembler.is_done() => return assembler.finish(on_text),
            Some(Err(e)) => return Err(transport.cut(&e)),
        }
    }
}
