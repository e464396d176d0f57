#!/usr/bin/env python3
"""Turn latency added per hook: `hookline serve` with N Python kit plugins, beside LiteLLM's proxy
with N custom guardrails and Portkey's gateway with N mutators, all in front of the same local
model stub (`scripts/stub-model.py`), the same client, in one sitting (issue 35 item 4).

Usage (from a checkout, after `cargo build --release --bin hookline`):

    python3 benches/gateways/turn_latency.py [--rounds 4] [--turns 200] [--hooks 0,1,4,8]
        [--litellm PATH/TO/litellm] [--portkey PATH/TO/start-server.js]
        [--hookline [LABEL=]PATH ...]

`--clients N` also runs each server with N clients at once for `--seconds` each round (one
process per client; every hookline client on a session of its own) and reports turns/s, p50
and p99. `--hookline` (repeatable) runs the given builds side by side in the same rounds, e.g.
`--hookline before=/tmp/hookline-old --hookline after=target/release/hookline`.
`--commit-per-turn` also runs each hookline build with `serve --commit-per-turn` (one append a
turn instead of durable steps), labelled `<label>/commit`.

Each round also asks the stub directly, twice: with the one-message request the other gateways
forward, and with a conversation growing as a hookline session's does (the same warm-up and
timed turns, each request carrying every earlier user message and answer and asking for a
streamed answer, as hookline asks its model: the request carries the session's history, so the
stub's own time grows with it). Each server's
overhead over the stub is its p50 less the stub's for its kind of request, in the same round
(hookline's without its system text and tool definitions, about 1 KB).

Each gateway is optional beside hookline: give the `litellm` executable of a venv where
`pip install 'litellm[proxy]'` ran, and `start-server.js` of `npm install @portkey-ai/gateway`
(its `build/start-server.js`). Nothing of theirs is part of this repository; this script only
writes their configuration into a temporary directory.

What each hook does:
- hookline: a Python kit plugin (`sdk/python`) with a sync `transform_model` handler that keeps
  the request (one hook call per turn, through the external protocol), or with `--hook
  on_prompt` an `on_prompt` handler that keeps the prompt; each round starts a fresh session
  (10 turns of warm-up), since `transform_model` is given the whole conversation;
- LiteLLM: a `CustomGuardrail` whose `async_pre_call_hook` returns the request unchanged
  (`mode: pre_call`, `default_on: true`), in the proxy's own process;
- Portkey: a `before_request_hooks` mutator running the built-in `default.addPrefix`.

Every server is started once; the rounds interleave them (round 1: every gateway at every hook
count, then round 2, ...), each round sending `--turns` turns one after another on one
keep-alive connection, after a warm-up of 20. The report is each one's median over the rounds
of the per-round p50, and the latency added per hook: (p50 at the most hooks - p50 at 0) /
hooks. The load average is printed beside it.
"""
import argparse
import http.client
import json
import multiprocessing
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KIT = os.path.join(ROOT, "sdk", "python", "src", "hookline_plugin")
STUB = os.path.join(ROOT, "scripts", "stub-model.py")

STUB_ONE = "the stub, one message"
STUB_CONVERSATION = "the stub, a conversation"

HOOKLINE_PLUGIN = '''from hookline_plugin import Plugin

plugin = Plugin()


@plugin.hook("HOOK")
def keep(value, cx):
    return None


if __name__ == "__main__":
    plugin.run()
'''

LITELLM_KEY = "sk-hookline-bench-local"

LITELLM_GUARDRAIL = '''from litellm.integrations.custom_guardrail import CustomGuardrail


class Keep(CustomGuardrail):
    async def async_pre_call_hook(self, user_api_key_dict, cache, data, call_type):
        return data
'''


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(port, path="/", timeout=90.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", path)
            conn.getresponse().read()
            return True
        except OSError:
            time.sleep(0.3)
    return False


class Server:
    """One gateway process at one hook count, and how to send it a turn."""

    def __init__(self, kind, hooks, argv, port, env=None, cwd=None):
        self.kind, self.hooks, self.port = kind, hooks, port
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, env=env,
                                     cwd=cwd, start_new_session=True)
        self.conn = None
        self.path, self.headers, self.body = None, {}, b""
        self.new_path = lambda: self.path

    def stop(self):
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=10)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def tail(self):
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-2000:]

    def post(self, path, body, headers):
        try:
            response = self._send(path, body, headers)
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            # A server that closed the idle keep-alive connection while the others were
            # measured (Node closes it after 5 s): connect again, once.
            self.conn = None
            response = self._send(path, body, headers)
        data = response.read()
        if response.status >= 300:
            raise RuntimeError(f"{self.kind}@{self.hooks}: {response.status} {data[:300]!r}")
        return data

    def _send(self, path, body, headers):
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        self.conn.request("POST", path, body=body, headers=headers)
        return self.conn.getresponse()

    def turn(self):
        started = time.perf_counter()
        self.post(self.path, self.body, self.headers)
        return time.perf_counter() - started


