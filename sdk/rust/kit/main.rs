//! The plugin the kit's tests run under the real `hookline` binary: the same plugin as the
//! Python and Node kits' tests (`sdk/tests/scenario.json`).

use std::time::Duration;

use hookline_plugin::messages::hook::{OnUserMessage, RewritePrompt};
use hookline_plugin::{Plugin, ToolDecl};

fn main() -> std::io::Result<()> {
    let mut plugin = Plugin::new();
    plugin
        // A sync handler: it runs on the blocking pool.
        .hook_sync::<OnUserMessage>(|mut message, _| {
            message.text.push_str(" [kit]");
            Ok(Some(message))
        })
        .hook::<RewritePrompt, _>(|mut text, _| async move {
            text.text.push_str("\nKit rules.");
            Ok(Some(text))
        })
        .event("command:new", |_, cx| async move {
            eprintln!("kit saw {}", cx.name);
            Ok(None)
        })
        .tool(
            ToolDecl::read("kit_echo", "Echoes its text with the session facts."),
            |arguments, cx| async move {
                let text = arguments["text"].as_str().unwrap_or_default().to_owned();
                Ok(format!(
                    "{text} from {} {}",
                    cx.session,
                    cx.approval_mode.as_str()
                ))
            },
        )
        .tool(
            ToolDecl::read("kit_sleep", "Sleeps for `seconds`, then answers."),
            |arguments, _| async move {
                let seconds = arguments["seconds"].as_f64().unwrap_or_default();
                tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
                Ok(format!("slept {seconds}"))
            },
        )
        .tool_sync(ToolDecl::read("kit_fail", "Always fails."), |_, _| {
            Err("kit_fail always fails".to_owned())
        });
    plugin.run()
}
