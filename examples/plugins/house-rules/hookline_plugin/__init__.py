"""Write hookline plugins in Python (standard library only).

A plugin is a :class:`Plugin` with handlers registered by decorator; :meth:`Plugin.run` speaks the
protocol of ``docs/protocol.md`` on stdin/stdout: the hello (built from the handlers), request ids,
many calls in flight at once (each request is its own task; sync handlers run on a thread pool),
``cancel`` (the task is cancelled and no reply is sent) and ``goodbye`` (pending work is
cancelled and the process exits). Logs go to stderr (``plugin.log``).

A handler returns ``None`` to keep the value, or the replacement; raising an exception answers
``error`` with its message (the host skips the hook with that note). Handlers may be ``async``.

    from hookline_plugin import Plugin

    plugin = Plugin()

    @plugin.hook("on_user_message")
    def tag(message, cx):
        message["text"] += " [seen]"
        return message

    @plugin.tool("echo", description="Returns its text.", risk="read")
    async def echo(arguments, cx):
        return arguments.get("text", "")

    if __name__ == "__main__":
        plugin.run()

A plugin directory holds this package next to the entry point (the host resolves nothing outside
the plugin's directory, SPEC L2); ``hookline new plugin NAME --lang python`` writes one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import json
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Dict, IO, List, Optional, Union

__all__ = [
    "PROTOCOL_VERSION",
    "HOOKS",
    "RAW_HOOKS",
    "Context",
    "ToolContext",
    "ToolResult",
    "Plugin",
    "PluginError",
]

#: The protocol version this kit speaks.
PROTOCOL_VERSION = 1

#: Ordinary hooks, by wire name (SPEC P2).
HOOKS = (
    "on_session_started",
    "on_session_ended",
    "on_prompt",
    "on_user_message",
    "on_turn_started",
    "on_turn_finished",
    "transform_model",
    "on_model_response",
    "on_tool_call",
    "on_tool_result",
    "on_approval",
    "on_compaction",
)

#: Raw hooks, by wire name (SPEC R), registered apart from ordinary hooks.
RAW_HOOKS = ("rebuild_model", "rewrite_prompt", "rewrite_compaction", "rewrite_approval")

RISKS = ("read", "write", "execute", "critical")
AUTHORITIES = ("workspace", "host")

Json = Any
Handler = Callable[..., Union[Json, Awaitable[Json]]]


class PluginError(Exception):
    """A plugin defined wrongly (an unknown hook, a name registered twice)."""


@dataclass
class Context:
    """What a hook or event handler knows about its call."""

    #: The request id.
    id: int
    #: The hook's wire name, or the event key.
    name: str
    #: The session the call belongs to ("" for events).
    session: str = ""
    #: Set once the host has cancelled the call; a sync handler may check it to stop early.
    cancelled: threading.Event = field(default_factory=threading.Event)
    #: The W3C trace context of the host's span for this call (``00-<trace>-<span>-<flags>``),
    #: when the host exports traces; start your own spans under it to join the turn's trace.
    traceparent: Optional[str] = None


@dataclass
class ToolContext(Context):
    """What a tool knows about its call: the session facts hooks read (SPEC P2.1)."""

    #: The session's workspace root.
    workspace_root: str = ""
    #: The session's approval mode at the time of the call.
    approval_mode: str = ""


@dataclass
class ToolResult:
    """A tool's answer; a handler may also return a plain string (a success)."""

    text: str
    success: bool = True


@dataclass
class _Tool:
    handler: Handler
    description: str
    risk: str
    authority: str


