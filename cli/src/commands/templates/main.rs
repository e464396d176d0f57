//! {{name}}: a hookline plugin written with the Rust kit (crate `hookline-plugin`). See
//! README.md. Build it into `bin/` after a change, then run `hookline hooks check`.

use std::path::Path;

use hookline_plugin::messages::hook::OnPrompt;
use hookline_plugin::{Plugin, ToolDecl};

fn count(text: &str) -> String {
    format!("{} words", text.split_whitespace().count())
}

fn main() -> std::io::Result<()> {
    let mut plugin = Plugin::new();
    plugin
        // SPEC P2.2 (docs/spec.md of hookline): a prompt hook may only append.
        .hook_sync::<OnPrompt>(|mut prompt, _| {
            prompt.appended.push("Keep answers short.".into());
            Ok(Some(prompt))
        })
        .event("command:new", |context, _| async move {
            let source = context["commandSource"]
                .as_str()
                .unwrap_or("an unknown source");
            eprintln!("a new session was asked for from {source}");
            Ok(None)
        })
        .tool_sync(
            ToolDecl::read(
                "word_count",
                "Counts the words of `text`, or of the workspace file `path`.",
            ),
            |arguments, cx| {
                if let Some(text) = arguments["text"].as_str() {
                    return Ok(count(text));
                }
                let path = arguments["path"].as_str().unwrap_or_default();
                let relative = Path::new(path);
                if path.is_empty() || relative.is_absolute() || path.split('/').any(|p| p == "..") {
                    return Err(
                        "word_count needs `text`, or a relative `path` inside the workspace".into(),
                    );
                }
                std::fs::read_to_string(Path::new(&cx.workspace_root).join(relative))
                    .map(|text| count(&text))
                    .map_err(|error| format!("cannot read {path}: {error}"))
            },
        );
    plugin.run()
}
