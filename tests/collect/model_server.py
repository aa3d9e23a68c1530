"""A deterministic OpenAI-compatible chat-completions server for the traced agent: it
decides only from the messages it receives. No tool result yet: look the order up (the
first ``A-NNNN`` in the user's message); one result: ask the refund policy with the
order's status; both: answer from them."""

from __future__ import annotations

import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def decide(messages: list[dict[str, Any]]) -> dict[str, Any]:
    results = [m for m in messages if m.get("role") == "tool"]
    user = " ".join(str(m.get("content")) for m in messages if m.get("role") == "user")
    if not results:
        found = re.search(r"A-\d{4}", user)
        return _call("c1", "order_lookup", {"order_id": found.group(0) if found else "none"})
    if len(results) == 1:
        status = json.loads(str(results[0]["content"])).get("status", "unknown")
        return _call("c2", "refund_policy", {"reason": status})
    order = json.loads(str(results[0]["content"]))
    policy = json.loads(str(results[1]["content"]))
    refund = "can" if policy.get("refundable") else "cannot"
    answer = f"Order {order.get('order_id')} is {order.get('status')}; you {refund} get a refund."
    return {"role": "assistant", "content": answer}


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function",
             "function": {"name": name, "arguments": json.dumps(arguments)}}
        ],
    }  # fmt: skip


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
        message = decide(body.get("messages", []))
        reply = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "scripted"),
            "choices": [
                {"index": 0, "message": message,
                 "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }  # fmt: skip
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_args: Any) -> None:
        pass


def model_server() -> ThreadingHTTPServer:
    return ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