def stub_p50(port, warm_up, turns, conversation):
    """The stub's p50 (seconds) asked directly on one kept-alive connection: `turns` requests
    after `warm_up`, each with one user message and a whole answer (as LiteLLM and Portkey
    forward this script's requests), or with `conversation` as a hookline session asks its
    model: each request carrying every earlier message and answer, the answer streamed."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    messages, times = [], []
    for turn in range(warm_up + turns):
        user = {"role": "user", "content": "Say ok."}
        if conversation:
            messages.append(user)
        else:
            messages = [user]
        request = {"model": "stub", "messages": messages}
        if conversation:
            request.update(stream=True, stream_options={"include_usage": True})
        body = json.dumps(request).encode()
        started = time.perf_counter()
        conn.request("POST", "/v1/chat/completions", body=body,
                     headers={"content-type": "application/json"})
        answer = conn.getresponse().read()
        if turn >= warm_up:
            times.append(time.perf_counter() - started)
        if conversation:
            messages.append({"role": "assistant", "content": streamed_text(answer)})
    conn.close()
    return statistics.median(times)


def streamed_text(answer):
    """The text of a streamed chat completion: its chunks' deltas, in order."""
    chunks = (json.loads(line[5:]) for line in answer.decode().splitlines()
              if line.startswith("data:") and line[5:].strip() != "[DONE]")
    return "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])


def start_hookline(hooks, stub_url, work, label, binary, hook, flags=()):
    plugins = os.path.join(work, f"{label}-{hooks}")
    os.makedirs(plugins)
    for index in range(hooks):
        directory = os.path.join(plugins, f"keep-{index}")
        os.makedirs(directory)
        shutil.copytree(KIT, os.path.join(directory, "hookline_plugin"))
        with open(os.path.join(directory, "plugin.py"), "w") as f:
            f.write(HOOKLINE_PLUGIN.replace("HOOK", hook))
        with open(os.path.join(directory, "plugin.json"), "w") as f:
            json.dump({"entry": "plugin.py", "interpreter": "python3"}, f)
    home = os.path.join(work, f"home-{label}-{hooks}")
    os.makedirs(home)
    port = free_port()
    env = dict(os.environ, HOOKLINE_HOME=home)
    # A store of its own: servers sharing one would share its session ids and directory.
    store = os.path.join(work, f"workspace-{label}-{hooks}")
    os.makedirs(store)
    argv = [binary, "serve", "--listen", f"127.0.0.1:{port}", "--plugins", plugins,
            "--workspace-root", store,
            "--provider", "openai", "--base-url", stub_url, "--model", "stub", *flags]
    server = Server(label, hooks, argv, port, env=env, cwd=work)
    if not wait_http(port, "/healthz"):
        server.stop()
        raise RuntimeError(f"{label} serve did not start: " + server.tail())
    # A hook that silently never runs would make the server look fast: every plugin must be
    # loaded and say it implements the hook.
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/v1/plugins")
    listed = json.loads(conn.getresponse().read())
    conn.close()
    loaded = [p for p in listed.get("plugins", [])
              if p.get("state") == "loaded"
              and hook in (p.get("hello") or {}).get("hooks", [])]
    if len(loaded) != hooks:
        server.stop()
        raise RuntimeError(f"{label} with {hooks} hooks loaded {len(loaded)} plugins: "
                           f"{json.dumps(listed)[:2000]}")
    def new_path():
        session = json.loads(server.post("/v1/sessions", b"{}",
                                         {"content-type": "application/json"}))
        return f"/v1/sessions/{session['key']}/turns"
    # Turns of one session run one after another: each concurrent client has its own.
    server.new_path = new_path
    server.path = new_path()
    server.headers = {"content-type": "application/json"}
    server.body = json.dumps({"text": "Say ok."}).encode()
    return server


