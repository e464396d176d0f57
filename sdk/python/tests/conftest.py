"""Shared fixtures: the real `hookline` binary and a plugin directory built with the kit."""
import os
import shutil
from pathlib import Path

import pytest

KIT = Path(__file__).resolve().parents[1]
REPO = KIT.parents[1]
SCENARIO = REPO / "sdk" / "tests" / "scenario.json"


@pytest.fixture(scope="session")
def hookline_bin() -> Path:
    """The host binary: `$HOOKLINE_BIN`, else the workspace's debug build (`cargo build`) in
    `$CARGO_TARGET_DIR` (relative to the repository) or `target/`."""
    target = REPO / os.environ.get("CARGO_TARGET_DIR", "target")
    path = Path(os.environ.get("HOOKLINE_BIN", target / "debug" / "hookline"))
    if not path.is_file():
        pytest.fail(f"no hookline binary at {path}: run `cargo build --bin hookline` first")
    return path


@pytest.fixture
def plugin_dir(tmp_path: Path) -> Path:
    """`<tmp>/plugins/kit`: the test plugin with the kit beside it (SPEC L2: nothing outside)."""
    target = tmp_path / "plugins" / "kit"
    target.mkdir(parents=True)
    shutil.copy(KIT / "tests" / "kit_plugin.py", target / "plugin.py")
    shutil.copytree(KIT / "src" / "hookline_plugin", target / "hookline_plugin")
    (target / "plugin.json").write_text('{"entry": "plugin.py", "interpreter": "python3"}')
    return target
