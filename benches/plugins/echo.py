#!/usr/bin/env python3
"""The minimal Python children benches/external.rs measures (standard library only).

Modes (first argument): `protocol` (a long-lived protocol plugin: on_user_message appends " #e",
on_prompt and on_tool_call are kept), `raw` (echoes every line unchanged), `json` (decodes each
line with the `json` module and writes it encoded again: `hookline bench`'s Python pipe peer),
`once` (answers one
request and exits: a process spawned per call). Replies to a burst of requests are written at once:
every complete line read in one chunk is answered, then one write.
"""
import json
import os
import sys

HELLO = '{"type":"hello","protocol":1,"hooks":["on_user_message","on_prompt","on_tool_call"]}\n'


def answer(line):
    request = json.loads(line)
    if "id" not in request:
        return None
    if request.get("hook") != "on_user_message":
        return json.dumps({"type": "keep", "id": request["id"]})
    value = request["value"]
    value["text"] = value.get("text", "") + " #e"
    return json.dumps({"type": "replace", "id": request["id"], "value": value})


def serve(protocol, decode=False):
    out = sys.stdout.buffer
    if protocol:
        out.write(HELLO.encode())
        out.flush()
    pending = b""
    while True:
        chunk = os.read(0, 1 << 16)
        if not chunk:
            return
        pending += chunk
        *lines, pending = pending.split(b"\n")
        if decode:
            out.write("".join(json.dumps(json.loads(line)) + "\n" for line in lines).encode())
        elif not protocol:
            out.write(b"".join(line + b"\n" for line in lines))
        else:
            replies = (answer(line) for line in lines if line)
            out.write("".join(r + "\n" for r in replies if r is not None).encode())
        out.flush()


def once():
    reply = answer(sys.stdin.readline())
    if reply is not None:
        sys.stdout.write(reply + "\n")


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "protocol":
        serve(True)
    elif mode == "raw":
        serve(False)
    elif mode == "json":
        serve(False, decode=True)
    elif mode == "once":
        once()
    else:
        sys.exit("usage: echo.py protocol|raw|json|once")
