"""The Zig kit's test plugin against the guest ABI (the tests are sdk/tests/wasm_abi.py's)."""
import shutil

import wasm_abi
from conftest import BUILD, KIT
from wasm_abi import *  # noqa: F401,F403  (the shared test_* functions)


LOGGING = """const hookline = @import("hookline.zig");
pub const hello: hookline.Hello = .{ .events = &.{"command:new"} };
pub fn handle(rq: *const hookline.Request) !hookline.Reply {
    hookline.log(rq.name);
    return .keep;
}
comptime {
    hookline.exportPlugin(@This());
}
"""


def test_a_plugin_that_logs_imports_hookline_log_and_nothing_else(built, tmp_path):
    shutil.copy(KIT / "hookline.zig", tmp_path / "hookline.zig")
    (tmp_path / "plugin.zig").write_text(LOGGING)
    wasm_abi.zig(*BUILD, cwd=tmp_path)
    guest = wasm_abi.Guest(tmp_path / "plugin.wasm")
    assert [(i.module, i.name) for i in guest.module.imports] == [("hookline", "log")]
    assert guest.call(wasm_abi.event_request(3)) == {"type": "keep", "id": 3}
    assert guest.logs == ["command:new"]
