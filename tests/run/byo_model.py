"""A deterministic OpenAI-compatible model on 127.0.0.1 for the agent-owned loop's tests.

It decides only from what a model receives: the request's ``model``, ``messages`` and
``tools`` (never a case file, never an answer key). Its policy is the bundled English
example agent's (``examples/english_agent/agent.py``: look the order up, retry once
after ``rate_limited``, ask before cancelling, cancel after a confirmation, quote a
retrieved passage, classify into the system prompt's labels), run over the chat messages
a framework sends. Two models:

- ``english-1``: that policy;
- ``eager-1``: the same, except that it proposes the cancellation at once when a user
  turn asks for one before anything was looked up in that turn (what a guardrail is
  for). A proposal the agent refused (a tool message that is not JSON) is dropped from
  what the policy reads, so after a refusal it carries on as ``english-1``.

Served: ``POST /v1/chat/completions`` (with ``stream``: server-sent chunks, the tool
calls' arguments split in two, usage last when ``stream_options.include_usage``),
``POST /v1/responses`` (a minimal Responses API: the same policy over its ``input``; with
``stream``, its events: created, the output items, completed with the usage),
``GET /v1/models``. Another model name is a 404, as a hosted API answers. Every request
is kept (``requests``), with its headers (``headers``), for the tests to read.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.helpers import module_from, serving

AGENT = Path(__file__).resolve().parents[2] / "examples" / "english_agent" / "agent.py"
MODELS = ("english-1", "eager-1")


def _policy() -> Any:
    return module_from(AGENT, "english_policy")


POLICY = _policy()


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
        )
    return "" if content is None else str(content)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def normalise(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages as the policy reads them: text content; refused proposals (an
    assistant tool call answered by a tool message that is not JSON) dropped."""
    out: list[dict[str, Any]] = []
    refused: set[str] = set()
    for m in messages:
        if m.get("role") == "tool" and not _is_json(_text(m.get("content"))):
            refused.add(str(m.get("tool_call_id")))
    for m in messages:
        role = m.get("role")
        if role == "developer":
            role = "system"
        if role == "tool":
            if str(m.get("tool_call_id")) in refused:
                continue
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": m.get("tool_call_id"),
                    "content": _text(m.get("content")),
                }
            )
            continue
        entry: dict[str, Any] = {"role": role, "content": _text(m.get("content"))}
        calls = [c for c in m.get("tool_calls") or () if str(c.get("id")) not in refused]
        if m.get("tool_calls") and not calls and not entry["content"]:
            continue  # an assistant message whose only call was refused
        if calls:
            entry["tool_calls"] = calls
        out.append(entry)
    return out


def decide(model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
    """The assistant message the model answers (its policy, see the module doc)."""
    last = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    refused = any(
        m.get("role") == "tool" and not _is_json(_text(m.get("content")))
        for m in messages[last + 1 :]
    )
    # Call ids unique in the conversation as sent (not in the policy's shortened view).
    n = sum(1 for m in messages if m.get("role") == "assistant") + 1
    messages = normalise(messages)
    reply = _decide(model, messages, tools, refused)
    for i, c in enumerate(reply.get("tool_calls") or ()):
        c["id"] = f"call_{n}_{i}"
    return reply


def _decide(
    model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]], refused: bool
) -> Any:
    if model == "eager-1" and not refused:
        last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=-1)
        said = messages[last_user]["content"].lower() if last_user >= 0 else ""
        cancel = POLICY.tool_named(tools, "cancel")
        orders = POLICY.ORDER.findall(messages[last_user]["content"]) if last_user >= 0 else []
        if cancel and orders and "cancel" in said and messages[-1]["role"] == "user":
            n = sum(1 for m in messages if m["role"] == "assistant") + 1
            return POLICY.call(n, cancel, {"order_id": orders[-1], "user_confirmed": True})
    reply = POLICY.answer({"messages": messages, "tools": tools})
    reply.pop("agent_version", None)
    return reply


def completion(model: str, message: dict[str, Any]) -> dict[str, Any]:
    calls = message.get("tool_calls")
    return {
        "id": "chatcmpl-det",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": message.get("content"),
                    **({"tool_calls": calls} if calls else {}),
                },
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
        "usage": {"prompt_tokens": 30, "completion_tokens": 10, "total_tokens": 40},
    }


def chunks(model: str, message: dict[str, Any], usage: bool) -> Iterator[dict[str, Any]]:
    base = {"id": "chatcmpl-det", "object": "chat.completion.chunk", "created": 1, "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    text = message.get("content") or ""
    for start in range(0, len(text), 12):
        yield chunk({"content": text[start : start + 12]})
    calls = message.get("tool_calls") or []
    for i, c in enumerate(calls):
        args = c["function"]["arguments"]
        half = len(args) // 2
        yield chunk(
            {
                "tool_calls": [
                    {
                        "index": i,
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["function"]["name"], "arguments": args[:half]},
                    }
                ]
            }
        )
        yield chunk({"tool_calls": [{"index": i, "function": {"arguments": args[half:]}}]})
    yield chunk({}, "tool_calls" if calls else "stop")
    if usage:
        yield {
            **base,
            "choices": [],
            "usage": {"prompt_tokens": 30, "completion_tokens": 10, "total_tokens": 40},
        }


