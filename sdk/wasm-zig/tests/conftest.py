"""Builds the kit's test plugin with `python3 -m ziglang build-exe` (the README's command, in a
directory laid out as a plugin's: plugin.zig beside hookline.zig) for the ABI tests of
sdk/tests/wasm_abi.py; skips with the reason when ziglang or wasmtime is missing (fails under
HOOKLINE_REQUIRE_SYSTEM_TESTS=1)."""
import shutil
import sys
from pathlib import Path

import pytest

KIT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(KIT.parent / "tests"))

import wasm_abi  # noqa: E402

# The README's build line.
BUILD = ["build-exe", "plugin.zig", "-target", "wasm32-freestanding", "-fno-entry",
         "-O", "ReleaseSmall", "--export=hookline_abi", "--export=hookline_alloc",
         "--export=hookline_hello", "--export=hookline_call", "-femit-bin=plugin.wasm"]


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> Path:
    reason = wasm_abi.tools_missing()
    if reason:
        pytest.skip(reason)
    plugin = tmp_path_factory.mktemp("wasm-zig")
    shutil.copy(KIT / "hookline.zig", plugin / "hookline.zig")
    shutil.copy(KIT / "tests" / "kit_plugin.zig", plugin / "plugin.zig")
    wasm_abi.zig(*BUILD, cwd=plugin)
    return plugin / "plugin.wasm"


@pytest.fixture
def guest(built):
    return wasm_abi.Guest(built)
