#!/usr/bin/env python3
"""A model that answers at once, for measuring `hookline serve` with a real provider (issue 21).

Speaks both provider families on one loopback port: `POST /v1/chat/completions` (OpenAI-compatible)
and `POST /v1/messages` (Anthropic), streamed when the request asks (`"stream": true`) or whole.
Every answer is the same short text with token usage, sent as soon as the request is read, in one
write with TCP_NODELAY (so no answer waits for a delayed ACK). No key is checked. Usage: `scripts/stub-model.py [PORT]` (default 8765); it prints its base URLs.
"""

import json
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TEXT = "ok"


def openai(stream):
    if not stream:
        return "application/json", json.dumps({
            "choices": [{"index": 0, "message": {"role": "assistant", "content": TEXT},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 1},
        })
    chunks = [
        {"choices": [{"index": 0, "delta": {"content": TEXT}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 1}},
    ]
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return "text/event-stream", body


def anthropic(stream):
    if not stream:
        return "application/json", json.dumps({
            "id": "msg", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": TEXT}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 12, "output_tokens": 1},
        })
    events = [
        {"type": "message_start", "message": {"usage": {"input_tokens": 12, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": TEXT}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}},
        {"type": "message_stop"},
    ]
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return "text/event-stream", body


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        # An answer goes out at once, never held for the client's ACK (issue 47).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        request = json.loads(self.rfile.read(length) or b"{}")
        stream = bool(request.get("stream"))
        if self.path.endswith("/chat/completions"):
            kind, body = openai(stream)
        elif self.path.endswith("/v1/messages"):
            kind, body = anthropic(stream)
        else:
            self.send_error(404)
            return
        data = body.encode()
        # The status line, the headers and the body in one write: written apart (what
        # `send_response` + `end_headers` + `wfile.write` do), the body waited for the client's
        # delayed ACK, about 40 ms a request (issue 47).
        head = (f"HTTP/1.1 200 OK\r\ncontent-type: {kind}\r\n"
                f"content-length: {len(data)}\r\n\r\n").encode()
        self.wfile.write(head + data)
        self.wfile.flush()

    def log_message(self, *args):
        pass


class Server(ThreadingHTTPServer):
    # socketserver's default backlog is 5: a gateway opening 32 pooled connections at once
    # overflowed it, and each dropped handshake stalled a request for a second or more.
    request_queue_size = 1024


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8765
    server = Server(("127.0.0.1", port), Handler)
    print(f"openai: http://127.0.0.1:{port}/v1  anthropic: http://127.0.0.1:{port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
