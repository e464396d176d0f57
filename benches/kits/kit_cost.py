#!/usr/bin/env python3
"""Each plugin kit's own cost per call beside its raw peer (issue 35), no hookline on the path.

A driver (this script) writes protocol requests to a child's stdin and reads the replies, with
blocking pipes, one call at a time and then IN_FLIGHT calls per write (as a host pipelining many
sessions' calls). Four children:

- python json echo: decodes and encodes each line with the `json` module (the Python peer);
- python kit: an `on_user_message` hook on the Python kit (`sdk/python`), appending " #e";
- node json echo: the same as the Python peer, in Node.js (`JSON.parse`/`JSON.stringify`);
- node kit: the same hook on the Node.js kit (`sdk/node`).

Prints microseconds per call (the median of ROUNDS rounds, the children interleaved) and each
kit's multiple of its peer. Run from the repository root:
`python3 benches/kits/kit_cost.py [seconds per measurement]`. Node.js is optional. With
`HOOKLINE_KIT_BEFORE=<dir>` (a checkout, or any directory holding `sdk/python/src` and
`sdk/node/index.js`), that directory's kits are measured too, in the same rounds.
"""
import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
IN_FLIGHT = 100
ROUNDS = 3
PAYLOAD = "Please refactor the parser so that it reports the line of an error."

PY_KIT = """
import sys
sys.path.insert(0, %r)
from hookline_plugin import Plugin
plugin = Plugin("kit")
@plugin.hook("on_user_message")
def tag(message, cx):
    message["text"] += " #e"
    return message
plugin.run()
"""

NODE_KIT = """
import { Plugin } from %s;
new Plugin("kit").hook("on_user_message", (message) => ({ ...message, text: message.text + " #e" })).run();
"""


def kits(root, label):
    node = shutil.which("node")
    yield f"python kit{label}", [sys.executable, "-c", PY_KIT % os.path.join(root, "sdk/python/src")], "python"
    if node:
        url = json.dumps("file://" + os.path.join(root, "sdk/node/index.js"))
        yield f"node kit{label}", [node, "--input-type=module", "-e", NODE_KIT % url], "node"

NODE_JSON = """
let pending = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => {
  const lines = (pending + chunk).split("\\n");
  pending = lines.pop();
  process.stdout.write(lines.map((l) => JSON.stringify(JSON.parse(l)) + "\\n").join(""));
});
"""


def children():
    """(name, argv, the peer it is measured against or None for a peer)."""
    echo = os.path.join(ROOT, "benches/plugins/echo.py")
    yield "python json echo", [sys.executable, echo, "json"], None
    node = shutil.which("node")
    if node:
        yield "node json echo", [node, "-e", NODE_JSON], None
    for name, argv, lang in kits(ROOT, ""):
        yield name, argv, f"{lang} json echo"
    before = os.environ.get("HOOKLINE_KIT_BEFORE")
    if before:
        for name, argv, lang in kits(before, " (before)"):
            yield name, argv, f"{lang} json echo"


def requests(count, start):
    return b"".join(
        json.dumps({"type": "hook", "id": start + i, "hook": "on_user_message",
                    "session": f"bench-{i}", "value": {"text": PAYLOAD}}).encode() + b"\n"
        for i in range(count))


def measure(argv, hello, in_flight, seconds):
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    out = child.stdout
    if hello:
        out.readline()
    lines = requests(in_flight, 1)
    # One warm-up round: a child's start (Node's especially) is not its cost per call.
    child.stdin.write(lines)
    child.stdin.flush()
    for _ in range(in_flight):
        out.readline()
    calls, started = 0, time.perf_counter()
    deadline = started + seconds
    while time.perf_counter() < deadline:
        child.stdin.write(lines)
        child.stdin.flush()
        for _ in range(in_flight):
            out.readline()
        calls += in_flight
    elapsed = time.perf_counter() - started
    child.kill()
    child.wait()
    return elapsed / calls * 1e6


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    print(f"load average {os.getloadavg()[0]:.2f} (1 min)")
    for in_flight in (1, IN_FLIGHT):
        print(f"{in_flight} call(s) per write:")
        runs = list(children())
        rounds = {name: [] for name, _, _ in runs}
        for _ in range(ROUNDS):
            for name, argv, peer in runs:
                rounds[name].append(measure(argv, peer is not None, in_flight, seconds))
        medians = {name: sorted(values)[len(values) // 2] for name, values in rounds.items()}
        for name, _, peer in runs:
            line = f"  {name:<22} {medians[name]:8.2f} us/call"
            if peer is not None:
                line += f"  {medians[name] / medians[peer]:.2f}x its peer"
            print(line)
    print(f"load average {os.getloadavg()[0]:.2f} (1 min)")


if __name__ == "__main__":
    main()
