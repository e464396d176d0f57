//! rust-guard: an example hookline plugin in Rust, written with the `hookline-plugin` kit
//! (`sdk/rust`): the kit builds the hello from the handlers and speaks the protocol.
//!
//! - `on_user_message`: redacts the word after `password` (SPEC P2.3);
//! - raw hook `rewrite_prompt`: appends "Be strict." to review text (SPEC R2);
//! - events: `message:received` and the `session` family;
//! - tool `echo`: returns its `text` argument.

use hookline_plugin::messages::hook::{OnUserMessage, RewritePrompt};
use hookline_plugin::messages::prompt::{PromptMode, SystemText};
use hookline_plugin::messages::user::UserMessage;
use hookline_plugin::{Plugin, ToolDecl};
use serde_json::Value;

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

fn main() -> std::io::Result<()> {
    let mut plugin = Plugin::new();
    plugin
        .hook::<OnUserMessage, _>(|message, _| async move { Ok(redact(message)) })
        .hook_sync::<RewritePrompt>(|text, _| Ok(strict(text)))
        .event("message:received", |_, cx| async move {
            eprintln!("rust-guard saw event {}", cx.name);
            Ok(None)
        })
        .event("session", |_, cx| async move {
            eprintln!("rust-guard saw event {}", cx.name);
            Ok(None)
        })
        .tool(
            ToolDecl::read("echo", "Returns its text argument."),
            |arguments, _| async move {
                Ok(arguments
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned())
            },
        );
    plugin.run()
}
