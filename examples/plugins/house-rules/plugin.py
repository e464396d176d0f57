#!/usr/bin/env python3
"""house-rules: an example hookline plugin in Python, written with the Python kit
(`hookline_plugin/`, a copy of `sdk/python/src/hookline_plugin`: a plugin resolves nothing outside
its own directory, SPEC L2). The kit builds the hello from the handlers and speaks the protocol of
docs/protocol.md; logs go to stderr (`hookline run --verbose` shows them).
"""
from hookline_plugin import Plugin

plugin = Plugin()

RISKS = ["read", "write", "execute", "critical"]


@plugin.hook("on_prompt")
async def british(prompt, cx):
    # SPEC P2.2: append only.
    prompt["appended"] = prompt.get("appended", []) + ["Use British spelling."]
    return prompt


@plugin.hook("on_tool_call")
async def ls_is_list_dir(call, cx):
    if call["name"] != "ls":
        return None
    call["name"] = "list_dir"
    return call


@plugin.hook("on_approval")
async def deletions_ask(classification, cx):
    # SPEC P2.9: raise only. Anything that deletes always asks.
    if "delete" not in classification["summary"].lower():
        return None
    classification["requiresPrompt"] = True
    if RISKS.index(classification["risk"]) < RISKS.index("write"):
        classification["risk"] = "write"
    return classification


@plugin.hook("on_session_started")
def session_started(info, cx):
    # A sync handler: the kit runs it on a thread pool, so other calls go on meanwhile.
    plugin.log(f"session {info['sessionId']} started in {info['workspaceRoot']}")


@plugin.event("command:new")
async def new_command(context, cx):
    plugin.log(f"event {cx.name}")


# A typo on purpose: hookline warns that the gateway never emits it (SPEC G4.1).
@plugin.event("command:nwe")
async def typo(context, cx):
    plugin.log(f"event {cx.name}")


@plugin.tool("word_count", description="Counts the words of a text.", risk="read",
             authority="workspace")
async def word_count(arguments, cx):
    return str(len(str(arguments.get("text", "")).split()))


if __name__ == "__main__":
    plugin.run()
