"""Write hookline plugins in Python (standard library only).

A plugin is a :class:`Plugin` with handlers registered by decorator; :meth:`Plugin.run` speaks the
protocol of ``docs/protocol.md`` on stdin/stdout: the hello (built from the handlers), request ids,
many calls in flight at once, ``cancel`` (the call is cancelled and no reply is sent) and
``goodbye`` (pending work is cancelled and the process exits). Logs go to stderr (``plugin.log``).

Calls are read, decoded (``json``), dispatched and answered on the event loop's own thread, with no
thread or task hop per call: a sync handler runs inline, an async one runs inline until it first
waits (most finish there) and only then becomes a task, so the calls of other sessions go on
meanwhile. Every reply ready after one read of stdin leaves in one write. An async handler is a
task (on Python 3.12 and later an eager one: it runs inline until it first waits). A sync handler
that blocks (I/O, sleeps) is registered with ``blocking=True`` and runs on a thread pool instead.
A plugin of sync hooks only (no tools, no events, none blocking) is served by a plain read loop
with no event loop at all, until one of its handlers returns an awaitable: the event loop then
takes over.

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
import select
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
    #: The W3C trace context of the host's span for this call (``00-<trace>-<span>-<flags>``),
    #: when the host exports traces; start your own spans under it to join the turn's trace.
    traceparent: Optional[str] = None
    _cancelled: Optional[threading.Event] = field(default=None, repr=False, compare=False)

    @property
    def cancelled(self) -> threading.Event:
        """Set once the host has cancelled the call; a blocking handler may check it to stop
        early. Made when first asked for: most calls never need one."""
        if self._cancelled is None:
            self._cancelled = threading.Event()
        return self._cancelled


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
        self._blocking: set = set()
        self._inline: Dict[Handler, bool] = {}
        self._replies: List[str] = []
        self._flush_due = False
        self._done: Optional[Any] = None
        #: Calls are answered by the plain read loop (no event loop yet).
        self._plain = False
        #: Awaitables sync handlers returned in the plain loop, for the event loop to finish.
        self._adopted: List[Any] = []

    # Registration -------------------------------------------------------------------------

    def hook(self, name: str, blocking: bool = False) -> Callable[[Handler], Handler]:
        """Registers an ordinary hook handler ``(value, cx) -> replacement or None``. A sync
        handler that blocks is registered with ``blocking=True`` (it then runs on a thread)."""
        if name not in HOOKS:
            raise PluginError(f"'{name}' is not an ordinary hook (one of {', '.join(HOOKS)})")
        return self._register(self._hooks, name, blocking)

    def raw_hook(self, name: str, blocking: bool = False) -> Callable[[Handler], Handler]:
        """Registers a raw hook handler (SPEC R); the host notes that the plugin has one."""
        if name not in RAW_HOOKS:
            raise PluginError(f"'{name}' is not a raw hook (one of {', '.join(RAW_HOOKS)})")
        return self._register(self._raw_hooks, name, blocking)

    def event(self, key: str, blocking: bool = False) -> Callable[[Handler], Handler]:
        """Subscribes a handler ``(context, cx) -> None`` to a gateway event key or family
        (``command:new``, ``session``). Only ``agent:bootstrap`` may return a replacement (the
        new ``bootstrapFiles`` list)."""
        if not key:
            raise PluginError("an event key cannot be empty")
        return self._register(self._events, key, blocking)

    def tool(
        self,
        name: str,
        description: str = "",
        risk: str = "read",
        authority: str = "workspace",
        blocking: bool = False,
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
            if blocking:
                self._blocking.add(handler)
            self._tools[name] = _Tool(handler, description, risk, authority)
            return handler

        return register

    def _register(
        self, table: Dict[str, Handler], name: str, blocking: bool
    ) -> Callable[[Handler], Handler]:
        if name in table:
            raise PluginError(f"'{name}' has two handlers")

        def register(handler: Handler) -> Handler:
            if blocking:
                self._blocking.add(handler)
            # Decided once: a sync handler that does not block is called inline.
            self._inline[handler] = not blocking and not inspect.iscoroutinefunction(handler)
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
        stdin = stdin or sys.stdin
        fd = _readable_fd(stdin)
        if fd is not None and self._answers_where_read():
            pending = self._serve_plainly(fd)
            if pending is None:
                return
            # A sync handler returned an awaitable: from here on the event loop serves.
            asyncio.run(self._serve(stdin, pending))
            return
        asyncio.run(self._serve(stdin))

    def _answers_where_read(self) -> bool:
        """Whether every call can be answered as it is read, with no event loop: only sync hooks
        that do not block, no tools and no event subscriptions (issue 47)."""
        handlers = list(self._hooks.values()) + list(self._raw_hooks.values())
        return (
            not self._tools
            and not self._events
            and all(self._inline.get(handler, False) for handler in handlers)
        )

    def _serve_plainly(self, fd: int) -> Optional[bytes]:
        """Answers calls as they are read, each read's replies in one write, with no event loop
        (an event loop's turn per read is most of what a call costs the kit). Returns ``None``
        at ``goodbye`` or the end of input; else, once a sync handler returned an awaitable
        (only an event loop can finish it, see :meth:`_serve`), the part of a line read after
        the last whole one."""
        self._plain = True
        # What `goodbye` sets (no event loop yet to make the future of).
        self._done = concurrent.futures.Future()
        self._flush_due = True
        self._send(self.hello())
        self._flush()
        pending = b""
        while True:
            chunk = _read(fd)
            if chunk is None:
                select.select([fd], [], [])  # a non-blocking stdin: wait until it has more
                continue
            if not chunk:
                break
            *lines, pending = (pending + chunk).split(b"\n")
            self._lines(lines)
            if self._done.done():
                break
            if self._adopted:
                self._plain = False
                return pending
        # Ended: calls still waiting are dropped, as at goodbye on the event loop.
        for _, _, result in self._adopted:
            _close(result)
        self._adopted = []
        return None

    async def _serve(self, stdin: IO[str], pending: Optional[bytes] = None) -> None:
        """Serves on an event loop. ``pending``: the plain loop said hello and hands over the
        calls in :attr:`_adopted` and the part of a line it read after the last whole one."""
        loop = asyncio.get_running_loop()
        loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(self._max_workers))
        self._done = loop.create_future()
        eager = getattr(asyncio, "eager_task_factory", None)
        if eager is not None:
            loop.set_task_factory(eager)
        if pending is None:
            self._send(self.hello())
            self._flush()
        for request_id, cx, result in self._adopted:
            if cx.cancelled.is_set():
                _close(result)  # cancelled before the event loop took it: no reply
            else:
                self._finish_later(request_id, result)
        self._adopted = []
        fd = _readable_fd(stdin)
        if fd is None:
            self._read_on_thread(loop, stdin)
        else:
            buffered = [pending or b""]

            def on_readable() -> None:
                chunk = _read(fd)
                if chunk is None:
                    return
                if not chunk:
                    self._end()
                    return
                *lines, buffered[0] = (buffered[0] + chunk).split(b"\n")
                self._lines(lines)

            loop.add_reader(fd, on_readable)
        try:
            await self._done
        finally:
            if fd is not None:
                loop.remove_reader(fd)
            for task in list(self._tasks.values()):
                task.cancel()
            self._flush()

    def _read_on_thread(self, loop: asyncio.AbstractEventLoop, stdin: IO[str]) -> None:
        """For a stdin without a file descriptor: lines are read on a thread."""

        def read() -> None:
            for line in stdin:
                loop.call_soon_threadsafe(self._lines, [line])
            loop.call_soon_threadsafe(self._end)

        threading.Thread(target=read, name="hookline-stdin", daemon=True).start()

    def _end(self) -> None:
        if self._done is not None and not self._done.done():
            self._done.set_result(None)

    def _lines(self, lines: List[Any]) -> None:
        """Handles the lines of one read; every reply ready at its end leaves in one write."""
        # The flush at the end takes every reply queued meanwhile: none schedules one of its own.
        self._flush_due = True
        try:
            for line in lines:
                if self._done is None or self._done.done():
                    return
                if not line.strip():
                    continue
                try:
                    message = json.loads(line)
                except ValueError as error:
                    self.log(f"{self.name}: unreadable request: {error}")
                    continue
                self._request(message)
        finally:
            self._flush()

    def _request(self, message: Dict[str, Json]) -> None:
        kind = message.get("type")
        if kind == "goodbye":
            self._end()
        elif kind == "cancel":
            self._cancel(message.get("id"))
        elif kind in ("hook", "tool", "event"):
            self._answer(message)
        else:
            self.log(f"{self.name}: unknown request type {kind!r}")

    def _cancel(self, request_id: Any) -> None:
        cx = self._contexts.pop(request_id, None)
        if cx is not None:
            cx.cancelled.set()
        task = self._tasks.pop(request_id, None)
        if task is not None:
            task.cancel()

    def _answer(self, message: Dict[str, Json]) -> None:
        """Answers a hook call with a sync handler inline (no coroutine, no task); anything else
        (async or blocking handlers, tools, events) as a task."""
        request_id = message["id"]
        if message["type"] == "hook":
            name = message["hook"]
            handler = self._hooks.get(name) or self._raw_hooks.get(name)
            if handler is None:
                return self._send(_without_handler(message))
            if self._inline.get(handler, False):
                return self._answer_inline(message, name, handler)
        if self._plain:
            # The plain loop serves only while nothing but inline hooks is registered: a tool or
            # an event here is one the hello did not list.
            return self._send(_without_handler(message))
        task = asyncio.ensure_future(self._later(request_id, self._dispatch(message)))
        if isinstance(request_id, int):
            self._tasks[request_id] = task

    def _answer_inline(self, message: Dict[str, Json], name: str, handler: Handler) -> None:
        request_id = message["id"]
        cx = Context(
            request_id, name, message.get("session", ""), traceparent=message.get("traceparent")
        )
        try:
            result = handler(message.get("value"), cx)
        except Exception as error:  # a bug in a handler is an error reply, never a dead plugin
            return self._send(self._error(request_id, error))
        if result is not None and inspect.isawaitable(result):
            # A sync handler that returned an awaitable: it is finished as a task (by the event
            # loop the plain loop hands over to, when there is none yet).
            self._contexts[request_id] = cx
            if self._plain:
                self._adopted.append((request_id, cx, result))
            else:
                self._finish_later(request_id, result)
            return
        self._send(_reply(request_id, result))

    def _finish_later(self, request_id: Any, result: Awaitable[Json]) -> None:
        task = asyncio.ensure_future(self._later(request_id, _settle(request_id, result)))
        if isinstance(request_id, int):
            self._tasks[request_id] = task

    async def _later(self, request_id: Any, call: Awaitable[Dict[str, Json]]) -> None:
        """Finishes a call as a task."""
        try:
            reply = await call
        except asyncio.CancelledError:
            self._contexts.pop(request_id, None)
            return  # cancelled by the host or at goodbye: no reply
        except Exception as error:
            reply = self._error(request_id, error)
        finally:
            self._tasks.pop(request_id, None)
        self._reply(request_id, reply)

    def _error(self, request_id: Any, error: BaseException) -> Dict[str, Json]:
        return {"type": "error", "id": request_id, "message": f"{self.name}: {error}"}

    def _reply(self, request_id: Any, reply: Dict[str, Json]) -> None:
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
            return _without_handler(message)
        self._contexts[request_id] = cx
        return _reply(request_id, await self._call(handler, value, cx))

    def _handler_of(self, message: Dict[str, Json]) -> Optional[Handler]:
        kind = message.get("type")
        if kind == "tool":
            tool = self._tools.get(message.get("tool", ""))
            return None if tool is None else tool.handler
        if kind == "hook":
            name = message.get("hook", "")
            return self._hooks.get(name) or self._raw_hooks.get(name)
        return self._event_handler(message.get("key", ""))

    def _event_handler(self, key: str) -> Optional[Handler]:
        family = key.split(":", 1)[0]
        return self._events.get(key) or self._events.get(family)

    async def _tool(self, message: Dict[str, Json]) -> Dict[str, Json]:
        request_id = message["id"]
        tool = self._tools.get(message.get("tool", ""))
        if tool is None:
            return _without_handler(message)
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
        if handler in self._blocking:
            loop = asyncio.get_running_loop()
            result = await loop.run_in_executor(None, handler, value, cx)
        else:
            result = handler(value, cx)
        if inspect.isawaitable(result):
            return await result
        return result

    def _send(self, message: Dict[str, Json]) -> None:
        """Queues a reply; the replies queued meanwhile leave together at the next flush."""
        self._replies.append(_encode(message))
        if not self._flush_due:
            self._flush_due = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_due = False
        if not self._replies:
            return
        data = "\n".join(self._replies) + "\n"
        self._replies.clear()
        with self._write_lock:
            self._out.write(data)
            self._out.flush()


#: Encodes a reply compactly (one encoder for every call: ``json.dumps`` with options builds one
#: each time).
_encode = json.JSONEncoder(separators=(",", ":")).encode


def _reply(request_id: Any, result: Json) -> Dict[str, Json]:
    if result is None:
        return {"type": "keep", "id": request_id}
    return {"type": "replace", "id": request_id, "value": result}


async def _settle(request_id: Any, result: Awaitable[Json]) -> Dict[str, Json]:
    return _reply(request_id, await result)


def _without_handler(message: Dict[str, Json]) -> Dict[str, Json]:
    """The reply to a call nothing is registered for: an error for a tool, else keep."""
    request_id = message["id"]
    if message["type"] == "tool":
        return {"type": "error", "id": request_id, "message": f"no tool {message.get('tool')!r}"}
    return {"type": "keep", "id": request_id}


def _close(result: Any) -> None:
    """Closes a coroutine that will not be awaited (so Python does not warn about it)."""
    close = getattr(result, "close", None)
    if callable(close):
        close()


def _read(fd: int) -> Optional[bytes]:
    """One read of stdin: its bytes; ``b""`` at its end (or once it broke); ``None`` when there
    is nothing yet (a non-blocking stdin)."""
    try:
        return os.read(fd, 1 << 16)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def _readable_fd(stdin: IO[str]) -> Optional[int]:
    """stdin's file descriptor, when the event loop can watch it (a pipe, a socket, a tty)."""
    try:
        fd = stdin.fileno()
    except (AttributeError, OSError, ValueError):
        return None
    return fd if isinstance(fd, int) and fd >= 0 else None
