"""A chat-completions server on 127.0.0.1 whose every answer is ``###STOP###``.

The port's cases have a simulated user; for the oracle checks (check.py) and the
benchmark (benchmarks/tau2_bench.py) it ends the conversation after the opening turn, so
that no model is needed. ``with stop_user() as base_url: ...``; as a script it prints
its base URL and serves until interrupted (the audit of docs/tau2-audit.md).
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextmanager
def stop_user() -> Iterator[str]:
    """Serve until the block ends; yields the base URL (``http://127.0.0.1:PORT/v1``)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, body: dict[str, Any]) -> None:
            blob = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(blob)))
            self.end_headers()
            self.wfile.write(blob)

        def do_GET(self) -> None:
            self._send({"object": "list", "data": [{"id": "stop-user", "object": "model"}]})

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            message = {"role": "assistant", "content": "###STOP###"}
            self._send({
                "id": "chatcmpl-stop", "object": "chat.completion", "created": 1,
                "model": "stop-user",
                "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            })  # fmt: skip

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


if __name__ == "__main__":
    with stop_user() as url:
        print(url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            sys.exit(0)
