"""The host's side of the protocol, played by a test: a plugin process and its pipes."""
import json
import subprocess
import sys
from pathlib import Path


class FakeHost:
    """Runs `plugin.py` in `plugin_dir` (as plugin `name`) and reads its hello."""

    def __init__(self, plugin_dir: Path, name: str = "kit"):
        self.process = subprocess.Popen(
            [sys.executable, "plugin.py"], cwd=plugin_dir, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, env={"HOOKLINE_PLUGIN": name},
        )
        self.hello = self.read()

    def send(self, **message):
        self.send_all(message)

    def send_all(self, *messages):
        """Sends `messages` in one write: the plugin reads them together."""
        self.process.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        self.process.stdin.flush()

    def read(self):
        line = self.process.stdout.readline()
        assert line, "the plugin closed its output"
        return json.loads(line)

    def close(self):
        """Says goodbye; the plugin's exit code."""
        self.send(type="goodbye")
        return self.process.wait(timeout=5)

    def stop(self):
        """Kills the plugin if it still runs (a fixture's teardown)."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
