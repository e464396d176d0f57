"""The Python kit's handlers served as a component (hookline_component.py), built with
componentize-py and driven through the WIT world with PyPI's wasmtime."""
import json

import wasm_abi


def test_the_hello_is_the_kits(guest):
    hello = guest.hello()
    wasm_abi.check_hello(hello)
    assert hello["hooks"] == ["on_prompt", "on_user_message", "on_tool_call", "on_turn_started"]
    assert hello["events"] == ["command:new"]
    assert [tool["name"] for tool in hello["tools"]] == ["kit_echo", "kit_sleep"]


def test_hooks_get_their_replies_with_their_ids(guest):
    prompt = {"mode": "work", "text": "t", "appended": ["Use tabs."]}
    assert guest.call(wasm_abi.hook_request(41, "on_prompt", prompt)) == {
        "type": "replace", "id": 41, "value": {**prompt, "appended": ["Use tabs.", "Kit rules."]}}
    assert guest.call(wasm_abi.hook_request(42, "on_tool_call", {})) == {"type": "keep", "id": 42}
    text = 'say "hi" \\ back\n\ttab \u0001 \u00e9 \U0001f600'
    reply = guest.call(wasm_abi.hook_request(43, "on_user_message", {"text": text}))
    assert reply == {"type": "replace", "id": 43, "value": {"text": text + " [kit]"}}
    big = "x" * 300_000
    reply = guest.call(wasm_abi.hook_request(44, "on_user_message", {"text": big}))
    assert reply["value"]["text"] == big + " [kit]"


def test_tools_and_events(guest):
    tool = {"type": "tool", "id": 8, "tool": "kit_echo", "arguments": {"text": "hi"},
            "workspace_root": "/w", "session": "s1", "approval_mode": "ask-all"}
    assert guest.call(tool) == {"type": "replace", "id": 8,
                                "value": {"text": "hi from s1", "success": True}}
    # A handler that waits cannot finish inside a component (no event loop): a tool's is a
    # failed result, as any tool that raises is with the kit, and never a trap.
    reply = guest.call({**tool, "id": 9, "tool": "kit_sleep"})
    assert reply["type"] == "replace" and reply["id"] == 9, reply
    assert reply["value"]["success"] is False, reply
    reply = guest.call(wasm_abi.hook_request(11, "on_turn_started", {}))
    assert reply["type"] == "error" and reply["id"] == 11 and "waited" not in reply["message"]
    assert guest.call(wasm_abi.event_request(10)) == {"type": "keep", "id": 10}


def test_a_bad_request_gets_an_error_reply_not_a_trap(guest):
    for bad, id in (("not json", 0), ("[1]", 0), ('{"type":"goodbye","id":3}', 3),
                    ('{"type":"hook"}', 0)):
        reply = json.loads(guest.call_text(bad))
        assert reply["type"] == "error" and reply["id"] == id, (bad, reply)
    assert guest.call(wasm_abi.hook_request(5, "on_tool_call", {})) == {"type": "keep", "id": 5}
