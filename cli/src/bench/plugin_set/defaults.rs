//! The value each hook gets by default: one of a realistic size, as a coding agent's turn would
//! hand it to the plugins (a user message of a few hundred characters, the model request of a
//! 50-turn conversation with tool calls and results, a tool call with arguments, a file read's
//! result, ...), each in the wire form a plugin receives (docs/protocol.md).

use hookline_messages::approval::{Authority, Classification, Risk};
use hookline_messages::compaction::{Compaction, CompactionPhase, CompactionText};
use hookline_messages::hook::HookKind;
use hookline_messages::model::{
    FinishReason, Item, ItemBody, ModelRequest, ModelResponse, Purpose, Usage,
};
use hookline_messages::prompt::{Prompt, PromptMode, SystemText};
use hookline_messages::session::{ApprovalMode, SessionId, SessionInfo};
use hookline_messages::tool::{ApprovalState, ToolCall, ToolProvider, ToolResult};
use hookline_messages::user::{StopReason, TurnInfo, UserMessage};
use serde_json::{json, Value};

/// Turns in the default model request's conversation.
pub(super) const CONVERSATION_TURNS: usize = 50;

/// The user message of the default values (about 400 characters).
const USER_TEXT: &str = "The parser in src/parser.rs reports a syntax error on the wrong \
line when a string literal spans several lines: it counts the line where the token ends, not \
where it starts. Please find where the line number is taken, fix it so the error points at the \
first line of the token, and add a test with a three-line string that is missing its closing \
quote. Keep the public API as it is, and run the parser's tests when you are done.";

/// What the default value of `hook` is, for the report.
pub(super) fn describe(hook: HookKind) -> &'static str {
    match hook {
        HookKind::OnSessionStarted | HookKind::OnSessionEnded => "a session's facts",
        HookKind::OnPrompt | HookKind::RewritePrompt => "a work system prompt of about 1.6 KB",
        HookKind::OnUserMessage => "a user message of about 400 characters",
        HookKind::OnTurnStarted | HookKind::OnTurnFinished => "a turn's facts",
        HookKind::TransformModel | HookKind::RebuildModel => {
            "the work request of a 50-turn conversation with tool calls and results"
        }
        HookKind::OnModelResponse => "an answer with text, two tool calls and usage",
        HookKind::OnToolCall => "a read_file call with arguments",
        HookKind::OnToolResult => "a read_file result of about 2 KB",
        HookKind::OnApproval | HookKind::RewriteApproval => "a write classification",
        HookKind::OnCompaction | HookKind::RewriteCompaction => "a compaction prompt of about 1 KB",
    }
}

/// The default value of `hook`, as JSON.
pub(super) fn value(hook: HookKind) -> Value {
    match hook {
        HookKind::OnSessionStarted | HookKind::OnSessionEnded => to_json(&session()),
        HookKind::OnPrompt => to_json(&Prompt::new(PromptMode::Work, system_text())),
        HookKind::RewritePrompt => to_json(&SystemText {
            mode: PromptMode::Work,
            text: system_text(),
        }),
        HookKind::OnUserMessage => to_json(&UserMessage::new(USER_TEXT)),
        HookKind::OnTurnStarted => to_json(&turn(None)),
        HookKind::OnTurnFinished => to_json(&turn(Some(StopReason::Completed))),
        HookKind::TransformModel | HookKind::RebuildModel => to_json(&conversation()),
        HookKind::OnModelResponse => to_json(&response()),
        HookKind::OnToolCall => to_json(&tool_call(0)),
        HookKind::OnToolResult => to_json(&tool_result(0)),
        HookKind::OnApproval | HookKind::RewriteApproval => to_json(&classification()),
        HookKind::OnCompaction => {
            to_json(&Compaction::new(CompactionPhase::Prompt, compaction_text()))
        }
        HookKind::RewriteCompaction => to_json(&CompactionText {
            phase: CompactionPhase::Prompt,
            text: compaction_text(),
        }),
    }
}

