//! rust-guard: an example hookline plugin in Rust, speaking the protocol with the types of
//! `hookline::messages::protocol`.
//!
//! - `on_user_message`: redacts the word after `password` (SPEC P2.3);
//! - raw hook `rewrite_prompt`: appends "Be strict." to review text (SPEC R2);
//! - events: `message:received` and the `session` family;
//! - tool `echo`: returns its `text` argument.
//!
//! Replies are written to a buffered stdout that is flushed only when no more input is waiting,
//! so a burst of requests is answered with one write.

use std::io::{self, BufRead, BufWriter, Write};

use hookline::messages::approval::{Authority, Risk};
use hookline::messages::hook::{HookKind, HookSet};
use hookline::messages::prompt::{PromptMode, SystemText};
use hookline::messages::protocol::{
    Hello, HookRequest, HostMessage, PluginMessage, ToolDecl, ToolOutput, ToolRequest,
};
use hookline::messages::user::UserMessage;
use serde_json::Value;

fn hello() -> Hello {
    let mut hello = Hello::new();
    hello.hooks = HookSet::of(&[HookKind::OnUserMessage]);
    hello.raw_hooks = HookSet::of(&[HookKind::RewritePrompt]);
    hello.events = vec!["message:received".into(), "session".into()];
    hello.tools = vec![ToolDecl {
        name: "echo".into(),
        description: "Returns its text argument.".into(),
        risk: Risk::Read,
        authority: Authority::Workspace,
    }];
    hello
}

fn redact(mut message: UserMessage) -> Option<UserMessage> {
    let words: Vec<&str> = message.text.split(' ').collect();
    let at = words
        .iter()
        .position(|word| word.eq_ignore_ascii_case("password"))?;
    let secret = words.get(at + 1)?;
    let redacted = message.text.replacen(secret, "[redacted]", 1);
    message.text = redacted;
    Some(message)
}

fn strict(mut text: SystemText) -> Option<SystemText> {
    if text.mode != PromptMode::Review {
        return None;
    }
    text.text.push_str("\nBe strict.");
    Some(text)
}

fn replace_or_keep<T: serde::Serialize>(id: u64, value: Option<T>) -> PluginMessage {
    match value.map(serde_json::to_value) {
        Some(Ok(value)) => PluginMessage::Replace { id, value },
        Some(Err(error)) => PluginMessage::Error {
            id,
            message: error.to_string(),
        },
        None => PluginMessage::Keep { id },
    }
}

fn hook(request: HookRequest) -> PluginMessage {
    let id = request.id;
    let decoded = match request.hook {
        HookKind::OnUserMessage => {
            serde_json::from_value(request.value).map(|m| replace_or_keep(id, redact(m)))
        }
        HookKind::RewritePrompt => {
            serde_json::from_value(request.value).map(|t| replace_or_keep(id, strict(t)))
        }
        _ => Ok(PluginMessage::Keep { id }),
    };
    decoded.unwrap_or_else(|error| PluginMessage::Error {
        id,
        message: error.to_string(),
    })
}

fn tool(request: ToolRequest) -> PluginMessage {
    let text = request
        .arguments
        .get("text")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let output = ToolOutput {
        text: text.to_owned(),
        success: true,
    };
    replace_or_keep(request.id, Some(output))
}

fn answer(message: HostMessage) -> Option<PluginMessage> {
    match message {
        HostMessage::Hook(request) => Some(hook(request)),
        HostMessage::Tool(request) => Some(tool(request)),
        HostMessage::Event(event) => {
            eprintln!("rust-guard saw event {}", event.key);
            Some(PluginMessage::Keep { id: event.id })
        }
        HostMessage::Cancel { .. } | HostMessage::Goodbye => None,
    }
}

fn write(out: &mut impl Write, message: &PluginMessage) -> io::Result<()> {
    serde_json::to_writer(&mut *out, message)?;
    out.write_all(b"\n")
}

fn main() -> io::Result<()> {
    let mut input = io::BufReader::new(io::stdin());
    let mut out = BufWriter::new(io::stdout().lock());
    write(&mut out, &PluginMessage::Hello(hello()))?;
    out.flush()?;
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            return out.flush();
        }
        let message = match serde_json::from_str::<HostMessage>(&line) {
            Ok(HostMessage::Goodbye) => return out.flush(),
            Ok(message) => message,
            Err(error) => {
                eprintln!("rust-guard: unreadable request: {error}");
                continue;
            }
        };
        if let Some(reply) = answer(message) {
            write(&mut out, &reply)?;
        }
        if input.buffer().is_empty() {
            out.flush()?;
        }
    }
}
