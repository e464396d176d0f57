"""The kit's side of the protocol, driven directly: hello, ids, calls in flight, cancel, errors,
goodbye. The host is played by the test, one JSON line at a time."""
import json
import time

import pytest

from hookline_plugin import Plugin, PluginError

from fake_host import FakeHost


@pytest.fixture
def host(plugin_dir):
    fake = FakeHost(plugin_dir)
    yield fake
    fake.stop()


def tool(host, id, name, **arguments):
    host.send(type="tool", id=id, tool=name, arguments=arguments, workspace_root="/w",
              session="s9", approval_mode="ask-all")


def test_hello_lists_exactly_what_is_registered(host):
    assert host.hello["protocol"] == 1
    assert host.hello["hooks"] == ["on_user_message"]
    assert host.hello["raw_hooks"] == ["rewrite_prompt"]
    assert host.hello["events"] == ["command:new"]
    assert [t["name"] for t in host.hello["tools"]] == ["kit_echo", "kit_sleep", "kit_fail"]
    assert host.close() == 0


def test_many_calls_in_flight_are_answered_by_id_in_any_order(host):
    tool(host, 1, "kit_sleep", seconds=0.5)
    tool(host, 2, "kit_echo", text="quick")
    host.send(type="hook", id=3, hook="on_user_message", session="s9", value={"text": "x"})
    replies = {r["id"]: r for r in (host.read(), host.read(), host.read())}
    assert replies[2]["value"] == {"text": "quick from s9 ask-all", "success": True}
    assert replies[3] == {"type": "replace", "id": 3, "value": {"text": "x [kit]"}}
    assert replies[1]["value"]["text"] == "slept 0.5"
    assert host.close() == 0


def test_a_calls_traceparent_reaches_the_handlers_context(host):
    traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    host.send(type="hook", id=1, hook="on_user_message", session="s9", value={"text": "x"},
              traceparent=traceparent)
    assert host.read() == {"type": "replace", "id": 1,
                           "value": {"text": f"x [kit] ({traceparent})"}}
    assert host.close() == 0


def test_a_cancelled_call_gets_no_reply(host):
    tool(host, 1, "kit_sleep", seconds=30)
    host.send(type="cancel", id=1)
    tool(host, 2, "kit_echo", text="after")
    assert host.read()["id"] == 2
    started = time.monotonic()
    assert host.close() == 0
    assert time.monotonic() - started < 5, "goodbye does not wait for cancelled work"
    assert host.process.stdout.read() == "", "no reply to the cancelled call"


def test_failures_become_error_replies_and_unknown_hooks_keep(host):
    tool(host, 1, "kit_fail")
    assert host.read() == {"type": "replace", "id": 1,
                           "value": {"text": "kit_fail always fails", "success": False}}
    host.send(type="hook", id=2, hook="on_prompt", session="s9", value={})
    assert host.read() == {"type": "keep", "id": 2}
    host.send(type="event", id=3, key="command:new", context={})
    assert host.read() == {"type": "keep", "id": 3}
    host.send(type="hook", id=4, hook="rewrite_prompt", session="s9", value=None)
    reply = host.read()
    assert reply["type"] == "error" and reply["id"] == 4
    assert host.close() == 0


def test_end_of_input_ends_the_plugin(host):
    host.process.stdin.close()
    assert host.process.wait(timeout=5) == 0


def test_definitions_are_checked_when_written():
    plugin = Plugin("p")
    with pytest.raises(PluginError):
        plugin.hook("on_nothing")
    with pytest.raises(PluginError):
        plugin.raw_hook("on_prompt")
    with pytest.raises(PluginError):
        plugin.tool("t", risk="harmless")
    plugin.hook("on_prompt")(lambda value, cx: None)
    with pytest.raises(PluginError):
        plugin.hook("on_prompt")


def test_the_replies_to_one_read_leave_in_one_write_and_one_flush():
    """Issue 47: a read's replies are flushed once, at its end; none schedules a flush of its
    own (an extra turn of the event loop, a wake-up's worth of CPU, for every read)."""
    import asyncio

    plugin = Plugin("p")
    plugin.hook("on_prompt")(lambda value, cx: None)
    plugin.hook("on_user_message")(lambda value, cx: {"text": value["text"] + "!"})

    class Output:
        def __init__(self):
            self.writes = []

        def write(self, data):
            self.writes.append(data)

        def flush(self):
            pass

    out = Output()
    flushes = []
    flush = plugin._flush

    def counted():
        flushes.append(1)
        flush()

    async def main():
        plugin._out = out
        plugin._done = asyncio.get_running_loop().create_future()
        plugin._flush = counted
        plugin._lines([
            json.dumps({"type": "hook", "id": 1, "hook": "on_prompt", "value": {}}).encode(),
            json.dumps({"type": "hook", "id": 2, "hook": "on_user_message",
                        "value": {"text": "hi"}}).encode(),
            json.dumps({"type": "hook", "id": 3, "hook": "on_tool_call", "value": {}}).encode(),
        ])
        for _ in range(3):
            await asyncio.sleep(0)

    asyncio.run(main())
    assert len(out.writes) == 1, out.writes
    replies = [json.loads(line) for line in out.writes[0].splitlines()]
    assert replies == [
        {"type": "keep", "id": 1},
        {"type": "replace", "id": 2, "value": {"text": "hi!"}},
        {"type": "keep", "id": 3},
    ]
    assert len(flushes) == 1
