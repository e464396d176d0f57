"""A plugin of sync hooks only is served by a plain read loop, without asyncio (issue 47): the
same replies as on the event loop, one write per read, and a hand-over to the event loop when a
sync handler returns an awaitable."""
import shutil
import time
from pathlib import Path

import pytest

from fake_host import FakeHost

KIT = Path(__file__).resolve().parents[1] / "src" / "hookline_plugin"

PLUGIN = '''
import asyncio

from hookline_plugin import Plugin

plugin = Plugin()


def where():
    return "loop" if asyncio._get_running_loop() is not None else "plain"


@plugin.hook("on_user_message")
def tag(message, cx):
    message["text"] += f" [{where()}]"
    return message


@plugin.hook("on_prompt")
def keep(prompt, cx):
    return None


@plugin.hook("on_tool_call")
def fail(call, cx):
    raise RuntimeError("no tools today")


async def later(message, seconds):
    await asyncio.sleep(seconds)
    message["text"] += " [awaited]"
    return message


@plugin.raw_hook("rewrite_prompt")
def deferred(text, cx):
    # A sync handler that returns an awaitable: only an event loop can finish it.
    return later(text, float(text.get("seconds", 0)))


if __name__ == "__main__":
    plugin.run()
'''


@pytest.fixture
def host(tmp_path):
    shutil.copytree(KIT, tmp_path / "hookline_plugin")
    (tmp_path / "plugin.py").write_text(PLUGIN)
    fake = FakeHost(tmp_path, "plain")
    yield fake
    fake.stop()


def hook(id, name, value):
    return {"type": "hook", "id": id, "hook": name, "session": "s1", "value": value}


def test_sync_hooks_are_answered_without_an_event_loop_as_on_one(host):
    assert host.hello["hooks"] == ["on_user_message", "on_prompt", "on_tool_call"]
    assert host.hello["raw_hooks"] == ["rewrite_prompt"]
    host.send_all(
        hook(1, "on_user_message", {"text": "hi"}),
        hook(2, "on_prompt", {"text": "p"}),
        hook(3, "on_tool_call", {"name": "x"}),
        hook(4, "on_approval", {}),
        {"type": "tool", "id": 5, "tool": "nothing", "arguments": {}},
        {"type": "event", "id": 6, "key": "command:new", "context": {}},
        {"type": "cancel", "id": 1},
    )
    replies = {r["id"]: r for r in (host.read() for _ in range(6))}
    assert replies[1] == {"type": "replace", "id": 1, "value": {"text": "hi [plain]"}}
    assert replies[2] == {"type": "keep", "id": 2}
    assert replies[3]["type"] == "error" and "no tools today" in replies[3]["message"]
    assert replies[4] == {"type": "keep", "id": 4}
    assert replies[5] == {"type": "error", "id": 5, "message": "no tool 'nothing'"}
    assert replies[6] == {"type": "keep", "id": 6}
    assert host.close() == 0


def test_an_awaitable_from_a_sync_handler_hands_the_plugin_to_the_event_loop(host):
    host.send_all(
        hook(1, "rewrite_prompt", {"text": "a", "seconds": 0.05}),
        hook(2, "on_user_message", {"text": "same read"}),
    )
    # The call read with it is answered at once; the awaited one once it is done.
    assert host.read() == {"type": "replace", "id": 2, "value": {"text": "same read [plain]"}}
    assert host.read() == {"type": "replace", "id": 1,
                           "value": {"text": "a [awaited]", "seconds": 0.05}}
    # From here on the event loop serves, cancels included.
    host.send_all(hook(3, "rewrite_prompt", {"text": "b", "seconds": 30}), {"type": "cancel", "id": 3})
    host.send_all(hook(4, "on_user_message", {"text": "after"}))
    assert host.read() == {"type": "replace", "id": 4, "value": {"text": "after [loop]"}}
    started = time.monotonic()
    assert host.close() == 0
    assert time.monotonic() - started < 5
    assert host.process.stdout.read() == ""


def test_a_call_cancelled_in_the_read_that_handed_it_over_gets_no_reply(host):
    host.send_all(
        hook(1, "rewrite_prompt", {"text": "a", "seconds": 30}),
        {"type": "cancel", "id": 1},
        hook(2, "on_user_message", {"text": "x"}),
    )
    assert host.read() == {"type": "replace", "id": 2, "value": {"text": "x [plain]"}}
    host.send_all(hook(3, "on_user_message", {"text": "y"}))
    assert host.read() == {"type": "replace", "id": 3, "value": {"text": "y [loop]"}}
    assert host.close() == 0
    assert host.process.stdout.read() == ""


def test_the_end_of_input_ends_the_plain_loop(host):
    host.process.stdin.close()
    assert host.process.wait(timeout=5) == 0


def test_a_non_blocking_stdin_is_waited_on_not_taken_for_its_end(tmp_path):
    shutil.copytree(KIT, tmp_path / "hookline_plugin")
    (tmp_path / "plugin.py").write_text(
        PLUGIN.replace("if __name__ == \"__main__\":",
                       "import os\nos.set_blocking(0, False)\n\nif __name__ == \"__main__\":"))
    host = FakeHost(tmp_path, "plain")
    try:
        time.sleep(0.2)  # the plugin waits on an empty, non-blocking stdin meanwhile
        host.send_all(hook(1, "on_user_message", {"text": "late"}))
        assert host.read() == {"type": "replace", "id": 1, "value": {"text": "late [plain]"}}
        assert host.close() == 0
    finally:
        host.stop()