class Plugin:
    """A plugin: register handlers with the decorators, then call :meth:`run`."""

    def __init__(self, name: Optional[str] = None, max_workers: int = 16) -> None:
        #: The plugin's name (the host passes it in ``HOOKLINE_PLUGIN``).
        self.name = name or os.environ.get("HOOKLINE_PLUGIN", "plugin")
        self._hooks: Dict[str, Handler] = {}
        self._raw_hooks: Dict[str, Handler] = {}
        self._events: Dict[str, Handler] = {}
        self._tools: Dict[str, _Tool] = {}
        self._max_workers = max_workers
        self._write_lock = threading.Lock()
        self._out: IO[str] = sys.stdout
        self._tasks: Dict[int, "asyncio.Task[None]"] = {}
        self._contexts: Dict[int, Context] = {}

    # Registration -------------------------------------------------------------------------

    def hook(self, name: str) -> Callable[[Handler], Handler]:
        """Registers an ordinary hook handler ``(value, cx) -> replacement or None``."""
        if name not in HOOKS:
            raise PluginError(f"'{name}' is not an ordinary hook (one of {', '.join(HOOKS)})")
        return self._register(self._hooks, name)

    def raw_hook(self, name: str) -> Callable[[Handler], Handler]:
        """Registers a raw hook handler (SPEC R); the host notes that the plugin has one."""
        if name not in RAW_HOOKS:
            raise PluginError(f"'{name}' is not a raw hook (one of {', '.join(RAW_HOOKS)})")
        return self._register(self._raw_hooks, name)

    def event(self, key: str) -> Callable[[Handler], Handler]:
        """Subscribes a handler ``(context, cx) -> None`` to a gateway event key or family
        (``command:new``, ``session``). Only ``agent:bootstrap`` may return a replacement (the
        new ``bootstrapFiles`` list)."""
        if not key:
            raise PluginError("an event key cannot be empty")
        return self._register(self._events, key)

    def tool(
        self,
        name: str,
        description: str = "",
        risk: str = "read",
        authority: str = "workspace",
    ) -> Callable[[Handler], Handler]:
        """Declares a tool whose handler ``(arguments, cx: ToolContext)`` returns a string, a
        :class:`ToolResult`, or raises (a failed result with the error's text)."""
        if risk not in RISKS:
            raise PluginError(f"risk '{risk}' is not one of {', '.join(RISKS)}")
        if authority not in AUTHORITIES:
            raise PluginError(f"authority '{authority}' is not one of {', '.join(AUTHORITIES)}")
        if name in self._tools:
            raise PluginError(f"the tool '{name}' is declared twice")

        def register(handler: Handler) -> Handler:
            self._tools[name] = _Tool(handler, description, risk, authority)
            return handler

        return register

    def _register(self, table: Dict[str, Handler], name: str) -> Callable[[Handler], Handler]:
        if name in table:
            raise PluginError(f"'{name}' has two handlers")

        def register(handler: Handler) -> Handler:
            table[name] = handler
            return handler

        return register

    def hello(self) -> Dict[str, Json]:
        """The hello line: exactly what is registered, so nothing implemented goes unlisted."""
        return {
            "type": "hello",
            "protocol": PROTOCOL_VERSION,
            "hooks": list(self._hooks),
            "raw_hooks": list(self._raw_hooks),
            "events": list(self._events),
            "tools": [
                {"name": n, "description": t.description, "risk": t.risk, "authority": t.authority}
                for n, t in self._tools.items()
            ],
        }

    # Running ------------------------------------------------------------------------------

    def log(self, *parts: Any) -> None:
        """Writes a log line to stderr (the host shows it with ``hookline ... --verbose``)."""
        print(*parts, file=sys.stderr, flush=True)

    def run(self, stdin: Optional[IO[str]] = None, stdout: Optional[IO[str]] = None) -> None:
        """Says hello, then answers requests until ``goodbye`` or the end of stdin."""
        self._out = stdout or sys.stdout
        asyncio.run(self._serve(stdin or sys.stdin))

    async def _serve(self, stdin: IO[str]) -> None:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(self._max_workers))
        lines: "asyncio.Queue[Optional[str]]" = asyncio.Queue()

        def read() -> None:
            for line in stdin:
                loop.call_soon_threadsafe(lines.put_nowait, line)
            loop.call_soon_threadsafe(lines.put_nowait, None)

        self._send(self.hello())
        threading.Thread(target=read, name="hookline-stdin", daemon=True).start()
        while True:
            line = await lines.get()
            if line is None:
                break
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError as error:
                self.log(f"{self.name}: unreadable request: {error}")
                continue
            kind = message.get("type")
            if kind == "goodbye":
                break
            if kind == "cancel":
                self._cancel(message.get("id"))
            elif kind in ("hook", "tool", "event"):
                request_id = message.get("id")
                task = asyncio.ensure_future(self._answer(message))
                if isinstance(request_id, int):
                    self._tasks[request_id] = task
            else:
                self.log(f"{self.name}: unknown request type {kind!r}")
        for task in list(self._tasks.values()):
            task.cancel()

    def _cancel(self, request_id: Any) -> None:
        cx = self._contexts.pop(request_id, None)
        if cx is not None:
            cx.cancelled.set()
        task = self._tasks.pop(request_id, None)
        if task is not None:
            task.cancel()

    async def _answer(self, message: Dict[str, Json]) -> None:
        request_id = message["id"]
        try:
            reply = await self._dispatch(message)
        except asyncio.CancelledError:
            return  # cancelled by the host or at goodbye: no reply
        except Exception as error:  # a bug in a handler is an error reply, never a dead plugin
            reply = {"type": "error", "id": request_id, "message": f"{self.name}: {error}"}
        finally:
            self._tasks.pop(request_id, None)
            cx = self._contexts.pop(request_id, None)
        if cx is not None and cx.cancelled.is_set():
            return
        self._send(reply)

    async def _dispatch(self, message: Dict[str, Json]) -> Dict[str, Json]:
        request_id = message["id"]
        kind = message["type"]
        if kind == "tool":
            return await self._tool(message)
        if kind == "hook":
            name = message["hook"]
            handler = self._hooks.get(name) or self._raw_hooks.get(name)
            cx = Context(
                request_id, name, message.get("session", ""), traceparent=message.get("traceparent")
            )
            value = message.get("value")
        else:
            name = message["key"]
            handler = self._event_handler(name)
            cx = Context(request_id, name, traceparent=message.get("traceparent"))
            value = message.get("context")
        if handler is None:
            return {"type": "keep", "id": request_id}
        self._contexts[request_id] = cx
        result = await self._call(handler, value, cx)
        if result is None:
            return {"type": "keep", "id": request_id}
        return {"type": "replace", "id": request_id, "value": result}

    def _event_handler(self, key: str) -> Optional[Handler]:
        family = key.split(":", 1)[0]
        return self._events.get(key) or self._events.get(family)

    async def _tool(self, message: Dict[str, Json]) -> Dict[str, Json]:
        request_id = message["id"]
        tool = self._tools.get(message.get("tool", ""))
        if tool is None:
            return {"type": "error", "id": request_id, "message": f"no tool {message.get('tool')!r}"}
        cx = ToolContext(
            request_id,
            message["tool"],
            message.get("session", ""),
            workspace_root=message.get("workspace_root", ""),
            approval_mode=message.get("approval_mode", ""),
            traceparent=message.get("traceparent"),
        )
        self._contexts[request_id] = cx
        try:
            result = await self._call(tool.handler, message.get("arguments", {}), cx)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            result = ToolResult(str(error), success=False)
        if not isinstance(result, ToolResult):
            result = ToolResult("" if result is None else str(result))
        value = {"text": result.text, "success": result.success}
        return {"type": "replace", "id": request_id, "value": value}

    async def _call(self, handler: Handler, value: Json, cx: Context) -> Json:
        if inspect.iscoroutinefunction(handler):
            return await handler(value, cx)
        loop = asyncio.get_running_loop()
        result = await loop.run_in_executor(None, handler, value, cx)
        if inspect.isawaitable(result):
            return await result
        return result

    def _send(self, message: Dict[str, Json]) -> None:
        line = json.dumps(message, separators=(",", ":")) + "\n"
        with self._write_lock:
            self._out.write(line)
            self._out.flush()
