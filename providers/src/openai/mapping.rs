//! The exact mapping between hookline's model values and chat-completions messages (the table
//! in `docs/providers.md`): a prepared [`ModelRequest`] becomes messages, the tool registry
//! becomes tool definitions, and an answer (whole or assembled from a stream) becomes a
//! [`ModelResponse`]. Anything that does not fit is a [`ProviderError`], never a panic.

use std::sync::Arc;

use base64::Engine as _;
use hookline_messages::model::{
    FinishReason, ImageRef, Item, ItemBody, ModelRequest, ModelResponse, Purpose, Usage,
};

use super::wire::{Content, FunctionOut, ImageUrl, Message, Part, ToolCallOut, UsageIn};
use super::ImageSource;
use hookline_host::provider::ProviderError;

/// What the mapping needs to know about the model besides the request.
pub(crate) struct Model<'a> {
    /// Whether it takes images (SPEC R5.6); without, no image part is ever sent.
    pub(crate) takes_images: bool,
    /// Where image bytes come from.
    pub(crate) images: Option<&'a dyn ImageSource>,
}

/// The messages for `request`, in its order.
///
/// System, user and assistant items become messages of their role; tool calls join the assistant
/// message before them (or open one with no text); each tool result is a `tool` message with its
/// call id; reasoning is left out (the API takes none back). Images are sent as image parts of
/// user messages only when the model takes images; a tool result's images follow its run of
/// `tool` messages as one user message, since `tool` messages carry text only.
pub(crate) fn messages(
    request: &ModelRequest,
    model: &Model<'_>,
) -> Result<Vec<Message>, ProviderError> {
    messages_of(&request.items, model)
}

/// Whether `item` always starts a message of its own, so the messages of the items before it
/// are the same whatever follows ([`crate::prefix`]): a tool call joins the assistant message
/// before it, and reasoning sends nothing (a tool call after it still joins).
pub(crate) fn starts_message(item: &Item) -> bool {
    !matches!(
        item.body,
        ItemBody::ToolCall { .. } | ItemBody::Reasoning { .. }
    )
}

/// [`messages`] of a run of items (which starts where a message starts).
pub(crate) fn messages_of(
    items: &[Arc<Item>],
    model: &Model<'_>,
) -> Result<Vec<Message>, ProviderError> {
    let mut out = Vec::with_capacity(items.len());
    let mut tool_images: Vec<Part> = Vec::new();
    for item in items {
        if !matches!(item.body, ItemBody::ToolResult { .. }) {
            flush_tool_images(&mut out, &mut tool_images);
        }
        match &item.body {
            ItemBody::System { text, .. } => out.push(Message::System {
                content: text.clone(),
            }),
            ItemBody::User { text, images } => out.push(Message::User {
                content: user_content(text, images, model)?,
            }),
            ItemBody::Assistant { text, .. } => out.push(Message::Assistant {
                content: Some(text.clone()),
                tool_calls: Vec::new(),
            }),
            ItemBody::ToolCall {
                call_id,
                name,
                arguments,
            } => {
                let call = ToolCallOut {
                    id: call_id.clone(),
                    kind: "function",
                    function: FunctionOut {
                        name: name.clone(),
                        arguments: arguments.to_string(),
                    },
                };
                match out.last_mut() {
                    Some(Message::Assistant { tool_calls, .. }) => tool_calls.push(call),
                    _ => out.push(Message::Assistant {
                        content: None,
                        tool_calls: vec![call],
                    }),
                }
            }
            ItemBody::ToolResult {
                call_id,
                text,
                images,
                ..
            } => {
                out.push(Message::Tool {
                    tool_call_id: call_id.clone(),
                    content: text.clone(),
                });
                if model.takes_images {
                    for image in images {
                        tool_images.push(image_part(image, model)?);
                    }
                }
            }
            // Chat completions take no reasoning back; the model reasons afresh.
            ItemBody::Reasoning { .. } => {}
        }
    }
    flush_tool_images(&mut out, &mut tool_images);
    Ok(out)
}

