//! [`OfflineProvider`]: the small built-in model of `hookline chat` without a provider. It needs
//! no network and no key, so a session always runs: each user message is echoed and answered with
//! one demo tool call (a `write_file` of the message, which the default approval mode asks the
//! operator about); a tool result is answered by saying what the tool said.

use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use hookline_messages::model::{FinishReason, Item, ItemBody, ModelRequest, ModelResponse, Usage};

use super::{OnText, Provider, ProviderError};

/// The file the demo tool call writes, relative to the workspace.
pub const ECHO_FILE: &str = "hookline-echo.txt";

/// The built-in offline model: an echo and a demo tool call (issue 12 item 6).
#[derive(Debug, Default)]
pub struct OfflineProvider {
    calls: AtomicU64,
}

impl OfflineProvider {
    /// A fresh model.
    pub fn new() -> Self {
        Self::default()
    }

    /// The answer to `request`: what its last user message or tool result calls for.
    fn answer(&self, request: &ModelRequest) -> ModelResponse {
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let last = request.items.iter().rev().find(|item| {
            matches!(
                item.body,
                ItemBody::User { .. } | ItemBody::ToolResult { .. }
            )
        });
        let mut items = Vec::new();
        let finish_reason = match last.map(|item| &item.body) {
            Some(ItemBody::User { text, .. }) if request.purpose.is_turn_call() => {
                items.push(assistant(format!("echo: {text}")));
                items.push(Item::new(
                    "resp-1",
                    ItemBody::ToolCall {
                        call_id: format!("echo-{n}"),
                        name: "write_file".into(),
                        arguments: serde_json::json!({ "path": ECHO_FILE, "content": text }),
                    },
                ));
                FinishReason::ToolCalls
            }
            Some(ItemBody::ToolResult { text, success, .. }) if request.purpose.is_turn_call() => {
                let verdict = if *success { "did it" } else { "did not" };
                items.push(assistant(format!("The tool {verdict}: {text}")));
                FinishReason::Stop
            }
            Some(ItemBody::User { text, .. }) => {
                items.push(assistant(format!("echo: {text}")));
                FinishReason::Stop
            }
            _ => {
                items.push(assistant("echo: (nothing to echo)".to_owned()));
                FinishReason::Stop
            }
        };
        ModelResponse {
            purpose: request.purpose,
            finish_reason,
            items,
            usage: Usage::default(),
        }
    }
}

fn assistant(text: String) -> Item {
    Item::new(
        "resp-0",
        ItemBody::Assistant {
            text,
            images: Vec::new(),
        },
    )
}

#[async_trait]
impl Provider for OfflineProvider {
    fn takes_images(&self) -> bool {
        false
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        Ok(self.answer(request))
    }

    /// Offers the answer word by word, as a streaming model would.
    async fn complete_streaming(
        &self,
        request: &ModelRequest,
        on_text: OnText<'_>,
    ) -> Result<ModelResponse, ProviderError> {
        let response = self.answer(request);
        for item in &response.items {
            if let ItemBody::Assistant { text, .. } = &item.body {
                for piece in text.split_inclusive(' ') {
                    on_text(piece);
                }
            }
        }
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hookline_messages::model::Purpose;

    fn request(items: Vec<Item>) -> ModelRequest {
        ModelRequest {
            purpose: Purpose::Work,
            accepts_images: false,
            items,
        }
    }

    #[test]
    fn a_message_is_echoed_with_a_demo_tool_call() {
        let user = Item::new(
            "1",
            ItemBody::User {
                text: "hi there".into(),
                images: Vec::new(),
            },
        );
        let response = OfflineProvider::new().answer(&request(vec![user]));
        assert_eq!(response.finish_reason, FinishReason::ToolCalls);
        assert!(
            matches!(&response.items[0].body, ItemBody::Assistant { text, .. } if text == "echo: hi there")
        );
        assert!(matches!(
            &response.items[1].body,
            ItemBody::ToolCall { name, arguments, .. }
                if name == "write_file" && arguments["content"] == "hi there"
        ));
    }

    #[test]
    fn a_tool_result_ends_the_turn() {
        let result = Item::new(
            "2",
            ItemBody::ToolResult {
                call_id: "echo-1".into(),
                name: "write_file".into(),
                text: "refused".into(),
                images: Vec::new(),
                success: false,
            },
        );
        let response = OfflineProvider::new().answer(&request(vec![result]));
        assert_eq!(response.finish_reason, FinishReason::Stop);
        assert!(
            matches!(&response.items[0].body, ItemBody::Assistant { text, .. } if text == "The tool did not: refused")
        );
    }
}
