"""The WebAssembly kits' check against the core-module guest ABI v1 (docs/wasm.md), with the
`wasmtime` package from PyPI: no hookline host needed.

`Guest(path)` instantiates a module (offering it `hookline.log` only, which it may import or not)
and drives it as a host does: `hello()`,
then `call(request)` (`hookline_alloc`, copy, `hookline_call`, copy the reply out). The `test_*`
functions are the kits' shared tests: each kit's `tests/test_kit.py` imports them beside a
`guest` fixture building its own test plugin, which behaves as `sdk/wasm-c/tests/kit_plugin.c`
does.

As a program, `python3 wasm_abi.py PLUGIN.wasm` checks a built plugin (exports, imports, abi,
hello, a hook call), prints its hello, then answers each request line of its stdin (JSON) with
the guest's reply line: a host in miniature, which `hookline new plugin --lang c|zig`'s tests use.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REQUIRE_ENV = "HOOKLINE_REQUIRE_SYSTEM_TESTS"
ABI_EXPORTS = {"memory", "hookline_abi", "hookline_alloc", "hookline_hello", "hookline_call"}
HOOKS = {
    "on_session_started", "on_session_ended", "on_prompt", "on_user_message", "on_turn_started",
    "on_turn_finished", "transform_model", "on_model_response", "on_tool_call", "on_tool_result",
    "on_approval", "on_compaction",
}
RAW_HOOKS = {"rebuild_model", "rewrite_prompt", "rewrite_compaction", "rewrite_approval"}


def missing(what: str, install: str) -> str:
    """The reason a system test cannot run; raises instead under HOOKLINE_REQUIRE_SYSTEM_TESTS=1."""
    why = f"needs {what}, which is missing ({install})"
    if os.environ.get(REQUIRE_ENV) == "1":
        raise RuntimeError(f"{why}; {REQUIRE_ENV}=1 makes this a failure")
    return f"{why}; set {REQUIRE_ENV}=1 to fail instead"


def tools_missing():
    """None when `python3 -m ziglang` and `wasmtime` are importable, else why not (see missing)."""
    for module in ("ziglang", "wasmtime"):
        try:
            __import__(module)
        except ImportError:
            return missing(f"the Python package {module}", "python3 -m pip install ziglang wasmtime")
    return None


def zig(*args: str, cwd: Path) -> None:
    """`python3 -m ziglang ARGS` in `cwd`; raises with its output when it fails."""
    out = subprocess.run([sys.executable, "-m", "ziglang", *args], cwd=cwd,
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"zig {' '.join(args)} failed:\n{out.stdout}{out.stderr}")


class Guest:
    """One instance of a core module, driven through the ABI."""

    def __init__(self, path: Path):
        import wasmtime

        self.engine = wasmtime.Engine()
        self.module = wasmtime.Module.from_file(self.engine, str(path))
        self.store = wasmtime.Store(self.engine)
        # `hookline.log` (the `stdio` capability) for a module that imports it; nothing else.
        self.logs = []
        linker = wasmtime.Linker(self.engine)
        i32 = wasmtime.ValType.i32()
        linker.define_func("hookline", "log", wasmtime.FuncType([i32, i32], []), self._log,
                           access_caller=True)
        self.instance = linker.instantiate(self.store, self.module)
        exports = self.instance.exports(self.store)
        self.memory = exports["memory"]
        self.abi = exports["hookline_abi"]
        self.alloc = exports["hookline_alloc"]
        self._hello = exports["hookline_hello"]
        self._call = exports["hookline_call"]

    def _log(self, caller, ptr: int, length: int) -> None:
        self.logs.append(bytes(caller["memory"].read(caller, ptr, ptr + length)).decode())

    def read(self, packed: int) -> bytes:
        packed &= (1 << 64) - 1
        ptr, length = packed >> 32, packed & 0xFFFFFFFF
        return bytes(self.memory.read(self.store, ptr, ptr + length))

    def hello(self) -> dict:
        return json.loads(self.read(self._hello(self.store)))

    def call_bytes(self, request: bytes) -> bytes:
        ptr = self.alloc(self.store, len(request))
        assert ptr != 0, f"hookline_alloc({len(request)}) had no room"
        self.memory.write(self.store, request, ptr)
        return self.read(self._call(self.store, ptr, len(request)))

    def call(self, request) -> dict:
        raw = request if isinstance(request, bytes) else json.dumps(request).encode()
        return json.loads(self.call_bytes(raw))

    def pages(self) -> int:
        return self.memory.size(self.store)


class ComponentGuest:
    """One instance of a component of the world `docs/wasm/hookline-plugin.wit`, with WASI 0.2
    linked and nothing granted (no files, environment, sockets; output discarded)."""

    def __init__(self, path: Path):
        import wasmtime
        import wasmtime.component as component

        self.engine = wasmtime.Engine()
        self.component = component.Component.from_file(self.engine, str(path))
        self.store = wasmtime.Store(self.engine)
        self.store.set_wasi(wasmtime.WasiConfig())
        linker = component.Linker(self.engine)
        linker.add_wasip2()
        self.instance = linker.instantiate(self.store, self.component)
        guest = self.instance.get_export_index(self.store, "hookline:plugin/guest@1.0.0")
        assert guest is not None, "no export hookline:plugin/guest@1.0.0"
        self._hello = self.instance.get_func(
            self.store, self.instance.get_export_index(self.store, "hello", guest))
        self._call = self.instance.get_func(
            self.store, self.instance.get_export_index(self.store, "call", guest))

    def hello(self) -> dict:
        return json.loads(self._hello(self.store))

    def call_text(self, request: str) -> str:
        return self._call(self.store, request)

    def call(self, request) -> dict:
        return json.loads(self.call_text(request if isinstance(request, str) else json.dumps(request)))


def check_module(path: Path) -> dict:
    """Exports exactly the ABI, imports only `hookline.*`, speaks ABI 1, a valid hello, and
    answers a hook call with its id; returns the hello."""
    guest = Guest(path)
    exports = {export.name for export in guest.module.exports}
    assert exports == ABI_EXPORTS, f"exports {sorted(exports)}, not the ABI's"
    imports = [(i.module, i.name) for i in guest.module.imports]
    assert all(module == "hookline" for module, _ in imports), f"imports {imports}"
    assert guest.abi(guest.store) == 1
    hello = guest.hello()
    check_hello(hello)
    hook = hello["hooks"][0] if hello["hooks"] else "on_tool_call"
    reply = guest.call(hook_request(7, hook, VALUES.get(hook, {})))
    assert reply["id"] == 7 and reply["type"] in ("keep", "replace", "error"), reply
    return hello


def check_hello(hello: dict) -> None:
    """A protocol hello (docs/protocol.md "Handshake")."""
    assert hello["type"] == "hello" and hello["protocol"] == 1, hello
    assert set(hello.get("hooks", [])) <= HOOKS, hello
    assert set(hello.get("raw_hooks", [])) <= RAW_HOOKS, hello
    assert all(isinstance(key, str) for key in hello.get("events", [])), hello
    for tool in hello.get("tools", []):
        assert isinstance(tool["name"], str) and isinstance(tool.get("description", ""), str)
        assert tool["risk"] in ("read", "write", "execute", "critical"), tool
        assert tool["authority"] in ("workspace", "host"), tool


VALUES = {
    "on_prompt": {"mode": "work", "text": "You are a coding agent.", "appended": []},
    "on_user_message": {"text": "hello", "sideQuestion": False},
    "on_tool_call": {"id": "c1", "name": "word_count", "arguments": {"text": "a b"}},
}


def event_request(id: int, key: str = "command:new") -> dict:
    return {"type": "event", "id": id, "key": key, "context": {"commandSource": "cli"}}


def hook_request(id: int, hook: str, value, session: str = "s1") -> dict:
    return {"type": "hook", "id": id, "hook": hook, "session": session, "value": value}


# ---- The kits' shared tests: a `guest` fixture gives a Guest of the kit's test plugin. ---------

def test_the_module_exports_exactly_the_abi_and_imports_nothing(guest):
    assert {e.name for e in guest.module.exports} == ABI_EXPORTS
    assert list(guest.module.imports) == []
    assert guest.abi(guest.store) == 1


def test_hello_is_a_protocol_hello(guest):
    hello = guest.hello()
    check_hello(hello)
    assert hello["hooks"] == ["on_prompt", "on_user_message", "on_tool_call"]
    assert hello["raw_hooks"] == ["rewrite_prompt"]
    assert hello["events"] == ["command:new"]
    assert hello["tools"] == [
        {"name": "kit_echo", "description": "Echoes its text with the session.",
         "risk": "read", "authority": "workspace"},
        {"name": "kit_fail", "description": "Always fails.", "risk": "write", "authority": "host"},
    ]
    assert guest.hello() == hello, "a second hello is the same"


def test_a_prompt_hook_appends_and_a_tool_call_hook_keeps(guest):
    prompt = {"mode": "work", "text": "You are a coding agent.", "appended": ["Use tabs."]}
    reply = guest.call(hook_request(41, "on_prompt", prompt))
    assert reply == {"type": "replace", "id": 41,
                     "value": {**prompt, "appended": ["Use tabs.", "Kit rules."]}}
    empty = guest.call(hook_request(42, "on_prompt", {"mode": "plan", "text": "t"}))
    assert empty["value"] == {"mode": "plan", "text": "t", "appended": ["Kit rules."]}
    assert guest.call(hook_request(43, "on_tool_call", VALUES["on_tool_call"])) == \
        {"type": "keep", "id": 43}
    # An id past 2^53 comes back exactly (JSON numbers are not all doubles).
    big = 2**64 - 1
    raw = guest.call_bytes(json.dumps(hook_request(big, "on_tool_call", {})).encode())
    assert raw == f'{{"type":"keep","id":{big}}}'.encode()


def test_a_string_with_escapes_survives(guest):
    text = 'say "hi" \\ back\n\ttab \u0001 \u00e9 \u4e2d \U0001f600 / end'
    for ensure_ascii in (True, False):
        request = json.dumps(hook_request(5, "on_user_message",
                                          {"text": text, "sideQuestion": False}),
                             ensure_ascii=ensure_ascii).encode()
        reply = json.loads(guest.call_bytes(request))
        assert reply == {"type": "replace", "id": 5,
                         "value": {"text": text + " [kit]", "sideQuestion": False}}
    # A lone surrogate (the host never sends one: it writes Rust strings) is U+FFFD (the C kit)
    # or an error (std.json refuses it), never invalid UTF-8 or a trap.
    raw = guest.call_bytes(b'{"type":"hook","id":6,"hook":"on_user_message","session":"s",'
                           b'"value":{"text":"a\\ud800b"}}')
    reply = json.loads(raw.decode("utf-8"))
    assert reply.get("value") == {"text": "a\ufffdb [kit]"} or reply["type"] == "error", reply
    assert reply["id"] == 6, reply


def test_tools_and_events(guest):
    reply = guest.call({"type": "tool", "id": 8, "tool": "kit_echo",
                        "arguments": {"text": "hi \"you\""}, "workspace_root": "/w",
                        "session": "s\u00e91", "approval_mode": "ask-all"})
    assert reply == {"type": "replace", "id": 8,
                     "value": {"text": "hi \"you\" from s\u00e91", "success": True}}
    reply = guest.call({"type": "tool", "id": 9, "tool": "kit_fail", "arguments": {},
                        "workspace_root": "/w", "session": "s1", "approval_mode": "ask-all"})
    assert reply == {"type": "error", "id": 9, "message": "kit_fail always fails"}
    reply = guest.call({"type": "event", "id": 10, "key": "command:new",
                        "context": {"commandSource": "cli"}, "traceparent": None})
    assert reply == {"type": "keep", "id": 10}


def test_a_request_bigger_than_a_page_works_and_the_arena_is_reused(guest):
    text = "x" * 300_000 + "\u00e9\n"           # several 64 KiB pages, with escapes
    request = hook_request(11, "on_user_message", {"text": text, "sideQuestion": True})
    assert guest.call(request)["value"] == {"text": text + " [kit]", "sideQuestion": True}
    pages = guest.pages()
    for id in range(12, 42):
        request["id"] = id
        assert guest.call(request)["id"] == id
    assert guest.pages() == pages, "each request starts with an empty arena"


def test_a_bad_request_gets_an_error_reply_not_a_trap(guest):
    for bad in (b"", b"not json", b"{", b"[1,2]", b'{"type":"hook"}', b"\xff\xfe{"):
        reply = json.loads(guest.call_bytes(bad))
        assert reply["type"] == "error" and reply["id"] == 0, (bad, reply)
        assert reply["message"]
    for bad in (
        {"type": "hook", "id": 3, "hook": "on_prompt", "session": "s1"},            # no value
        {"type": "hook", "id": 3, "hook": 5, "session": "s1", "value": {}},         # hook not a string
        {"type": "goodbye", "id": 3},
        {"type": "hook", "id": 3, "hook": "on_prompt", "session": "s1", "value": {"mode": "work"}},
    ):
        reply = guest.call(bad)
        assert reply["type"] == "error" and reply["id"] == 3, (bad, reply)
    truncated = json.dumps(hook_request(4, "on_user_message", {"text": "abc"})).encode()[:-3]
    assert json.loads(guest.call_bytes(truncated))["type"] == "error"
    # The instance goes on answering.
    assert guest.call(hook_request(5, "on_tool_call", {})) == {"type": "keep", "id": 5}


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: wasm_abi.py PLUGIN.wasm")
    print(json.dumps(check_module(Path(sys.argv[1]))), flush=True)
    guest = Guest(Path(sys.argv[1]))
    for line in sys.stdin:
        if line.strip():
            print(guest.call_bytes(line.strip().encode()).decode(), flush=True)
