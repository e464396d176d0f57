"""Builds the kit's test plugin with `python3 -m ziglang cc` (as the README says) for the ABI
tests of sdk/tests/wasm_abi.py; skips with the reason when ziglang or wasmtime is missing
(fails under HOOKLINE_REQUIRE_SYSTEM_TESTS=1)."""
import sys
from pathlib import Path

import pytest

KIT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(KIT.parent / "tests"))

import wasm_abi  # noqa: E402

# The README's build line, with the test plugin for plugin.c.
BUILD = ["cc", "--target=wasm32-freestanding", "-nostdlib", "-Os", "-Wl,--no-entry",
         "-Wall", "-Wextra", "-Werror"]


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> Path:
    reason = wasm_abi.tools_missing()
    if reason:
        pytest.skip(reason)
    out = tmp_path_factory.mktemp("wasm-c") / "kit.wasm"
    wasm_abi.zig(*BUILD, "-I.", "-o", str(out), "tests/kit_plugin.c", "hookline.c", cwd=KIT)
    return out


@pytest.fixture
def guest(built):
    return wasm_abi.Guest(built)
