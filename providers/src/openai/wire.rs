//! The chat-completions wire format, as far as hookline uses it: our own serde types rather than
//! an API-types crate (see `docs/providers.md`: the servers this reaches differ in small ways, and
//! these types accept every variation the mapping handles while staying a page long).

use serde::{Deserialize, Serialize};

pub(crate) use crate::transport::ErrorBody;

/// One `POST {base}/chat/completions` body.
#[derive(Debug, Serialize)]
pub(crate) struct ChatRequest<'a> {
    pub(crate) model: &'a str,
    pub(crate) messages: Vec<Message>,
    #[serde(flatten)]
    pub(crate) options: ChatOptions<'a>,
}

/// What a body holds before its messages (the provider writes the messages it kept encoded
/// after it: [`crate::prefix`]).
#[derive(Debug, Serialize)]
pub(crate) struct ChatHead<'a> {
    pub(crate) model: &'a str,
}

/// What a body holds after its messages (the provider writes the messages it kept encoded
/// between the model and these: [`crate::prefix`]).
#[derive(Debug, Serialize)]
pub(crate) struct ChatOptions<'a> {
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub(crate) tools: &'a [ToolDef],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) max_tokens: Option<u32>,
    pub(crate) stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) stream_options: Option<StreamOptions>,
}

/// Asks for a last chunk with the usage.
#[derive(Debug, Serialize)]
pub(crate) struct StreamOptions {
    pub(crate) include_usage: bool,
}

/// One message of the conversation, tagged by role.
#[derive(Debug, PartialEq, Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub(crate) enum Message {
    System {
        content: String,
    },
    User {
        content: Content,
    },
    Assistant {
        content: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCallOut>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

/// A user message's content: plain text, or parts when it carries images.
#[derive(Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub(crate) enum Content {
    Text(String),
    Parts(Vec<Part>),
}

/// One content part.
#[derive(Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Part {
    Text { text: String },
    ImageUrl { image_url: ImageUrl },
}

/// An image, as a `data:` URL.
#[derive(Debug, PartialEq, Serialize)]
pub(crate) struct ImageUrl {
    pub(crate) url: String,
}

/// A tool call the assistant made, as sent back in the history.
#[derive(Debug, PartialEq, Serialize)]
pub(crate) struct ToolCallOut {
    pub(crate) id: String,
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) function: FunctionOut,
}

/// A called function: its name and its arguments as a JSON string.
#[derive(Debug, PartialEq, Serialize)]
pub(crate) struct FunctionOut {
    pub(crate) name: String,
    pub(crate) arguments: String,
}

/// A tool the model may call.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct ToolDef {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) function: FunctionDef,
}

/// A tool's name, description and JSON Schema of its arguments.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct FunctionDef {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) parameters: serde_json::Value,
}

/// A whole (not streamed) answer.
#[derive(Debug, Deserialize)]
pub(crate) struct ChatResponse {
    #[serde(default)]
    pub(crate) choices: Vec<Choice>,
    #[serde(default)]
    pub(crate) usage: Option<UsageIn>,
}

/// One choice of a whole answer.
#[derive(Debug, Deserialize)]
pub(crate) struct Choice {
    pub(crate) message: MessageIn,
    #[serde(default)]
    pub(crate) finish_reason: Option<String>,
}

/// The assistant message of a whole answer.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct MessageIn {
    #[serde(default)]
    pub(crate) content: Option<String>,
    /// Reasoning text, where a server reports it (vLLM, DeepSeek, llama.cpp).
    #[serde(default, alias = "reasoning")]
    pub(crate) reasoning_content: Option<String>,
    #[serde(default)]
    pub(crate) tool_calls: Option<Vec<ToolCallIn>>,
}

/// A tool call in a whole answer.
#[derive(Debug, Deserialize)]
pub(crate) struct ToolCallIn {
    #[serde(default)]
    pub(crate) id: Option<String>,
    #[serde(default)]
    pub(crate) function: Option<FunctionIn>,
}

/// A called function in an answer (whole, or a streamed fragment of it).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct FunctionIn {
    #[serde(default)]
    pub(crate) name: Option<String>,
    #[serde(default)]
    pub(crate) arguments: Option<String>,
}

/// Token usage as the API reports it.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
pub(crate) struct UsageIn {
    #[serde(default)]
    pub(crate) prompt_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) completion_tokens: Option<u64>,
}

/// One streamed chunk (`data: {...}`).
#[derive(Debug, Deserialize)]
pub(crate) struct Chunk {
    #[serde(default)]
    pub(crate) choices: Vec<ChunkChoice>,
    #[serde(default)]
    pub(crate) usage: Option<UsageIn>,
    /// Some servers report a failure inside the stream.
    #[serde(default)]
    pub(crate) error: Option<ErrorBody>,
}

/// One choice of a streamed chunk.
#[derive(Debug, Deserialize)]
pub(crate) struct ChunkChoice {
    #[serde(default)]
    pub(crate) index: u32,
    #[serde(default)]
    pub(crate) delta: Option<Delta>,
    #[serde(default)]
    pub(crate) finish_reason: Option<String>,
}

/// What one chunk adds.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Delta {
    #[serde(default)]
    pub(crate) content: Option<String>,
    #[serde(default, alias = "reasoning")]
    pub(crate) reasoning_content: Option<String>,
    #[serde(default)]
    pub(crate) tool_calls: Option<Vec<ToolCallDelta>>,
}

/// A fragment of one tool call, by index.
#[derive(Debug, Deserialize)]
pub(crate) struct ToolCallDelta {
    #[serde(default)]
    pub(crate) index: usize,
    #[serde(default)]
    pub(crate) id: Option<String>,
    #[serde(default)]
    pub(crate) function: Option<FunctionIn>,
}
