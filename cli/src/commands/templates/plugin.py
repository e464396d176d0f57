#!/usr/bin/env python3
"""{{name}}: a hookline plugin written with the Python kit (hookline_plugin/, standard library only).

See README.md. Run `hookline hooks check` after a change; `hookline run --verbose` shows this
plugin's log lines (stderr) prefixed with its name.
"""
import os

from hookline_plugin import Plugin

plugin = Plugin()


@plugin.hook("on_prompt")
def remind(prompt, cx):
    # SPEC P2.2 (docs/spec.md of hookline): a prompt hook may only append.
    prompt["appended"] = prompt.get("appended", []) + ["Keep answers short."]
    return prompt


@plugin.event("command:new")
def on_new(context, cx):
    plugin.log(f"a new session was asked for from {context.get('commandSource')}")


@plugin.tool("word_count", description="Counts the words of `text`, or of the workspace file `path`.")
def word_count(arguments, cx):
    if "text" in arguments:
        return f"{len(str(arguments['text']).split())} words"
    path = str(arguments.get("path", ""))
    if not path or os.path.isabs(path) or ".." in path.split("/"):
        raise ValueError("word_count needs `text`, or a relative `path` inside the workspace")
    with open(os.path.join(cx.workspace_root, path), encoding="utf-8") as file:
        return f"{len(file.read().split())} words"


if __name__ == "__main__":
    plugin.run()
