"""Builds the component kit's test plugin with componentize-py (as the README says) and
instantiates it with PyPI's wasmtime; skips with the reason when either is missing (fails under
HOOKLINE_REQUIRE_SYSTEM_TESTS=1)."""
import subprocess
import sys
from pathlib import Path

import pytest

KIT = Path(__file__).resolve().parents[1]
REPO = KIT.parents[1]
sys.path.insert(0, str(KIT.parent / "tests"))

import wasm_abi  # noqa: E402


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> Path:
    for module in ("componentize_py", "wasmtime"):
        try:
            __import__(module)
        except ImportError:
            pytest.skip(wasm_abi.missing(f"the Python package {module}",
                                         "python3 -m pip install componentize-py wasmtime"))
    out = tmp_path_factory.mktemp("wasm-python") / "plugin.wasm"
    # The `componentize-py` command, run by this Python (it is the package's script()).
    script = "import sys, componentize_py; sys.argv[0] = 'componentize-py'; componentize_py.script()"
    build = [sys.executable, "-c", script, "-d", str(REPO / "docs" / "wasm"),
             "-w", "plugin", "componentize", "kit_plugin", "-p", str(KIT / "tests"),
             "-p", str(KIT), "-p", str(REPO / "sdk" / "python" / "src"), "-o", str(out)]
    done = subprocess.run(build, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


@pytest.fixture(scope="session")
def guest(built):
    return wasm_abi.ComponentGuest(built)
