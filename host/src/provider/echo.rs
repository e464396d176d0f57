//! [`EchoProvider`]: the offline model. It needs no network and no key, so a server, a chat or a
//! load test always runs. It is stateless (any number of sessions may share one) and reads only
//! the request it is sent:
//!
//! - compaction calls get `summary: <n> items`;
//! - the turn starts at the last stored user message (item `r<n>`) or the model's last answer,
//!   whichever is later, so a stopped or cut-off turn's leftover results are not this turn's;
//! - a tool result since then is reported: `The tool did it: <its first line>` (or `did not`
//!   when the tool failed), ending the turn;
//! - a user message since the last answer whose last line is `call <tool> <json arguments>` asks
//!   for that tool call (id `call-<n>`, n counting the request's items, so it is stable per turn);
//! - otherwise it answers `echo: <the message typed this turn>`, and, when made
//!   [`EchoProvider::with_demo_call`], asks for one demo tool call: a `write_file` of the message
//!   to [`ECHO_FILE`], which the default approval mode asks the operator about.
//!
//! `hookline serve` and `hookline chat` both use [`EchoProvider::new`].
//!
//! Streaming offers the answer word by word, as a streaming model would.

use async_trait::async_trait;
use hookline_messages::model::{
    FinishReason, Item, ItemBody, ModelRequest, ModelResponse, Purpose, Usage,
};

use super::{OnText, Provider, ProviderError};

/// The file the demo tool call writes, relative to the workspace.
pub const ECHO_FILE: &str = "hookline-echo.txt";

/// The offline echo model.
#[derive(Clone, Copy, Debug, Default)]
pub struct EchoProvider {
    demo_call: bool,
}

impl EchoProvider {
    /// The echo model of servers, `hookline chat` and load tests: tool calls only when a message
    /// asks for one.
    #[must_use]
    pub const fn new() -> Self {
        Self { demo_call: false }
    }

    /// An echo model that also gives every message the demo `write_file` call (for tests of
    /// approvals).
    #[must_use]
    pub const fn with_demo_call() -> Self {
        Self { demo_call: true }
    }

    /// The model's answer to `request`.
    fn answer(self, request: &ModelRequest) -> ModelResponse {
        let body = match self.reply_to(request) {
            Reply::Text(text) => vec![assistant(text)],
            Reply::Call(call) => vec![call],
            Reply::TextAndCall(text, call) => vec![assistant(text), call],
        };
        let finish_reason = if body
            .iter()
            .any(|item| matches!(item.body, ItemBody::ToolCall { .. }))
        {
            FinishReason::ToolCalls
        } else {
            FinishReason::Stop
        };
        ModelResponse {
            purpose: request.purpose,
            finish_reason,
            items: body,
            usage: Usage::default(),
        }
    }

    fn reply_to(self, request: &ModelRequest) -> Reply {
        if request.purpose == Purpose::Compaction {
            return Reply::Text(format!("summary: {} items", request.items.len()));
        }
        let items = &request.items;
        // What came since the model last answered: plugins may add items after the user's
        // message (a reminder, a note), so the model looks at all of them.
        let mut since = items
            .iter()
            .rposition(|i| matches!(i.body, ItemBody::Assistant { .. }))
            .map_or(0, |answer| answer + 1);
        let first_user = |from: usize| {
            items[from..].iter().find_map(|i| match &i.body {
                ItemBody::User { text, .. } => Some(text.as_str()),
                _ => None,
            })
        };
        if !request.purpose.is_turn_call() {
            return Reply::Text(echo(first_user(since)));
        }
        // A turn starts at the last stored user message (an item `r<n>`, docs/turn.md): what
        // came before it, a stopped or cut-off turn's results included, is not this turn's.
        if let Some(turn) = items.iter().rposition(|item| is_stored_user(item)) {
            since = since.max(turn);
        }
        let fresh = &items[since..];
        let typed = first_user(since);
        let result = fresh.iter().rev().find_map(|i| match &i.body {
            ItemBody::ToolResult { text, success, .. } => Some((text.as_str(), *success)),
            _ => None,
        });
        if let Some((text, success)) = result {
            let verdict = if success { "did it" } else { "did not" };
            let first_line = text.lines().next().unwrap_or_default();
            return Reply::Text(format!("The tool {verdict}: {first_line}"));
        }
        let asked = fresh.iter().rev().find_map(|i| match &i.body {
            ItemBody::User { text, .. } => tool_call(text),
            _ => None,
        });
        if let Some((name, arguments)) = asked {
            return Reply::Call(call(format!("call-{}", items.len()), name, arguments));
        }
        match typed {
            Some(text) if self.demo_call => {
                // One demo call per turn, numbered by the calls made so far: `echo-1`, `echo-2`...
                let made = items
                    .iter()
                    .filter(|i| matches!(i.body, ItemBody::ToolCall { .. }))
                    .count();
                let arguments = serde_json::json!({ "path": ECHO_FILE, "content": text });
                Reply::TextAndCall(
                    echo(typed),
                    call(format!("echo-{}", made + 1), "write_file".into(), arguments),
                )
            }
            _ => Reply::Text(echo(typed)),
        }
    }
}

