#!/usr/bin/env python3
"""An example hookline plugin in Python, standard library only.

It speaks the protocol of docs/protocol.md: one JSON object per line on stdin (requests from the
host) and stdout (its hello, then replies); logs go to stderr.
"""
import json
import sys

HELLO = {
    "type": "hello",
    "protocol": 1,
    "hooks": ["on_prompt", "on_tool_call", "on_approval", "on_session_started"],
    "raw_hooks": [],
    # The second key is a typo on purpose: hookline warns that the gateway never emits it.
    "events": ["command:new", "command:nwe"],
    "tools": [
        {
            "name": "word_count",
            "description": "Counts the words of a text.",
            "risk": "read",
            "authority": "workspace",
        }
    ],
}

RISKS = ["read", "write", "execute", "critical"]


def on_prompt(prompt):
    # SPEC P2.2: append only.
    prompt["appended"] = prompt.get("appended", []) + ["Use British spelling."]
    return prompt


def on_tool_call(call):
    if call["name"] != "ls":
        return None
    call["name"] = "list_dir"
    return call


def on_approval(classification):
    # SPEC P2.9: raise only. Anything that deletes always asks.
    if "delete" not in classification["summary"].lower():
        return None
    classification["requiresPrompt"] = True
    if RISKS.index(classification["risk"]) < RISKS.index("write"):
        classification["risk"] = "write"
    return classification


def on_session_started(info):
    print(f"session {info['sessionId']} started in {info['workspaceRoot']}", file=sys.stderr)
    return None


HOOKS = {
    "on_prompt": on_prompt,
    "on_tool_call": on_tool_call,
    "on_approval": on_approval,
    "on_session_started": on_session_started,
}


def answer(request):
    kind = request["type"]
    if kind == "hook":
        replacement = HOOKS[request["hook"]](request["value"])
        if replacement is None:
            return {"type": "keep", "id": request["id"]}
        return {"type": "replace", "id": request["id"], "value": replacement}
    if kind == "tool":
        text = request["arguments"].get("text", "")
        output = {"text": str(len(text.split())), "success": True}
        return {"type": "replace", "id": request["id"], "value": output}
    if kind == "event":
        print(f"event {request['key']}", file=sys.stderr)
        return {"type": "keep", "id": request["id"]}
    return None  # cancel: nothing is running concurrently here


def main():
    out = sys.stdout
    out.write(json.dumps(HELLO) + "\n")
    out.flush()
    for line in sys.stdin:
        request = json.loads(line)
        if request["type"] == "goodbye":
            break
        try:
            reply = answer(request)
        except Exception as error:  # a bug here becomes a skipped hook, not a dead plugin
            reply = {"type": "error", "id": request.get("id", 0), "message": f"house-rules failed: {error}"}
        if reply is not None:
            out.write(json.dumps(reply) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