def start_litellm(hooks, stub_url, work, litellm):
    directory = os.path.join(work, f"litellm-{hooks}")
    os.makedirs(directory)
    with open(os.path.join(directory, "keep_guardrail.py"), "w") as f:
        f.write(LITELLM_GUARDRAIL)
    guardrails = "".join(
        f"  - guardrail_name: keep-{i}\n    litellm_params:\n"
        f"      guardrail: keep_guardrail.Keep\n      mode: pre_call\n      default_on: true\n"
        for i in range(hooks))
    config = ("model_list:\n  - model_name: stub\n    litellm_params:\n"
              f"      model: openai/stub\n      api_base: {stub_url}\n      api_key: none\n")
    if hooks:
        config += "guardrails:\n" + guardrails
    with open(os.path.join(directory, "config.yaml"), "w") as f:
        f.write(config)
    port = free_port()
    # No fetch of the remote cost map at start; a master key (the proxy refuses to start
    # without one).
    env = dict(os.environ, PYTHONPATH=directory, LITELLM_LOG="ERROR",
               LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_MASTER_KEY=LITELLM_KEY)
    argv = [litellm, "--config", "config.yaml", "--port", str(port), "--host", "127.0.0.1",
            "--num_workers", "1"]
    server = Server("litellm", hooks, argv, port, env=env, cwd=directory)
    if not wait_http(port, "/health/liveliness", timeout=180):
        raise RuntimeError("litellm did not start: " + server.tail())
    server.path = "/v1/chat/completions"
    server.headers = {"content-type": "application/json",
                      "authorization": f"Bearer {LITELLM_KEY}"}
    server.body = json.dumps({"model": "stub",
                              "messages": [{"role": "user", "content": "Say ok."}]}).encode()
    return server


def start_portkey(hooks, stub_url, work, script):
    port = free_port()
    argv = ["node", script, f"--port={port}", "--headless"]
    env = dict(os.environ, NODE_ENV="production")
    server = Server("portkey", hooks, argv, port, env=env, cwd=work)
    if not wait_http(port, "/"):
        raise RuntimeError("portkey did not start: " + server.tail())
    config = {"provider": "openai", "api_key": "none", "custom_host": stub_url}
    if hooks:
        config["before_request_hooks"] = [
            {"type": "mutator", "id": f"prefix-{i}",
             "checks": [{"id": "default.addPrefix", "parameters": {"prefix": "> "}}]}
            for i in range(hooks)]
    server.path = "/v1/chat/completions"
    server.headers = {"content-type": "application/json", "authorization": "Bearer none",
                      "x-portkey-config": json.dumps(config)}
    server.body = json.dumps({"model": "stub",
                              "messages": [{"role": "user", "content": "Say ok."}]}).encode()
    return server


def p50(server, turns):
    return statistics.median(server.turn() for _ in range(turns))


def client(job):
    """One concurrent client (a process of its own, so no client waits on another's GIL):
    turns one after another on one kept-alive connection until `seconds` pass."""
    port, path, headers, body, seconds = job
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    times, failed = [], 0
    end = time.perf_counter() + seconds
    while (started := time.perf_counter()) < end:
        conn.request("POST", path, body=body, headers=headers)
        response = conn.getresponse()
        response.read()
        failed += response.status >= 300
        times.append(time.perf_counter() - started)
    return times, failed


