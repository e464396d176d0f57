"""The C kit's test plugin against the guest ABI (the tests are sdk/tests/wasm_abi.py's)."""
import wasm_abi
from conftest import BUILD, KIT
from wasm_abi import *  # noqa: F401,F403  (the shared test_* functions)


LOGGING = """#include "hookline.h"
static const char *const events[] = {"command:new", NULL};
const hl_hello hl_plugin = {.events = events};
void hl_handle(const hl_request *rq) { hl_log(rq->name); }
"""


def test_a_plugin_that_logs_imports_hookline_log_and_nothing_else(built, tmp_path):
    (tmp_path / "plugin.c").write_text(LOGGING)
    out = tmp_path / "plugin.wasm"
    wasm_abi.zig(*BUILD, f"-I{KIT}", "-o", str(out), "plugin.c", str(KIT / "hookline.c"),
                 cwd=tmp_path)
    guest = wasm_abi.Guest(out)
    assert [(i.module, i.name) for i in guest.module.imports] == [("hookline", "log")]
    assert guest.call(wasm_abi.event_request(3)) == {"type": "keep", "id": 3}
    assert guest.logs == ["command:new"]
