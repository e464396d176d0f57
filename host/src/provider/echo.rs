//! [`EchoProvider`]: a small offline model that always answers, so a server, a chat or a load
//! test runs without a real model. It reads only the request it is sent:
//!
//! - the last item is a user message `call <tool> <json arguments>`: it asks for that tool call
//!   (the id is `call-<n>`, n counting the request's items, so it is stable per turn);
//! - the last item is a tool result: it answers `done: <the result's first line>`;
//! - compaction calls get `summary: <n> items`;
//! - anything else: `echo: <the last user text>`.

use async_trait::async_trait;
use hookline_messages::model::{
    FinishReason, Item, ItemBody, ModelRequest, ModelResponse, Purpose, Usage,
};

use super::{Provider, ProviderError};

/// The offline echo model. Stateless: any number of sessions may share one.
#[derive(Clone, Copy, Debug, Default)]
pub struct EchoProvider;

#[async_trait]
impl Provider for EchoProvider {
    fn takes_images(&self) -> bool {
        false
    }

    async fn complete(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        Ok(answer(request))
    }
}

/// The echo model's answer to `request`.
pub(crate) fn answer(request: &ModelRequest) -> ModelResponse {
    let text = |text: String| ItemBody::Assistant {
        text,
        images: Vec::new(),
    };
    let body = if request.purpose == Purpose::Compaction {
        text(format!("summary: {} items", request.items.len()))
    } else {
        match pending_call(request) {
            Pending::Result(result) => text(format!(
                "done: {}",
                result.lines().next().unwrap_or_default()
            )),
            Pending::Call(name, arguments) => ItemBody::ToolCall {
                call_id: format!("call-{}", request.items.len()),
                name,
                arguments,
            },
            Pending::Nothing => text(format!("echo: {}", last_user_text(request))),
        }
    };
    let finish_reason = if matches!(body, ItemBody::ToolCall { .. }) {
        FinishReason::ToolCalls
    } else {
        FinishReason::Stop
    };
    ModelResponse {
        purpose: request.purpose,
        finish_reason,
        items: vec![Item::new("echo-0", body)],
        usage: Usage::default(),
    }
}

enum Pending<'a> {
    /// A tool result came after the last call request: report it.
    Result(&'a str),
    /// A user message asks for a call no result answers yet.
    Call(String, serde_json::Value),
    Nothing,
}

/// What the request's tail asks for: plugins may add items after the user's message (a
/// reminder, a note), so the echo model looks back past them.
fn pending_call(request: &ModelRequest) -> Pending<'_> {
    for item in request.items.iter().rev() {
        match &item.body {
            ItemBody::ToolResult { text, .. } => return Pending::Result(text),
            ItemBody::Assistant { .. } => return Pending::Nothing,
            ItemBody::User { text, .. } => {
                if let Some((name, arguments)) = tool_call(text) {
                    return Pending::Call(name, arguments);
                }
            }
            _ => {}
        }
    }
    Pending::Nothing
}

/// `call <tool> <json>` on the message's last line (text after the JSON is ignored).
fn tool_call(text: &str) -> Option<(String, serde_json::Value)> {
    let line = text.lines().last()?;
    let rest = &line[line.find("call ")? + "call ".len()..];
    let (name, arguments) = rest.trim().split_once(' ').unwrap_or((rest.trim(), "{}"));
    // The first JSON value; plugins may have appended text after it.
    let arguments = serde_json::Deserializer::from_str(arguments.trim())
        .into_iter::<serde_json::Value>()
        .next()?
        .ok()?;
    (!name.is_empty()).then(|| (name.to_owned(), arguments))
}

fn last_user_text(request: &ModelRequest) -> &str {
    request
        .items
        .iter()
        .rev()
        .find_map(|item| match &item.body {
            ItemBody::User { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(items: Vec<ItemBody>) -> ModelRequest {
        ModelRequest {
            purpose: Purpose::Work,
            accepts_images: false,
            items: items
                .into_iter()
                .enumerate()
                .map(|(i, body)| Item::new(format!("i{i}"), body))
                .collect(),
        }
    }

    fn user(text: &str) -> ItemBody {
        ItemBody::User {
            text: text.into(),
            images: Vec::new(),
        }
    }

    #[test]
    fn a_plain_message_is_echoed() {
        let reply = answer(&request(vec![user("hello")]));
        assert_eq!(reply.finish_reason, FinishReason::Stop);
        assert!(
            matches!(&reply.items[0].body, ItemBody::Assistant { text, .. } if text == "echo: hello")
        );
    }

    #[test]
    fn a_call_line_asks_for_that_tool_call() {
        let reply = answer(&request(vec![
            user(r#"please call write_file {"path":"a.txt","content":"x"}"#),
            user("Reminder: a plugin added this."),
        ]));
        assert_eq!(reply.finish_reason, FinishReason::ToolCalls);
        match &reply.items[0].body {
            ItemBody::ToolCall {
                call_id,
                name,
                arguments,
            } => {
                assert_eq!(call_id, "call-2");
                assert_eq!(name, "write_file");
                assert_eq!(arguments["path"], "a.txt");
            }
            other => panic!("not a tool call: {other:?}"),
        }
    }

    #[test]
    fn a_tool_result_after_the_call_is_reported() {
        let reply = answer(&request(vec![
            user(r#"call read_file {"path":"a.txt"}"#),
            ItemBody::ToolCall {
                call_id: "c".into(),
                name: "read_file".into(),
                arguments: serde_json::json!({"path": "a.txt"}),
            },
            ItemBody::ToolResult {
                call_id: "c".into(),
                name: "read_file".into(),
                text: "first line\nsecond".into(),
                images: Vec::new(),
                success: true,
            },
        ]));
        assert!(
            matches!(&reply.items[0].body, ItemBody::Assistant { text, .. } if text == "done: first line")
        );
    }

    #[test]
    fn bad_json_arguments_are_echoed_not_called() {
        let reply = answer(&request(vec![user("call read_file {nope")]));
        assert_eq!(reply.finish_reason, FinishReason::Stop);
    }
}