def responses_input(body: dict[str, Any]) -> list[dict[str, Any]]:
    """A Responses API request's input as chat messages."""
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    if isinstance(items, str):
        return [*messages, {"role": "user", "content": items}]
    for item in items or ():
        kind = item.get("type", "message")
        if kind == "message":
            messages.append({"role": item.get("role"), "content": _text(item.get("content"))})
        elif kind == "function_call":
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": item.get("call_id"),
                            "type": "function",
                            "function": {
                                "name": item.get("name"),
                                "arguments": item.get("arguments"),
                            },
                        }
                    ],
                }
            )
        elif kind == "function_call_output":
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": item.get("call_id"),
                    "content": _text(item.get("output")),
                }
            )
    return messages


def response_object(model: str, message: dict[str, Any]) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    for c in message.get("tool_calls") or ():
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{c['id']}",
                "call_id": c["id"],
                "name": c["function"]["name"],
                "arguments": c["function"]["arguments"],
                "status": "completed",
            }
        )
    if message.get("content"):
        output.append(
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": message["content"], "annotations": []}],
            }
        )
    return {
        "id": "resp_det",
        "object": "response",
        "created_at": 1,
        "model": model,
        "status": "completed",
        "output": output,
        "usage": {"input_tokens": 30, "output_tokens": 10, "total_tokens": 40},
    }


def response_events(model: str, message: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The Responses API's stream of one answer: created, each output item added (a
    text's deltas, a call's arguments in two halves) and done, then completed."""
    whole = response_object(model, message)
    started = {**whole, "status": "in_progress", "output": [], "usage": None}
    n = 0

    def event(kind: str, **fields: Any) -> dict[str, Any]:
        nonlocal n
        n += 1
        return {"type": kind, "sequence_number": n, **fields}

    yield event("response.created", response=started)
    for index, item in enumerate(whole["output"]):
        if item["type"] == "function_call":
            yield event(
                "response.output_item.added",
                output_index=index,
                item={**item, "arguments": "", "status": "in_progress"},
            )
            args = item["arguments"]
            for half in (args[: len(args) // 2], args[len(args) // 2 :]):
                yield event(
                    "response.function_call_arguments.delta",
                    item_id=item["id"],
                    output_index=index,
                    delta=half,
                )
            yield event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                arguments=args,
            )
        else:
            yield event(
                "response.output_item.added",
                output_index=index,
                item={**item, "content": [], "status": "in_progress"},
            )
            text = item["content"][0]["text"]
            for word in text.split(" "):
                yield event(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=word,
                    logprobs=[],
                )
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=whole)


def _tools_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for t in body.get("tools") or ():
        if "function" in t:
            out.append(t)
        elif t.get("type") == "function":  # the Responses API's flat tool shape
            out.append(
                {
                    "type": "function",
                    "function": {k: t.get(k) for k in ("name", "description", "parameters")},
                }
            )
    return out


class ModelServer:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.lock = threading.Lock()
        # Assistant messages answered first, whatever the request (a test's own scene).
        self.script: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _send(self, status: int, body: Any, kind: str = "application/json") -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                with server.lock:
                    server.headers.append(dict(self.headers))
                self._send(
                    200, {"object": "list", "data": [{"id": m, "object": "model"} for m in MODELS]}
                )

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                with server.lock:
                    server.requests.append(body)
                    server.headers.append(dict(self.headers))
                model = str(body.get("model"))
                if model not in MODELS:
                    self._send(
                        404,
                        {
                            "error": {
                                "message": f"The model `{model}` does not exist",
                                "type": "invalid_request_error",
                                "code": "model_not_found",
                            }
                        },
                    )
                    return
                if self.path.endswith("/responses"):
                    message = decide(model, responses_input(body), _tools_of(body))
                    if not body.get("stream"):
                        self._send(200, response_object(model, message))
                        return
                    data = b"".join(
                        f"event: {e['type']}\n".encode() + b"data: " + json.dumps(e).encode()
                        + b"\n\n"
                        for e in response_events(model, message)
                    )  # fmt: skip
                    self._send(200, data, "text/event-stream")
                    return
                with server.lock:
                    scripted = server.script.pop(0) if server.script else None
                message = scripted or decide(
                    model, list(body.get("messages") or ()), _tools_of(body)
                )
                if not body.get("stream"):
                    self._send(200, completion(model, message))
                    return
                usage = bool((body.get("stream_options") or {}).get("include_usage"))
                data = (
                    b"".join(
                        b"data: " + json.dumps(c).encode() + b"\n\n"
                        for c in chunks(model, message, usage)
                    )
                    + b"data: [DONE]\n\n"
                )
                self._send(200, data, "text/event-stream")

            def log_message(self, *args: Any) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    @contextmanager
    def running(self) -> Iterator[ModelServer]:
        with serving(self.httpd):
            yield self
