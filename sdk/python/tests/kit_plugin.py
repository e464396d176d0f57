"""The plugin the kit's tests run under the real `hookline` binary (and drive directly)."""
import asyncio

from hookline_plugin import Plugin, ToolResult

plugin = Plugin()
seen = []


@plugin.hook("on_user_message")
def tag(message, cx):
    # A sync handler: it runs inline on the event loop (no thread, no task).
    message["text"] += " [kit]"
    # The trace context, when the host sends one, is the handler's to use (here: echoed).
    if cx.traceparent:
        message["text"] += f" ({cx.traceparent})"
    return message


@plugin.raw_hook("rewrite_prompt")
async def strict(text, cx):
    text["text"] += "\nKit rules."
    return text


@plugin.event("command:new")
def on_new(context, cx):
    plugin.log(f"kit saw {cx.name}")


@plugin.tool("kit_echo", description="Echoes its text with the session facts.")
async def echo(arguments, cx):
    return f"{arguments.get('text', '')} from {cx.session} {cx.approval_mode}"


@plugin.tool("kit_sleep", description="Sleeps for `seconds`, then answers.")
async def sleep(arguments, cx):
    await asyncio.sleep(float(arguments.get("seconds", 0)))
    return ToolResult(f"slept {arguments.get('seconds')}")


@plugin.tool("kit_fail", description="Always fails.")
def fail(arguments, cx):
    raise RuntimeError("kit_fail always fails")


if __name__ == "__main__":
    plugin.run()
