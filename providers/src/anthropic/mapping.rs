//! The exact mapping between hookline's model values and the Messages API (the table in
//! `docs/providers.md`): a prepared [`ModelRequest`] becomes the `system` text and the messages,
//! and an answer (whole or assembled from a stream) becomes a [`ModelResponse`]. Pure
//! functions; anything that does not fit is a [`ProviderError`], never a panic.

use std::sync::Arc;

use base64::Engine as _;
use hookline_messages::model::{
    FinishReason, ImageRef, Item, ItemBody, ModelRequest, ModelResponse, Purpose, Usage,
};

use super::wire::{Block, ImageData, Message, Role, UsageIn};
use crate::openai::ImageSource;
use hookline_host::provider::ProviderError;

/// What the mapping needs to know about the model besides the request.
pub(crate) struct Model<'a> {
    /// Whether it takes images (SPEC R5.6); without, no image block is ever sent.
    pub(crate) takes_images: bool,
    /// Where image bytes come from.
    pub(crate) images: Option<&'a dyn ImageSource>,
}

/// A request's `system` text and messages.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Mapped {
    pub(crate) system: Option<String>,
    pub(crate) messages: Vec<Message>,
}

/// The `system` text and the messages for `request`, in its order.
///
/// System items, wherever they stand, join the `system` text in order (the API has no system
/// messages), separated by a blank line. User items are user text (and image blocks when the
/// model takes images); assistant items are assistant text; a tool call is a `tool_use` block of
/// the assistant message; a tool result is a `tool_result` block (its text, its images when the
/// model takes them, `is_error` when it failed) of the user message after it. Neighbouring items
/// of one role share one message, as the API asks. Reasoning is left out (the API takes back
/// only its own signed thinking blocks); empty texts are left out (the API refuses them).
pub(crate) fn request(request: &ModelRequest, model: &Model<'_>) -> Result<Mapped, ProviderError> {
    Ok(Mapped {
        system: system_of(&request.items),
        messages: messages_of(&request.items, model)?,
    })
}

/// The `system` text of `items`: every system item's text, in order, a blank line between.
pub(crate) fn system_of(items: &[Arc<Item>]) -> Option<String> {
    let system: Vec<&str> = items
        .iter()
        .filter_map(|item| match &item.body {
            ItemBody::System { text, .. } if !text.is_empty() => Some(text.as_str()),
            _ => None,
        })
        .collect();
    (!system.is_empty()).then(|| system.join("\n\n"))
}

/// How far [`starts_message`] looks back over items that send nothing before it gives up.
const LOOKBACK: usize = 16;

/// The role of the message `item` joins or starts, or `None` when it sends nothing (system text,
/// reasoning, an empty text): exactly when [`messages_of`] gives it a block.
fn role_of(item: &Item, model: &Model<'_>) -> Option<Role> {
    let images = |images: &[ImageRef]| model.takes_images && !images.is_empty();
    match &item.body {
        ItemBody::System { .. } | ItemBody::Reasoning { .. } => None,
        ItemBody::User { text, images: i } => (!text.is_empty() || images(i)).then_some(Role::User),
        ItemBody::Assistant { text, .. } => (!text.is_empty()).then_some(Role::Assistant),
        ItemBody::ToolCall { .. } => Some(Role::Assistant),
        ItemBody::ToolResult { .. } => Some(Role::User),
    }
}

/// Whether `items[at]` starts a message of its own, so the messages of `items[..at]` are the
/// same whatever follows ([`crate::prefix`]). Neighbouring items of one role share a message, so
/// no kind of item always starts one: `items[at]` does when it sends something and the last item
/// before it that sends something has the other role (or there is none). Items that send nothing
/// (reasoning, system text, empty texts) are looked through, at most [`LOOKBACK`] of them; past
/// that the answer is `false`, which only keeps less.
pub(crate) fn starts_message(items: &[Arc<Item>], at: usize, model: &Model<'_>) -> bool {
    let Some(role) = items.get(at).and_then(|item| role_of(item, model)) else {
        return false;
    };
    for item in items[..at].iter().rev().take(LOOKBACK) {
        if let Some(before) = role_of(item, model) {
            return before != role;
        }
    }
    // Nothing before it sends anything: it is the first message, unless the look-back stopped
    // short of the start.
    at <= LOOKBACK
}

