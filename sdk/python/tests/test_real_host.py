"""A plugin built with the kit, run by the real `hookline` binary."""
import json
import subprocess
from pathlib import Path

from conftest import SCENARIO


def hookline(binary: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(binary), *args], cwd=cwd, capture_output=True, text=True, timeout=60
    )


def test_hooks_check_passes(hookline_bin, plugin_dir):
    root = plugin_dir.parents[1]
    out = hookline(hookline_bin, "hooks", "check", "--plugins", str(plugin_dir.parent),
                   "--workspace", str(root), cwd=root)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 plugin(s) loaded, 0 with problems." in out.stdout


def test_run_calls_hooks_raw_hooks_events_and_tools(hookline_bin, plugin_dir):
    root = plugin_dir.parents[1]
    out = hookline(hookline_bin, "run", str(SCENARIO), "--json", "--verbose",
                   "--plugins", str(plugin_dir.parent), "--workspace", str(root), cwd=root)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    events = report["events"]
    users = [e["text"] for e in events if e["event"] == "user"]
    assert users == ["hello [kit]", "again [kit]"]
    systems = [e["text"] for e in events if e["event"] == "system-text"]
    assert systems and all(text.endswith("\nKit rules.") for text in systems)
    runs = [(e["tool"], e["success"], e["text"]) for e in events if e["event"] == "tool-run"]
    # The tool sees the session and the mode current at the call (changed mid-session).
    assert runs == [
        ("kit_echo", True, "hi from s1 allow-workspace"),
        ("kit_echo", True, "ho from s1 ask-all"),
    ]
    notes = [n["text"] if isinstance(n, dict) else n for n in report["notes"]]
    assert not [n for n in notes if "skipped" in n or "broke" in n], notes
    assert "[kit] kit saw command:new" in out.stderr
