#!/usr/bin/env python3
"""A purpose-built faulty hookline plugin for the tests, standard library only.

`faulty.py MODE [HOOK]` subscribes to the `session` events (answering each with `keep`) and
implements HOOK (default `on_tool_call`, where it appends `-<plugin name>`
to the tool name; `on_user_message` appends ` +<plugin name>` to the text) and misbehaves as MODE
says. Every line it receives is logged to `transcript.log` in its working
directory (its plugin directory), so tests can see cancels and goodbyes.

Modes: ok, garbage, oversize, unknown-id, repeat-id (answers call 1 again while call 2 is in
flight), reply-twice (answers its first call twice), no-hello, bad-version, crash-once,
crash-always, late, exit-at-start, stderr-flood, batch (answers 8 requests at once, in reverse),
error, script (replies from `replies.json`), env (writes its environment to `env.json`, then as ok),
flood (answers its first call after 5000 unsolicited lines that are not the protocol),
reply-after-cancel (answers its first call only once the host has cancelled it, i.e. after the
timeout, whatever the timeout is).
"""
import json
import os
import sys
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else "ok"
HOOK = sys.argv[2] if len(sys.argv) > 2 else "on_tool_call"
NAME = os.environ.get("HOOKLINE_PLUGIN", "faulty")
out = sys.stdout


def send(obj):
    out.write(json.dumps(obj) + "\n")
    out.flush()


def log(line):
    with open("transcript.log", "a") as transcript:
        transcript.write(line if line.endswith("\n") else line + "\n")


def renamed(request):
    value = request["value"]
    if HOOK == "on_user_message":
        value["text"] = value["text"] + " +" + NAME
    else:
        value["name"] = value["name"] + "-" + NAME
    return {"type": "replace", "id": request["id"], "value": value}


def after_cancel(request):
    """Replies to `request` once its cancel arrives; a later request read meanwhile is answered next."""
    pending = []
    for line in sys.stdin:
        log(line)
        message = json.loads(line)
        if message["type"] == "cancel" and message["id"] == request["id"]:
            break
        pending.append(message)
    send(renamed(request))
    return pending


def flood(lines):
    for i in range(lines):
        sys.stderr.write(f"flood line {i} " + "x" * 100 + "\n")
    sys.stderr.flush()


def main():
    if MODE == "env":
        with open("env.json", "w") as f:
            json.dump(dict(os.environ), f)
    if MODE == "exit-at-start":
        sys.exit(3)
    if MODE == "stderr-flood":
        flood(20000)
    if MODE == "no-hello":
        for line in sys.stdin:  # never says hello; leaves when stdin closes
            log(line)
        return
    if MODE == "script":
        return scripted()
    version = 99 if MODE == "bad-version" else 1
    send({"type": "hello", "protocol": version, "hooks": [HOOK], "events": ["session"]})
    calls = 0
    batch = []
    for line in sys.stdin:
        log(line)
        request = json.loads(line)
        if request["type"] == "goodbye":
            return
        if request["type"] == "event":  # its events are served; the faults are in its hook
            send({"type": "keep", "id": request["id"]})
            continue
        if request["type"] != "hook":
            continue
        calls += 1
        first = calls == 1
        if MODE == "garbage" and first:
            out.write("this is not the protocol\n")
            out.flush()
        elif MODE == "oversize" and first:
            out.write('{"type":"keep","id":' + str(request["id"]) + ',"pad":"' + "x" * (2 * 1024 * 1024) + '"}\n')
            out.flush()
        elif MODE == "flood" and first:
            for i in range(5000):
                out.write(f"flood {i}\n")
            out.flush()
            send(renamed(request))
        elif MODE == "unknown-id" and first:
            send({"type": "keep", "id": request["id"] + 1000})
        elif MODE == "repeat-id" and calls == 2:
            # A second reply to call 1 while call 2 is in flight, then call 2's own reply.
            send({"type": "keep", "id": request["id"] - 1})
            send(renamed(request))
        elif MODE == "reply-twice" and first:
            send(renamed(request))
            send(renamed(request))
        elif MODE == "error" and first:
            send({"type": "error", "id": request["id"], "message": "the faulty plugin refuses."})
        elif MODE == "crash-always" or (MODE == "crash-once" and not os.path.exists("crashed.marker")):
            open("crashed.marker", "w").close()
            out.write('{"type":"replace","id":' + str(request["id"]))  # half a reply, then gone
            out.flush()
            os._exit(1)
        elif MODE == "late" and first:
            time.sleep(1.3)
            send(renamed(request))
        elif MODE == "reply-after-cancel" and first:
            for waiting in after_cancel(request):
                if waiting["type"] == "goodbye":
                    return
                if waiting["type"] == "hook":
                    send(renamed(waiting))
                elif waiting["type"] == "event":
                    send({"type": "keep", "id": waiting["id"]})
        elif MODE == "stderr-flood":
            flood(2000)
            send(renamed(request))
        elif MODE == "batch":
            batch.append(request)
            if len(batch) == 8:
                for waiting in reversed(batch):
                    send(renamed(waiting))
                batch = []
        else:
            send(renamed(request))


def scripted():
    """Replies from `replies.json` in the plugin directory: {"hook": {"replace": V} | {"error": M} | "keep"}."""
    with open("replies.json") as f:
        replies = json.load(f)
    raw = [h for h in replies if h.startswith(("rebuild_", "rewrite_"))]
    ordinary = [h for h in replies if h not in raw]
    send({"type": "hello", "protocol": 1, "hooks": ordinary, "raw_hooks": raw})
    for line in sys.stdin:
        request = json.loads(line)
        if request["type"] == "goodbye":
            return
        if request["type"] != "hook":
            continue
        reply = replies[request["hook"]]
        if reply == "keep":
            send({"type": "keep", "id": request["id"]})
        elif "error" in reply:
            send({"type": "error", "id": request["id"], "message": reply["error"]})
        else:
            send({"type": "replace", "id": request["id"], "value": reply["replace"]})


if __name__ == "__main__":
    main()