fn flush_tool_images(out: &mut Vec<Message>, images: &mut Vec<Part>) {
    if images.is_empty() {
        return;
    }
    let mut parts = vec![Part::Text {
        text: "Images returned by the tool results above.".into(),
    }];
    parts.append(images);
    out.push(Message::User {
        content: Content::Parts(parts),
    });
}

fn user_content(
    text: &str,
    images: &[ImageRef],
    model: &Model<'_>,
) -> Result<Content, ProviderError> {
    if images.is_empty() || !model.takes_images {
        return Ok(Content::Text(text.to_owned()));
    }
    let mut parts = vec![Part::Text {
        text: text.to_owned(),
    }];
    for image in images {
        parts.push(image_part(image, model)?);
    }
    Ok(Content::Parts(parts))
}

/// An image as a `data:` URL part, from the bytes the image source holds.
fn image_part(image: &ImageRef, model: &Model<'_>) -> Result<Part, ProviderError> {
    let bytes = model
        .images
        .and_then(|source| source.bytes(image))
        .ok_or_else(|| {
            ProviderError::Unsendable(format!(
                "image {} ({}) has no bytes to send",
                image.number, image.media_type
            ))
        })?;
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    Ok(Part::ImageUrl {
        image_url: ImageUrl {
            url: format!("data:{};base64,{data}", image.media_type),
        },
    })
}

/// The most tool calls one answer may hold (a bound on what a stream can make the host keep).
pub(crate) const MAX_TOOL_CALLS: usize = 128;

/// An answer's parts, whether read whole or assembled from a stream.
#[derive(Debug, Default)]
pub(crate) struct Answer {
    pub(crate) reasoning: String,
    pub(crate) text: String,
    pub(crate) tool_calls: Vec<CallParts>,
    pub(crate) finish_reason: Option<String>,
    pub(crate) usage: Option<UsageIn>,
}

/// One tool call's parts.
#[derive(Debug, Default)]
pub(crate) struct CallParts {
    pub(crate) id: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) arguments: String,
}

impl crate::family::Answer for Answer {
    fn text(&self) -> &str {
        &self.text
    }

    /// The response this answer stands for. Its item ids (`resp-<k>`) name items of the response
    /// only, as the scripted provider's do.
    fn into_response(self, purpose: Purpose) -> Result<ModelResponse, ProviderError> {
        let mut items = Vec::new();
        let id = |items: &Vec<Item>| format!("resp-{}", items.len());
        if !self.reasoning.is_empty() {
            items.push(Item::new(
                id(&items),
                ItemBody::Reasoning {
                    text: self.reasoning,
                    provider_state: None,
                },
            ));
        }
        if !self.text.is_empty() {
            items.push(Item::new(
                id(&items),
                ItemBody::Assistant {
                    text: self.text,
                    images: Vec::new(),
                },
            ));
        }
        let has_calls = !self.tool_calls.is_empty();
        for (n, call) in self.tool_calls.into_iter().enumerate() {
            let body = tool_call(n, call)?;
            items.push(Item::new(id(&items), body));
        }
        Ok(ModelResponse {
            purpose,
            finish_reason: finish_reason(self.finish_reason.as_deref(), has_calls)?,
            items,
            usage: self.usage.map_or_else(Usage::default, |usage| Usage {
                input_tokens: usage.prompt_tokens,
                output_tokens: usage.completion_tokens,
            }),
        })
    }
}

