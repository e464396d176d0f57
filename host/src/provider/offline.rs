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

    /// The answer to `request`. A tool result with no assistant item after it is fresh: the
    /// model says what the tool said. Otherwise the model echoes the first user message after
    /// its last answer (the one typed this turn; raw hooks may add more after it) and, on work
    /// and plan calls, makes its demo tool call.
    fn answer(&self, request: &ModelRequest) -> ModelResponse {
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let turn_call = request.purpose.is_turn_call();
        let items = &request.items;
        let last_result = items
            .iter()
            .rposition(|i| matches!(i.body, ItemBody::ToolResult { .. }));
        let last_answer = items
            .iter()
            .rposition(|i| matches!(i.body, ItemBody::Assistant { .. }));
        let fresh_result = match (last_result, last_answer) {
            (Some(result), Some(answer)) => result > answer,
            (Some(_), None) => true,
            _ => false,
        };
        let typed = items
            .iter()
            .skip(last_answer.map_or(0, |a| a + 1))
            .find_map(|i| match &i.body {
                ItemBody::User { text, .. } => Some(text.as_str()),
                _ => None,
            });
        let mut out = Vec::new();
        let finish_reason = match (last_result.map(|r| &items[r].body), typed) {
            (Some(ItemBody::ToolResult { text, success, .. }), _) if fresh_result && turn_call => {
                let verdict = if *success { "did it" } else { "did not" };
                out.push(assistant(format!("The tool {verdict}: {text}")));
                FinishReason::Stop
            }
            (_, Some(text)) if turn_call => {
                out.push(assistant(format!("echo: {text}")));
                out.push(Item::new(
                    "resp-1",
                    ItemBody::ToolCall {
                        call_id: format!("echo-{n}"),
                        name: "write_file".into(),
                        arguments: serde_json::json!({ "path": ECHO_FILE, "content": text }),
                    },
                ));
                FinishReason::ToolCalls
            }
            (_, typed) => {
                out.push(assistant(format!(
                    "echo: {}",
                    typed.unwrap_or("(nothing to echo)")
                )));
                FinishReason::Stop
            }
        };
        ModelResponse {
            purpose: request.purpose,
            finish_reason,
            items: out,
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
        let added = Item::new(
            "3",
            ItemBody::User {
                text: "added by a raw hook".into(),
                images: Vec::new(),
            },
        );
        let response = OfflineProvider::new().answer(&request(vec![result, added]));
        assert_eq!(response.finish_reason, FinishReason::Stop);
        assert!(
            matches!(&response.items[0].body, ItemBody::Assistant { text, .. } if text == "The tool did not: refused")
        );
    }
}