/// The messages of `items` (system items send none: their text is [`system_of`]'s).
pub(crate) fn messages_of(
    items: &[Arc<Item>],
    model: &Model<'_>,
) -> Result<Vec<Message>, ProviderError> {
    let mut messages: Vec<Message> = Vec::with_capacity(items.len());
    for item in items {
        let (role, blocks) = match &item.body {
            ItemBody::System { .. } => continue,
            ItemBody::User { text, images } => {
                let mut blocks = text_block(text);
                blocks.extend(image_blocks(images, model)?);
                (Role::User, blocks)
            }
            ItemBody::Assistant { text, .. } => (Role::Assistant, text_block(text)),
            ItemBody::ToolCall {
                call_id,
                name,
                arguments,
            } => (
                Role::Assistant,
                vec![Block::ToolUse {
                    id: call_id.clone(),
                    name: name.clone(),
                    input: arguments.clone(),
                }],
            ),
            ItemBody::ToolResult {
                call_id,
                text,
                images,
                success,
                ..
            } => {
                let mut content = text_block(text);
                content.extend(image_blocks(images, model)?);
                (
                    Role::User,
                    vec![Block::ToolResult {
                        tool_use_id: call_id.clone(),
                        content,
                        is_error: !success,
                    }],
                )
            }
            ItemBody::Reasoning { .. } => continue,
        };
        if blocks.is_empty() {
            continue;
        }
        match messages.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => messages.push(Message {
                role,
                content: blocks,
            }),
        }
    }
    Ok(messages)
}

fn text_block(text: &str) -> Vec<Block> {
    if text.is_empty() {
        Vec::new()
    } else {
        vec![Block::Text {
            text: text.to_owned(),
        }]
    }
}

/// The image blocks of `images` when the model takes images, else none.
fn image_blocks(images: &[ImageRef], model: &Model<'_>) -> Result<Vec<Block>, ProviderError> {
    if !model.takes_images {
        return Ok(Vec::new());
    }
    images
        .iter()
        .map(|image| {
            let bytes = model
                .images
                .and_then(|source| source.bytes(image))
                .ok_or_else(|| {
                    ProviderError::Unsendable(format!(
                        "image {} ({}) has no bytes to send",
                        image.number, image.media_type
                    ))
                })?;
            Ok(Block::Image {
                source: ImageData {
                    kind: "base64",
                    media_type: image.media_type.to_string(),
                    data: base64::engine::general_purpose::STANDARD.encode(bytes),
                },
            })
        })
        .collect()
}

/// The most tool calls one answer may hold (a bound on what a stream can make the host keep).
pub(crate) const MAX_BLOCKS: usize = 256;

/// An answer's parts, whether read whole or assembled from a stream.
#[derive(Debug, Default)]
pub(crate) struct Answer {
    pub(crate) reasoning: String,
    pub(crate) text: String,
    pub(crate) tool_calls: Vec<CallParts>,
    pub(crate) stop_reason: Option<String>,
    pub(crate) usage: Option<UsageIn>,
}

/// One `tool_use` block's parts: its input whole, or as the JSON pieces a stream sent.
#[derive(Debug, Default)]
pub(crate) struct CallParts {
    pub(crate) id: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) input: Option<serde_json::Value>,
    pub(crate) partial_json: String,
}

impl crate::family::Answer for Answer {
    fn text(&self) -> &str {
        &self.text
    }