fn tool_call(n: usize, call: CallParts) -> Result<ItemBody, ProviderError> {
    let unrepresentable =
        |what: &str| ProviderError::Unrepresentable(format!("tool call {} has {what}", n + 1));
    let call_id = call
        .id
        .filter(|id| !id.is_empty())
        .ok_or_else(|| unrepresentable("no id"))?;
    let name = call
        .name
        .filter(|name| !name.is_empty())
        .ok_or_else(|| unrepresentable("no function name"))?;
    // A call without arguments comes as "" from some servers: no arguments.
    let arguments = if call.arguments.trim().is_empty() {
        serde_json::Value::Object(serde_json::Map::new())
    } else {
        serde_json::from_str(&call.arguments)
            .map_err(|e| unrepresentable(&format!("arguments that are not JSON ({e})")))?
    };
    Ok(ItemBody::ToolCall {
        call_id,
        name,
        arguments,
    })
}

/// The API's finish reason; without one, tool calls mean `tool-calls` and text means `stop`.
fn finish_reason(reason: Option<&str>, has_calls: bool) -> Result<FinishReason, ProviderError> {
    Ok(match reason {
        Some("stop") => FinishReason::Stop,
        Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
        Some("length") => FinishReason::Length,
        Some("content_filter") => FinishReason::ContentFilter,
        None if has_calls => FinishReason::ToolCalls,
        None => FinishReason::Stop,
        Some(other) => {
            return Err(ProviderError::Unrepresentable(format!(
                "the finish reason {other:?} is not one the host knows"
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::family::Answer as _;
    use hookline_messages::model::MediaType;
    use serde_json::json;

    fn item(id: &str, body: ItemBody) -> Item {
        Item::new(id, body)
    }

    fn request(items: Vec<Item>, accepts_images: bool) -> ModelRequest {
        ModelRequest::new(Purpose::Work, accepts_images, items)
    }

    struct Bytes;
    impl ImageSource for Bytes {
        fn bytes(&self, image: &ImageRef) -> Option<Vec<u8>> {
            (image.number == 1).then(|| b"png".to_vec())
        }
    }

    #[test]
    fn tool_calls_join_the_assistant_message_and_results_keep_their_ids() {
        let request = request(
            vec![
                item(
                    "1",
                    ItemBody::Assistant {
                        text: "let me look".into(),
                        images: vec![],
                    },
                ),
                item(
                    "2",
                    ItemBody::ToolCall {
                        call_id: "c1".into(),
                        name: "read_file".into(),
                        arguments: json!({"path": "a"}),
                    },
                ),
                item(
                    "3",
                    ItemBody::ToolCall {
                        call_id: "c2".into(),
                        name: "list_dir".into(),
                        arguments: json!({}),
                    },
                ),
                item(
                    "4",
                    ItemBody::Reasoning {
                        text: "hmm".into(),
                        provider_state: None,
                    },
                ),
                item(
                    "5",
                    ItemBody::ToolCall {
                        call_id: "c3".into(),
                        name: "list_dir".into(),
                        arguments: json!({}),
                    },
                ),
            ],
            false,
        );
        let model = Model {
            takes_images: false,
            images: None,
        };
        let json = serde_json::to_value(messages(&request, &model).unwrap()).unwrap();
        assert_eq!(
            json,
            json!([
                {"role": "assistant", "content": "let me look", "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a\"}"}},
                    {"id": "c2", "type": "function", "function": {"name": "list_dir", "arguments": "{}"}},
                    {"id": "c3", "type": "function", "function": {"name": "list_dir", "arguments": "{}"}}
                ]}
            ])
        );
    }

    #[test]
    fn an_image_without_bytes_is_an_error_not_a_panic() {
        let image = ImageRef {
            number: 2,
            media_type: MediaType::Png,
        };
        let request = request(
            vec![item(
                "1",
                ItemBody::User {
                    text: "see".into(),
                    images: vec![image],
                },
            )],
            true,
        );
        let model = Model {
            takes_images: true,
            images: Some(&Bytes),
        };
        let error = messages(&request, &model).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the request cannot be sent to this provider: image 2 (image/png) has no bytes to send"
        );
        // A text-only model never sends the marker, bytes or not.
        let model = Model {
            takes_images: false,
            images: None,
        };
        let json = serde_json::to_value(messages(&request, &model).unwrap()).unwrap();
        assert_eq!(json, json!([{"role": "user", "content": "see"}]));
    }

    #[test]
    fn tool_result_images_follow_the_tool_messages_as_one_user_message() {
        let image = ImageRef {
            number: 1,
            media_type: MediaType::Png,
        };
        let request = request(
            vec![
                item(
                    "1",
                    ItemBody::ToolResult {
                        call_id: "c1".into(),
                        name: "t".into(),
                        text: "shot".into(),
                        images: vec![image],
                        success: true,
                    },
                ),
                item(
                    "2",
                    ItemBody::ToolResult {
                        call_id: "c2".into(),
                        name: "t".into(),
                        text: "no".into(),
                        images: vec![],
                        success: false,
                    },
                ),
                item(
                    "3",
                    ItemBody::User {
                        text: "next".into(),
                        images: vec![],
                    },
                ),
            ],
            true,
        );
        let model = Model {
            takes_images: true,
            images: Some(&Bytes),
        };
        let json = serde_json::to_value(messages(&request, &model).unwrap()).unwrap();
        assert_eq!(
            json,
            json!([
                {"role": "tool", "tool_call_id": "c1", "content": "shot"},
                {"role": "tool", "tool_call_id": "c2", "content": "no"},
                {"role": "user", "content": [
                    {"type": "text", "text": "Images returned by the tool results above."},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,cG5n"}}
                ]},
                {"role": "user", "content": "next"}
            ])
        );
    }

    #[test]
    fn an_answer_maps_to_items_in_order() {
        let answer = Answer {
            reasoning: "think".into(),
            text: "done".into(),
            tool_calls: vec![CallParts {
                id: Some("c1".into()),
                name: Some("list_dir".into()),
                arguments: String::new(),
            }],
            finish_reason: Some("tool_calls".into()),
            usage: Some(UsageIn {
                prompt_tokens: Some(7),
                completion_tokens: Some(3),
            }),
        };
        let response = answer.into_response(Purpose::Work).unwrap();
        assert_eq!(response.finish_reason, FinishReason::ToolCalls);
        assert_eq!(response.usage, Usage::reported(7, 3));
        let kinds: Vec<_> = response
            .items
            .iter()
            .map(|i| (i.id.0.clone(), i.kind()))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (
                    "resp-0".into(),
                    hookline_messages::model::ItemKind::Reasoning
                ),
                (
                    "resp-1".into(),
                    hookline_messages::model::ItemKind::Assistant
                ),
                (
                    "resp-2".into(),
                    hookline_messages::model::ItemKind::ToolCall
                ),
            ]
        );
        assert!(
            matches!(&response.items[2].body, ItemBody::ToolCall { arguments, .. } if *arguments == json!({}))
        );
    }

    #[test]
    fn what_the_host_cannot_represent_is_a_clear_error() {
        let bad_args = Answer {
            tool_calls: vec![CallParts {
                id: Some("c1".into()),
                name: Some("t".into()),
                arguments: "{\"a\":".into(),
            }],
            ..Answer::default()
        };
        let error = bad_args
            .into_response(Purpose::Work)
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("the provider's reply cannot be represented: tool call 1 has arguments that are not JSON"), "{error}");
        let no_id = Answer {
            tool_calls: vec![CallParts {
                id: None,
                name: Some("t".into()),
                arguments: "{}".into(),
            }],
            ..Answer::default()
        };
        assert_eq!(
            no_id.into_response(Purpose::Work).unwrap_err().to_string(),
            "the provider's reply cannot be represented: tool call 1 has no id"
        );
        let odd = Answer {
            finish_reason: Some("eos".into()),
            ..Answer::default()
        };
        assert_eq!(
            odd.into_response(Purpose::Work).unwrap_err().to_string(),
            "the provider's reply cannot be represented: the finish reason \"eos\" is not one the host knows"
        );
    }
}
