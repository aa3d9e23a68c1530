"""A real OpenAI-compatible HTTP server on 127.0.0.1 for judge tests: answers
/v1/chat/completions from a script of (status, content) replies and records each request."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.helpers import serving


@dataclass
class Script:
    replies: list[tuple[int, str]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    default: tuple[int, str] | None = None
    # Answers any request not scripted above: (request body) -> (status, content).
    responder: Callable[[dict[str, Any]], tuple[int, str]] | None = None
    finish_reason: str = "stop"  # of every 200 answer ("length": cut at max_tokens)


def completion(content: str, finish_reason: str = "stop") -> str:
    return json.dumps(
        {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": "judge-test",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": finish_reason,
                    "message": {"role": "assistant", "content": content},
                }
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    )


def scores(**by_name: int) -> str:
    return json.dumps(
        {
            "dimensions": [
                {"name": n, "score": s, "reason": f"{n} looks {s}"} for n, s in by_name.items()
            ]
        }
    )


@contextmanager
def judge_server(script: Script) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            script.requests.append(json.loads(body or b"{}"))
            script.headers.append({k.lower(): v for k, v in self.headers.items()})
            if script.replies:
                status, content = script.replies.pop(0)
            elif script.responder is not None:
                status, content = script.responder(script.requests[-1])
            elif script.default is not None:
                status, content = script.default
            else:
                status, content = 500, "no reply scripted"
            payload = (
                completion(content, script.finish_reason)
                if status == 200
                else json.dumps({"error": {"message": content, "type": "test", "code": status}})
            )
            data = payload.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if status == 429:
                self.send_header("Retry-After", "0")
            self.end_headers()
            self.wfile.write(data)

    with serving(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as url:
        yield f"{url}/v1"


def asked_dimensions(request: dict[str, Any]) -> list[tuple[str, float, float]]:
    """(name, low, high) of every dimension the judge prompt's rubric section lists."""
    user = request["messages"][1]["content"]
    rubric = user.split("## Rubric\n", 1)[1].split("\n## ", 1)[0]
    found = re.findall(r"^- (\S+): score (\S+) to (\S+), weight", rubric, re.M)
    return [(name, float(low), float(high)) for name, low, high in found]


def top_marks(request: dict[str, Any]) -> tuple[int, str]:
    """The best score on every dimension the judge prompt asks for."""
    out = [
        {"name": name, "score": high, "reason": "meets the rubric"}
        for name, _, high in asked_dimensions(request)
    ]
    return 200, json.dumps({"dimensions": out})
