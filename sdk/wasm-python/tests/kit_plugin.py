"""The plugin the component kit's tests build: the Python kit's handlers, served as a component."""
import asyncio

from hookline_component import component
from hookline_plugin import Plugin

plugin = Plugin(name="kit")


@plugin.hook("on_prompt")
def remind(prompt, cx):
    prompt["appended"] = prompt.get("appended", []) + ["Kit rules."]
    return prompt


@plugin.hook("on_user_message")
def tag(message, cx):
    message["text"] += " [kit]"
    return message


@plugin.hook("on_tool_call")
def keep(call, cx):
    return None


@plugin.hook("on_turn_started")
async def wait(turn, cx):
    await asyncio.sleep(1)


@plugin.tool("kit_echo", description="Echoes its text with the session.")
async def echo(arguments, cx):
    return f"{arguments.get('text', '')} from {cx.session}"


@plugin.tool("kit_sleep", description="Waits, which a component cannot.")
async def sleep(arguments, cx):
    await asyncio.sleep(1)
    return "slept"


@plugin.event("command:new")
def on_new(context, cx):
    return None


Guest = component(plugin)