/// `value` as JSON.
pub(super) fn to_json<T: serde::Serialize>(value: &T) -> Value {
    // The values above are plain data: serializing them cannot fail.
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn session() -> SessionInfo {
    SessionInfo {
        workspace_root: "/home/dev/projects/parser".into(),
        session_id: SessionId::new("bench-0"),
        approval_mode: ApprovalMode::AskAboveRead,
    }
}

fn turn(stop_reason: Option<StopReason>) -> TurnInfo {
    TurnInfo {
        user_text: USER_TEXT.into(),
        mode: PromptMode::Work,
        stop_reason,
    }
}

fn system_text() -> String {
    let rules = [
        "You are a coding agent working in the user's repository.",
        "Read the code before you change it; prefer small, reviewable changes.",
        "Use the tools to read, list and write files; never guess a file's content.",
        "Run the project's tests after each change and report what failed.",
        "Explain what you changed and why in a few sentences at the end of the turn.",
        "Ask before deleting files or running commands that change the system.",
        "Keep the project's style: formatting, naming, error handling and comments.",
        "When a request is ambiguous, say what you assumed.",
    ];
    let mut text = String::new();
    for round in 0..3 {
        for rule in rules {
            text.push_str(rule);
            text.push_str(if round == 2 { "\n" } else { " " });
        }
    }
    text
}

fn compaction_text() -> String {
    "Summarize the conversation so far for the next model call: the user's goal, the files read \
and changed with a line on each, the commands run and what they reported, the decisions made \
and why, and what remains to be done. Keep names, paths and numbers exact. "
        .repeat(3)
}

fn file_text() -> String {
    let mut text = String::new();
    for line in 0..60 {
        text.push_str(&format!(
            "{:>4}    let token = self.lexer.next_token(position + {line})?;\n",
            line + 120
        ));
    }
    text
}

fn tool_call(turn: usize) -> ToolCall {
    ToolCall {
        call_id: format!("call-{turn}"),
        name: "read_file".into(),
        arguments: json!({"path": "src/parser.rs", "start_line": 120, "end_line": 180}),
        provider: ToolProvider::BuiltIn,
    }
}

fn tool_result(turn: usize) -> ToolResult {
    ToolResult {
        call_id: format!("call-{turn}"),
        name: "read_file".into(),
        text: file_text(),
        images: Vec::new(),
        success: true,
        approval: ApprovalState::Granted,
    }
}

fn classification() -> Classification {
    Classification {
        risk: Risk::Write,
        authority: Authority::Workspace,
        summary: "write_file src/parser.rs (1.2 KB): fix the line of multi-line string errors"
            .into(),
        requires_prompt: false,
    }
}

/// The work request of a [`CONVERSATION_TURNS`]-turn conversation: per turn a user message, the
/// assistant's tool call, its result and the assistant's answer.
fn conversation() -> ModelRequest {
    let mut items = vec![Item::new(
        "system",
        ItemBody::System {
            text: system_text(),
            images: Vec::new(),
        },
    )];
    for turn in 0..CONVERSATION_TURNS {
        let call = tool_call(turn);
        let result = tool_result(turn);
        let id = |n: usize| format!("r{}", turn * 4 + n);
        items.push(Item::new(
            id(0),
            ItemBody::User {
                text: USER_TEXT.into(),
                images: Vec::new(),
            },
        ));
        items.push(Item::new(
            id(1),
            ItemBody::ToolCall {
                call_id: call.call_id,
                name: call.name,
                arguments: call.arguments,
            },
        ));
        let text = if turn % 5 == 0 {
            file_text()
        } else {
            format!("{} lines read.", 60)
        };
        items.push(Item::new(
            id(2),
            ItemBody::ToolResult {
                call_id: result.call_id,
                name: result.name,
                text,
                images: Vec::new(),
                success: true,
            },
        ));
        items.push(Item::new(
            id(3),
            ItemBody::Assistant {
                text: "The line is taken from the token's end; I changed it to its start and \
added a test with a three-line string."
                    .into(),
                images: Vec::new(),
            },
        ));
    }
    ModelRequest::new(Purpose::Work, false, items)
}

fn response() -> ModelResponse {
    ModelResponse {
        purpose: Purpose::Work,
        finish_reason: FinishReason::ToolCalls,
        items: vec![
            Item::new(
                "a1",
                ItemBody::Assistant {
                    text: "I will read the lexer and the parser's error path first.".into(),
                    images: Vec::new(),
                },
            ),
            Item::new(
                "a2",
                ItemBody::ToolCall {
                    call_id: "call-a".into(),
                    name: "read_file".into(),
                    arguments: json!({"path": "src/lexer.rs"}),
                },
            ),
            Item::new(
                "a3",
                ItemBody::ToolCall {
                    call_id: "call-b".into(),
                    name: "read_file".into(),
                    arguments: json!({"path": "src/parser.rs", "start_line": 1, "end_line": 80}),
                },
            ),
        ],
        usage: Usage::reported(18_400, 210),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_message_and_the_conversation_have_the_sizes_the_report_names() {
        let user = value(HookKind::OnUserMessage);
        let text = user["text"].as_str().unwrap_or_default();
        assert!((300..600).contains(&text.len()), "{}", text.len());
        let request = value(HookKind::TransformModel);
        let items = request["items"].as_array().map_or(0, Vec::len);
        assert_eq!(items, 1 + 4 * CONVERSATION_TURNS);
    }
}