enum Reply {
    Text(String),
    Call(Item),
    TextAndCall(String, Item),
}

/// A user message the host built from a stored record (id `r<n>`), not one a plugin added.
fn is_stored_user(item: &Item) -> bool {
    let stored = item
        .id
        .0
        .strip_prefix('r')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    stored && matches!(item.body, ItemBody::User { .. })
}

fn echo(typed: Option<&str>) -> String {
    format!("echo: {}", typed.unwrap_or("(nothing to echo)"))
}

fn assistant(text: String) -> Item {
    Item::new(
        "echo-0",
        ItemBody::Assistant {
            text,
            images: Vec::new(),
        },
    )
}

fn call(call_id: String, name: String, arguments: serde_json::Value) -> Item {
    Item::new(
        "echo-1",
        ItemBody::ToolCall {
            call_id,
            name,
            arguments,
        },
    )
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

#[async_trait]
impl Provider for EchoProvider {
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

    fn result(text: &str, success: bool) -> ItemBody {
        ItemBody::ToolResult {
            call_id: "c".into(),
            name: "read_file".into(),
            text: text.into(),
            images: Vec::new(),
            success,
        }
    }

    fn text_of(response: &ModelResponse) -> &str {
        match &response.items[0].body {
            ItemBody::Assistant { text, .. } => text,
            other => panic!("not an answer: {other:?}"),
        }
    }

    #[test]
    fn a_plain_message_is_echoed() {
        let reply = EchoProvider::new().answer(&request(vec![user("hello")]));
        assert_eq!(reply.finish_reason, FinishReason::Stop);
        assert_eq!(text_of(&reply), "echo: hello");
        assert_eq!(reply.items.len(), 1);
    }

    #[test]
    fn the_message_typed_this_turn_is_echoed_not_what_plugins_added_after_it() {
        let reply = EchoProvider::new().answer(&request(vec![
            user("earlier"),
            ItemBody::Assistant {
                text: "echo: earlier".into(),
                images: Vec::new(),
            },
            user("now"),
            user("Reminder: a plugin added this."),
        ]));
        assert_eq!(text_of(&reply), "echo: now");
    }

    #[test]
    fn a_call_line_asks_for_that_tool_call() {
        let reply = EchoProvider::new().answer(&request(vec![
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
    fn a_tool_result_after_the_call_is_reported_and_ends_the_turn() {
        let call = ItemBody::ToolCall {
            call_id: "c".into(),
            name: "read_file".into(),
            arguments: serde_json::json!({"path": "a.txt"}),
        };
        let ok = EchoProvider::with_demo_call().answer(&request(vec![
            user(r#"call read_file {"path":"a.txt"}"#),
            call.clone(),
            result("first line\nsecond", true),
        ]));
        assert_eq!(ok.finish_reason, FinishReason::Stop);
        assert_eq!(text_of(&ok), "The tool did it: first line");
        let refused = EchoProvider::new().answer(&request(vec![
            user("x"),
            call,
            result("refused", false),
            user("added by a raw hook"),
        ]));
        assert_eq!(text_of(&refused), "The tool did not: refused");
    }

    #[test]
    fn bad_json_arguments_are_echoed_not_called() {
        let reply = EchoProvider::new().answer(&request(vec![user("call read_file {nope")]));
        assert_eq!(reply.finish_reason, FinishReason::Stop);
    }

    #[test]
    fn the_chat_model_adds_one_numbered_demo_call_per_turn() {
        let model = EchoProvider::with_demo_call();
        let first = model.answer(&request(vec![user("hi there")]));
        assert_eq!(first.finish_reason, FinishReason::ToolCalls);
        assert_eq!(text_of(&first), "echo: hi there");
        assert!(matches!(
            &first.items[1].body,
            ItemBody::ToolCall { call_id, name, arguments }
                if call_id == "echo-1" && name == "write_file"
                    && arguments["path"] == ECHO_FILE && arguments["content"] == "hi there"
        ));
        let mut items: Vec<ItemBody> = vec![user("hi there")];
        items.extend(first.items.iter().map(|i| i.body.clone()));
        items.push(result("ok", true));
        items.push(ItemBody::Assistant {
            text: "The tool did it: ok".into(),
            images: Vec::new(),
        });
        items.push(user("second"));
        let second = model.answer(&request(items));
        assert!(matches!(
            &second.items[1].body,
            ItemBody::ToolCall { call_id, .. } if call_id == "echo-2"
        ));
    }

    #[test]
    fn side_questions_only_echo_and_compactions_summarise() {
        let mut request = request(vec![user(r#"call read_file {"path":"a.txt"}"#)]);
        request.purpose = Purpose::Side;
        let side = EchoProvider::with_demo_call().answer(&request);
        assert_eq!(side.finish_reason, FinishReason::Stop);
        assert_eq!(text_of(&side), r#"echo: call read_file {"path":"a.txt"}"#);
        request.purpose = Purpose::Compaction;
        let summary = EchoProvider::with_demo_call().answer(&request);
        assert_eq!(text_of(&summary), "summary: 1 items");
    }

    /// Items as the host builds them from stored records (`r<n>`), then a plugin's reminder.
    fn stored(bodies: Vec<ItemBody>) -> ModelRequest {
        let mut items: Vec<Item> = bodies
            .into_iter()
            .enumerate()
            .map(|(n, body)| Item::new(format!("r{n}"), body))
            .collect();
        items.push(Item::new(
            "operator-reminder",
            user("Reminder: cite file names."),
        ));
        ModelRequest::new(Purpose::Work, false, items)
    }

    fn demo_call(id: &str) -> ItemBody {
        ItemBody::ToolCall {
            call_id: id.into(),
            name: "write_file".into(),
            arguments: serde_json::json!({"path": ECHO_FILE}),
        }
    }

    // Issue 22 item 4: after `/stop` ended a turn that waited for an approval, the next turn
    // is answered, not the stopped turn's refused result.
    #[test]
    fn a_stopped_turn_s_leftover_result_is_not_the_next_turn_s() {
        let model = EchoProvider::with_demo_call();
        let reply = model.answer(&stored(vec![
            user("first"),
            ItemBody::Assistant {
                text: "echo: first".into(),
                images: Vec::new(),
            },
            demo_call("echo-1"),
            result("The call was refused; it did not run.", false),
            user("second"),
        ]));
        assert_eq!(text_of(&reply), "echo: second");
        // Within a turn the result is still reported, reminder or not.
        let reply = model.answer(&stored(vec![
            user("first"),
            ItemBody::Assistant {
                text: "echo: first".into(),
                images: Vec::new(),
            },
            demo_call("echo-1"),
            result("ok", true),
        ]));
        assert_eq!(text_of(&reply), "The tool did it: ok");
    }

    #[test]
    fn a_cut_off_turn_s_marker_and_made_up_result_are_not_the_next_turn_s() {
        let reply = EchoProvider::new().answer(&stored(vec![
            user(r#"call write_file {"path":"a.txt"}"#),
            demo_call("call-1"),
            result("The turn was cut off while this call ran; its result was not stored.", false),
            user("The turn was cut off after tool call 'call-1' (write_file) had started; its result was not stored."),
            user("next"),
        ]));
        assert_eq!(text_of(&reply), "echo: next");
    }
}
