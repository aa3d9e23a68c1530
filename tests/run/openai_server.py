"""A real OpenAI-compatible chat-completions server on 127.0.0.1 for adapter tests: it
answers from a script of (status, body, headers) and keeps every request it received."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.helpers import serving

RESET = 0  # a script status: the server closes the connection instead of answering
TRICKLE = -1  # a script status: a 200 whose body comes a byte every 0.2 s (bounded: 20 s)


def completion(
    content: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "local-model-1",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish_reason or ("tool_calls" if tool_calls else "stop"),
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


class Server:
    def __init__(
        self,
        script: list[tuple[int, Any, dict[str, str]]],
        default: tuple[int, Any, dict[str, str]] | None = None,
        models_status: int = 200,
        decide: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self.script = list(script)
        # A model that answers from each request alone (its messages and tools): a 200
        # with decide(request) as the completion, instead of the script.
        self.decide = decide
        self.default = default  # the answer once the script has ended
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.gets: list[str] = []
        self.times: list[float] = []  # time.monotonic() of each POST
        self.models_status = models_status
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real servers do

            def do_GET(self) -> None:  # GET /v1/models: what preflight asks
                server.gets.append(self.path)
                data = json.dumps(
                    {"object": "list", "data": [{"id": "local-model-1", "object": "model"}]}
                ).encode()
                self.send_response(server.models_status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                server.times.append(time.monotonic())
                server.requests.append(json.loads(self.rfile.read(length)))
                server.headers.append(dict(self.headers))
                status, body, headers = (
                    (200, server.decide(server.requests[-1]), {})
                    if server.decide is not None
                    else server.script.pop(0)
                    if server.script
                    else server.default or (500, {"error": "script ended"}, {})
                )
                if status == RESET:  # drop the connection without an answer
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                if status == TRICKLE:  # each byte resets a per-read timeout, never a total one
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.close_connection = True
                    for byte in data[:100]:
                        try:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                        except OSError:
                            return  # the client gave up: what the test wants
                        time.sleep(0.2)
                    return
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @contextmanager
    def running(self) -> Iterator[Server]:
        with serving(self.httpd):
            yield self