def throughput(server, clients, seconds):
    """Turns per second, p50 and p99 (seconds) and failures of `clients` clients at once."""
    jobs = [(server.port, server.new_path(), server.headers, server.body, seconds)
            for _ in range(clients)]
    with multiprocessing.Pool(clients) as pool:
        results = pool.map(client, jobs)
    times = sorted(t for result in results for t in result[0])
    failed = sum(result[1] for result in results)
    if not times:
        return 0.0, 0.0, 0.0, failed
    return (len(times) / seconds, times[len(times) // 2], times[int(len(times) * 0.99)], failed)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--hooks", default="0,1,4,8")
    parser.add_argument("--litellm")
    parser.add_argument("--portkey")
    parser.add_argument("--hook", default="transform_model", choices=["transform_model", "on_prompt"],
                        help="the hook each hookline plugin implements (keeping what it is given)")
    parser.add_argument("--clients", type=int, default=0,
                        help="also run each server with this many clients at once, each round")
    parser.add_argument("--seconds", type=float, default=5.0,
                        help="how long each concurrent run lasts")
    parser.add_argument("--hookline", action="append", metavar="[LABEL=]PATH",
                        help="a hookline binary to run (repeat to compare builds in one run; "
                             "default: target/release/hookline)")
    parser.add_argument("--commit-per-turn", action="store_true",
                        help="also run each hookline build with `serve --commit-per-turn`")
    args = parser.parse_args()
    binaries = []
    for given in args.hookline or [os.path.join(ROOT, "target", "release", "hookline")]:
        label, _, path = given.rpartition("=")
        # Absolute: each server runs in a directory of its own.
        label = label or ("hookline" if not binaries else f"hookline-{len(binaries) + 1}")
        binaries.append((label, os.path.abspath(path), ()))
        if args.commit_per_turn:
            binaries.append((f"{label}/commit", os.path.abspath(path), ("--commit-per-turn",)))
    counts = [int(n) for n in args.hooks.split(",")]
    work = tempfile.mkdtemp(prefix="hookline-gateways-")
    stub_port = free_port()
    stub = subprocess.Popen([sys.executable, STUB, str(stub_port)], stdout=subprocess.DEVNULL)
    stub_url = f"http://127.0.0.1:{stub_port}/v1"
    servers = []
    try:
        time.sleep(0.5)
        for hooks in counts:
            for label, binary, flags in binaries:
                servers.append(start_hookline(hooks, stub_url, work, label, binary, args.hook,
                                              flags))
            if args.litellm:
                servers.append(start_litellm(hooks, stub_url, work, args.litellm))
            if args.portkey:
                servers.append(start_portkey(hooks, stub_url, work, args.portkey))
        for server in servers:
            for _ in range(20):
                server.turn()
        results = {(s.kind, s.hooks): [] for s in servers}
        concurrent = {(s.kind, s.hooks): [] for s in servers}
        loads = []
        stub_rounds = {STUB_ONE: [], STUB_CONVERSATION: []}
        for round_ in range(args.rounds):
            loads.append(os.getloadavg()[0])
            stub_rounds[STUB_ONE].append(stub_p50(stub_port, 20, args.turns, False))
            stub_rounds[STUB_CONVERSATION].append(stub_p50(stub_port, 10, args.turns, True))
            for server in servers:
                # A fresh conversation each round (hookline; the others keep no history), so a
                # round's turns see the same history lengths as the round before.
                server.path = server.new_path()
                for _ in range(10):
                    server.turn()
                results[(server.kind, server.hooks)].append(p50(server, args.turns))
                if args.clients:
                    concurrent[(server.kind, server.hooks)].append(
                        throughput(server, args.clients, args.seconds))
            print(f"round {round_ + 1} done, load {loads[-1]:.2f}", file=sys.stderr)
        labels = [label for label, _, _ in binaries]
        report(results, counts, loads, labels, stub_rounds)
        if args.clients:
            report_concurrent(concurrent, counts, args.clients, labels)
    finally:
        for server in servers:
            server.stop()
        stub.terminate()
        shutil.rmtree(work, ignore_errors=True)


def ordered(results, labels):
    """The servers of `results`, the hookline builds first (as given), then LiteLLM, Portkey."""
    order = labels + ["litellm", "portkey"]
    return sorted({kind for kind, _ in results}, key=order.index)


def report(results, counts, loads, labels, stub_rounds):
    print(f"load average (1 min) at each round: {', '.join(f'{l:.2f}' for l in loads)}")
    for name, rounds in stub_rounds.items():
        print(f"{name}: p50 {statistics.median(rounds) * 1000:.3f} ms "
              f"(rounds {', '.join(f'{v * 1000:.3f}' for v in rounds)})")
    kinds = ordered(results, labels)
    print("gateway          " + "".join(f"{n:>4} hooks p50 " for n in counts) + "  per hook"
          + "".join(f"  over the stub, {n} hooks" for n in counts))
    for kind in kinds:
        medians = {n: statistics.median(results[(kind, n)]) * 1000 for n in counts}
        top = max(counts)
        slope = (medians[top] - medians[min(counts)]) / (top - min(counts)) if top != min(counts) else 0.0
        row = "".join(f"{medians[n]:>11.3f} ms" for n in counts)
        # Round by round against the stub asked as this server asks it.
        stub = stub_rounds[STUB_ONE if kind in ("litellm", "portkey") else STUB_CONVERSATION]
        over = "".join(
            f"{statistics.median(v - s for v, s in zip(results[(kind, n)], stub)) * 1000:>21.3f} ms"
            for n in counts)
        print(f"{kind:<17}{row}   {slope:.3f} ms{over}")
        rounds = "; ".join(f"{n}: " + ", ".join(f"{v * 1000:.3f}" for v in results[(kind, n)])
                           for n in counts)
        print(f"                 rounds (ms) {rounds}")


def report_concurrent(concurrent, counts, clients, labels):
    print(f"\n{clients} clients at once (medians over the rounds: turns/s, p50, p99; failed)")
    for kind in ordered(concurrent, labels):
        cells = []
        for n in counts:
            runs = concurrent[(kind, n)]
            rate = statistics.median(r[0] for r in runs)
            p50_ = statistics.median(r[1] for r in runs) * 1000
            p99 = statistics.median(r[2] for r in runs) * 1000
            failed = sum(r[3] for r in runs)
            cells.append(f"{n} hooks: {rate:,.0f}/s p50 {p50_:.2f} p99 {p99:.2f} ms ({failed} failed)")
        print(f"{kind:<17}" + "; ".join(cells))


if __name__ == "__main__":
    main()