    /// The response this answer stands for: reasoning, then the text, then the tool calls (item
    /// ids `resp-<k>`, as the other providers name them).
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
            finish_reason: finish_reason(self.stop_reason.as_deref(), has_calls)?,
            items,
            usage: self.usage.map_or_else(Usage::default, |usage| Usage {
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
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
        .ok_or_else(|| unrepresentable("no tool name"))?;
    // Streamed input comes as JSON pieces; whole input (or a stream that sent none) as a value.
    let arguments = if call.partial_json.trim().is_empty() {
        call.input
            .unwrap_or_else(|| serde_json::Value::Object(serde_json::Map::new()))
    } else {
        serde_json::from_str(&call.partial_json)
            .map_err(|e| unrepresentable(&format!("input that is not JSON ({e})")))?
    };
    Ok(ItemBody::ToolCall {
        call_id,
        name,
        arguments,
    })
}

/// The API's stop reason; without one, tool calls mean `tool-calls` and text means `stop`.
fn finish_reason(reason: Option<&str>, has_calls: bool) -> Result<FinishReason, ProviderError> {
    Ok(match reason {
        Some("end_turn" | "stop_sequence") => FinishReason::Stop,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("max_tokens") => FinishReason::Length,
        Some("refusal") => FinishReason::ContentFilter,
        None if has_calls => FinishReason::ToolCalls,
        None => FinishReason::Stop,
        Some(other) => {
            return Err(ProviderError::Unrepresentable(format!(
                "the stop reason {other:?} is not one the host knows"
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::family::Answer as _;
    use hookline_messages::model::{ItemKind, MediaType};
    use serde_json::json;

    struct Bytes;
    impl ImageSource for Bytes {
        fn bytes(&self, image: &ImageRef) -> Option<Vec<u8>> {
            (image.number == 1).then(|| b"png".to_vec())
        }
    }

    const PNG: ImageRef = ImageRef {
        number: 1,
        media_type: MediaType::Png,
    };

    fn all_kinds() -> ModelRequest {
        let bodies = vec![
            ItemBody::System {
                text: "be brief".into(),
                images: vec![],
            },
            ItemBody::User {
                text: "look".into(),
                images: vec![PNG],
            },
            ItemBody::Reasoning {
                text: "hmm".into(),
                provider_state: None,
            },
            ItemBody::Assistant {
                text: "reading".into(),
                images: vec![],
            },
            ItemBody::ToolCall {
                call_id: "c1".into(),
                name: "read_file".into(),
                arguments: json!({"path": "a"}),
            },
            ItemBody::ToolResult {
                call_id: "c1".into(),
                name: "read_file".into(),
                text: "shot".into(),
                images: vec![PNG],
                success: true,
            },
            ItemBody::User {
                text: "Reminder".into(),
                images: vec![],
            },
            ItemBody::System {
                text: "a plugin's note".into(),
                images: vec![],
            },
            ItemBody::ToolCall {
                call_id: "c2".into(),
                name: "write_file".into(),
                arguments: json!({}),
            },
            ItemBody::ToolResult {
                call_id: "c2".into(),
                name: "write_file".into(),
                text: "denied".into(),
                images: vec![],
                success: false,
            },
        ];
        ModelRequest {
            purpose: Purpose::Work,
            accepts_images: true,
            items: bodies
                .into_iter()
                .enumerate()
                .map(|(i, body)| Item::new(format!("i{i}"), body))
                .collect(),
        }
    }

    #[test]
    fn every_item_kind_maps_in_order_with_roles_merged() {
        let model = Model {
            takes_images: true,
            images: Some(&Bytes),
        };
        let mapped = request(&all_kinds(), &model).unwrap();
        assert_eq!(
            mapped.system.as_deref(),
            Some("be brief\n\na plugin's note")
        );
        let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "cG5n"}});
        assert_eq!(
            serde_json::to_value(&mapped.messages).unwrap(),
            json!([
                {"role": "user", "content": [{"type": "text", "text": "look"}, image]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "reading"},
                    {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "a"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": [{"type": "text", "text": "shot"}, image]},
                    {"type": "text", "text": "Reminder"}
                ]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "c2", "name": "write_file", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "c2", "content": [{"type": "text", "text": "denied"}], "is_error": true}
                ]}
            ])
        );
    }

    #[test]
    fn a_text_only_model_is_sent_no_image_and_a_missing_image_is_an_error() {
        let text_only = Model {
            takes_images: false,
            images: None,
        };
        let json =
            serde_json::to_string(&request(&all_kinds(), &text_only).unwrap().messages).unwrap();
        assert!(!json.contains("image"), "{json}");
        let mut request_two = all_kinds();
        std::sync::Arc::make_mut(&mut request_two.items.to_mut()[1]).body = ItemBody::User {
            text: "look".into(),
            images: vec![ImageRef {
                number: 2,
                media_type: MediaType::Png,
            }],
        };
        let model = Model {
            takes_images: true,
            images: Some(&Bytes),
        };
        assert_eq!(
            request(&request_two, &model).unwrap_err().to_string(),
            "the request cannot be sent to this provider: image 2 (image/png) has no bytes to send"
        );
    }

    #[test]
    fn an_answer_maps_to_items_in_order_and_unreported_usage_stays_absent() {
        let answer = Answer {
            reasoning: "think".into(),
            text: "done".into(),
            tool_calls: vec![CallParts {
                id: Some("t1".into()),
                name: Some("list_dir".into()),
                input: Some(json!({})),
                partial_json: "{\"path\": \".\"}".into(),
            }],
            stop_reason: Some("tool_use".into()),
            usage: Some(UsageIn {
                input_tokens: Some(12),
                output_tokens: None,
            }),
        };
        let response = answer.into_response(Purpose::Work).unwrap();
        assert_eq!(response.finish_reason, FinishReason::ToolCalls);
        assert_eq!(response.usage.input_tokens, Some(12));
        assert_eq!(response.usage.output_tokens, None);
        let kinds: Vec<_> = response.items.iter().map(Item::kind).collect();
        assert_eq!(
            kinds,
            vec![ItemKind::Reasoning, ItemKind::Assistant, ItemKind::ToolCall]
        );
        assert!(matches!(&response.items[2].body,
            ItemBody::ToolCall { arguments, .. } if *arguments == json!({"path": "."})));
        let none = Answer::default().into_response(Purpose::Side).unwrap();
        assert!(!none.usage.is_reported());
    }

    #[test]
    fn stop_reasons_map_and_unknown_ones_are_a_clear_error() {
        for (reason, expected) in [
            ("end_turn", FinishReason::Stop),
            ("stop_sequence", FinishReason::Stop),
            ("max_tokens", FinishReason::Length),
            ("refusal", FinishReason::ContentFilter),
        ] {
            assert_eq!(finish_reason(Some(reason), false).unwrap(), expected);
        }
        assert_eq!(
            finish_reason(Some("pause_turn"), false)
                .unwrap_err()
                .to_string(),
            "the provider's reply cannot be represented: the stop reason \"pause_turn\" is not one the host knows"
        );
        let bad = Answer {
            tool_calls: vec![CallParts {
                id: Some("t".into()),
                name: Some("x".into()),
                input: None,
                partial_json: "{\"a\":".into(),
            }],
            ..Answer::default()
        };
        assert!(bad
            .into_response(Purpose::Work)
            .unwrap_err()
            .to_string()
            .starts_with(
            "the provider's reply cannot be represented: tool call 1 has input that is not JSON"
        ));
    }

    /// One item of each shape the cut rule tells apart: every kind, empty texts, an image.
    fn shape(n: usize, kind: usize) -> Arc<Item> {
        let text = |t: &str| {
            if kind >= 8 {
                String::new()
            } else {
                t.to_owned()
            }
        };
        let body = match kind % 8 {
            0 => ItemBody::System {
                text: text("note"),
                images: vec![],
            },
            1 => ItemBody::User {
                text: text("ask"),
                images: if kind == 9 { vec![PNG] } else { vec![] },
            },
            2 => ItemBody::Reasoning {
                text: "hmm".into(),
                provider_state: (kind == 2).then(|| "signed".into()),
            },
            3 => ItemBody::Assistant {
                text: text("say"),
                images: vec![],
            },
            4 => ItemBody::ToolCall {
                call_id: format!("c{n}"),
                name: "t".into(),
                arguments: json!({}),
            },
            _ => ItemBody::ToolResult {
                call_id: format!("c{n}"),
                name: "t".into(),
                text: text("out"),
                images: vec![],
                success: kind != 5,
            },
        };
        Arc::new(Item::new(format!("i{n}"), body))
    }

    /// Whether encoding `items` apart at `at` gives the messages of `items` whole.
    fn splits(items: &[Arc<Item>], at: usize, model: &Model<'_>) -> bool {
        let mut apart = messages_of(&items[..at], model).unwrap();
        apart.extend(messages_of(&items[at..], model).unwrap());
        apart == messages_of(items, model).unwrap()
    }

    /// The cut rule is sound: wherever [`starts_message`] says a message starts, the messages
    /// before are final (every sequence of up to five shapes, every place, with and without
    /// images); and it does find the role changes a conversation has.
    #[test]
    fn a_message_starts_only_where_encoding_apart_changes_nothing() {
        let shapes = [0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 13];
        let text_only = Model {
            takes_images: false,
            images: None,
        };
        let with_images = Model {
            takes_images: true,
            images: Some(&Bytes),
        };
        let mut cuts = 0;
        for len in 1..=5u32 {
            for code in 0..shapes.len().pow(len) {
                let items: Vec<_> = (0..len as usize)
                    .map(|n| shape(n, shapes[code / shapes.len().pow(n as u32) % shapes.len()]))
                    .collect();
                for model in [&text_only, &with_images] {
                    for at in 0..items.len() {
                        if starts_message(&items, at, model) {
                            cuts += 1;
                            assert!(splits(&items, at, model), "{items:?} at {at}");
                        }
                    }
                }
            }
        }
        assert!(cuts > 100_000, "{cuts} cuts");
        // A user message after more items that send nothing than are looked through: not a
        // cut (it could join a user message further back).
        let mut items = vec![shape(0, 1)];
        items.extend((1..=LOOKBACK + 1).map(|n| shape(n, 2)));
        items.push(shape(LOOKBACK + 2, 1));
        assert!(!splits(&items, items.len() - 1, &text_only));
        assert!(!starts_message(&items, items.len() - 1, &text_only));
        // Reasoning between an answer and a tool call is looked through; the tool result after
        // the call starts a message.
        let turn = [
            shape(0, 1),
            shape(1, 2),
            shape(2, 3),
            shape(3, 10),
            shape(4, 4),
        ];
        let turn: Vec<_> = turn.into_iter().chain([shape(4, 6)]).collect();
        let starts: Vec<_> = (0..turn.len())
            .map(|at| starts_message(&turn, at, &text_only))
            .collect();
        assert_eq!(starts, [true, false, true, false, false, true]);
    }
}
