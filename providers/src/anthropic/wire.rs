//! The Anthropic Messages API wire format, as far as hookline uses it: our own serde types (as
//! for the OpenAI family), a page long. Requests are `POST {base}/v1/messages`; answers come
//! whole or as server-sent events.

use serde::{Deserialize, Serialize};

pub(crate) use crate::transport::ErrorBody;

/// One `POST {base}/v1/messages` body.
#[derive(Debug, Serialize)]
pub(crate) struct MessagesRequest<'a> {
    pub(crate) model: &'a str,
    pub(crate) max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) system: Option<String>,
    pub(crate) messages: Vec<Message>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub(crate) tools: &'a [ToolDef],
    pub(crate) stream: bool,
}

/// The fields of a [`MessagesRequest`] before `messages`, in its order: serialised, its bytes
/// but the closing brace are the body's first (issue 47: a body assembled around messages kept
/// encoded).
#[derive(Debug, Serialize)]
pub(crate) struct RequestHead<'a> {
    pub(crate) model: &'a str,
    pub(crate) max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) system: Option<&'a str>,
}

/// The fields of a [`MessagesRequest`] after `messages`, in its order: serialised, its bytes
/// but the opening brace are the body's last.
#[derive(Debug, Serialize)]
pub(crate) struct RequestTail<'a> {
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub(crate) tools: &'a [ToolDef],
    pub(crate) stream: bool,
}

/// One message: `user` or `assistant`, its content as blocks.
#[derive(Debug, PartialEq, Serialize)]
pub(crate) struct Message {
    pub(crate) role: Role,
    pub(crate) content: Vec<Block>,
}

/// Who speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Role {
    User,
    Assistant,
}

/// One content block sent.
#[derive(Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Block {
    Text {
        text: String,
    },
    Image {
        source: ImageData,
    },
    ToolUse {
        id: String,
        name: String,
        input: serde_json::Value,
    },
    ToolResult {
        tool_use_id: String,
        content: Vec<Block>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

/// An image's bytes, base64.
#[derive(Debug, PartialEq, Serialize)]
pub(crate) struct ImageData {
    #[serde(rename = "type")]
    pub(crate) kind: &'static str,
    pub(crate) media_type: String,
    pub(crate) data: String,
}

/// A tool the model may call.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub(crate) struct ToolDef {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) input_schema: serde_json::Value,
}

/// A whole (not streamed) answer.
#[derive(Debug, Deserialize)]
pub(crate) struct MessageOut {
    #[serde(default)]
    pub(crate) content: Vec<BlockOut>,
    #[serde(default)]
    pub(crate) stop_reason: Option<String>,
    #[serde(default)]
    pub(crate) usage: Option<UsageIn>,
}

/// One content block received (whole, or as a stream's `content_block_start`).
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum BlockOut {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        input: Option<serde_json::Value>,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
    },
    /// Blocks hookline does not use (redacted thinking, server tools' results).
    #[serde(other)]
    Other,
}

/// Token usage as the API reports it; each count may be missing.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
pub(crate) struct UsageIn {
    #[serde(default)]
    pub(crate) input_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) output_tokens: Option<u64>,
}

/// One streamed event's data, tagged by its `type`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Event {
    MessageStart {
        message: StartMessage,
    },
    ContentBlockStart {
        index: usize,
        content_block: BlockOut,
    },
    ContentBlockDelta {
        index: usize,
        delta: Delta,
    },
    ContentBlockStop {
        #[allow(dead_code)]
        index: usize,
    },
    MessageDelta {
        #[serde(default)]
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: Option<UsageIn>,
    },
    MessageStop,
    Ping,
    Error {
        error: ErrorBody,
    },
}

/// The message a stream starts with: its usage so far (the input tokens).
#[derive(Debug, Deserialize)]
pub(crate) struct StartMessage {
    #[serde(default)]
    pub(crate) usage: Option<UsageIn>,
}

/// What one `content_block_delta` adds.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: String },
    /// Signatures and deltas hookline does not use.
    #[serde(other)]
    Other,
}

/// A `message_delta`'s body: the stop reason.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct MessageDeltaBody {
    #[serde(default)]
    pub(crate) stop_reason: Option<String>,
}
