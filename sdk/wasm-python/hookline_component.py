"""A hookline plugin written with the Python kit (`hookline_plugin`, sdk/python), served as a
WebAssembly component of the world `docs/wasm/hookline-plugin.wit` and built with
componentize-py (README.md).

    from hookline_plugin import Plugin
    from hookline_component import component

    plugin = Plugin()

    @plugin.hook("on_prompt")
    def remind(prompt, cx):
        prompt["appended"] = prompt.get("appended", []) + ["Be brief."]
        return prompt

    Guest = component(plugin)      # the class componentize-py exports as `guest`

Handlers are the kit's: they return None to keep the value, or the replacement; a tool returns
its text (or a ToolResult); a hook's or event's exception is an `error` reply, a tool's a failed
result. Each call is answered before it returns: a component has no event loop or threads, so a
handler that waits for something (`await asyncio.sleep(...)`, a `blocking=True` handler's thread)
fails that way.
"""
import json
from typing import Any, Dict

from wit_world import exports


def component(plugin: Any) -> type:
    """The `guest` export for `plugin` (a `hookline_plugin.Plugin`)."""

    class Guest(exports.Guest):
        def hello(self) -> str:
            return json.dumps(plugin.hello())

        def call(self, request: str) -> str:
            return json.dumps(answer(plugin, request), separators=(",", ":"))

    return Guest


def answer(plugin: Any, request: str) -> Dict[str, Any]:
    """The reply to one request (JSON text), never an exception."""
    try:
        message = json.loads(request)
    except ValueError:
        return {"type": "error", "id": 0, "message": "the request is not JSON"}
    request_id = message.get("id") if isinstance(message, dict) else None
    if not isinstance(request_id, int) or message.get("type") not in ("hook", "tool", "event"):
        return {"type": "error", "id": request_id if isinstance(request_id, int) else 0,
                "message": "the request is not a protocol request"}
    # The kit's own dispatch (the same code that answers over the pipe), driven to its end here.
    call = plugin._dispatch(message)
    try:
        call.send(None)
    except StopIteration as done:
        return done.value
    except Exception as error:  # a bug in a handler is an error reply, never a trap
        return {"type": "error", "id": request_id, "message": f"{plugin.name}: {error}"}
    finally:
        plugin._contexts.pop(request_id, None)
    call.close()
    return {"type": "error", "id": request_id,
            "message": f"{plugin.name}: the handler waited, which a component cannot"}
