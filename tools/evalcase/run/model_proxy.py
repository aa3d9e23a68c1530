"""The model proxy of an agent-owned loop: an OpenAI-compatible endpoint per attempt.

The agent's ``OPENAI_BASE_URL`` points here and its ``OPENAI_API_KEY`` is the attempt's
token, never a real key. Served (by :mod:`evalcase.run.attempt_host`, on the transport's
event loop, :mod:`evalcase.transport`):

- ``POST /v1/chat/completions``, with and without ``stream``;
- ``POST /v1/responses`` (the Responses API), with and without ``stream``;
- ``GET /v1/models`` and ``GET /v1/models/ID``.

Each is forwarded to ``upstream.base_url`` with the real key (read from the variable
``upstream.api_key_env`` names, held by the runner) added here; ``upstream.model``, when
set, replaces the model the agent asked for (the record keeps both). A streamed answer is
passed through chunk by chunk as it arrives and assembled for the record. Every request
is one entry of the attempt's ``model_calls`` (request, response, status, usage, finish
reason, latency, the tool calls the model proposed), in the order they arrived.

Refused, and recorded (the agent gets an OpenAI-style error object): a wrong token
(401), another path (404), a body over ``max_reply_bytes`` (413) or not JSON (400), a
budget spent (``budget``: model calls, tokens, cost per attempt; 429 and the attempt's
``budget`` error), the attempt's deadline (504), an upstream that cannot be reached
(502), a request after the attempt ended (410). The key never appears in what the agent
gets or what is recorded: the upstream's answers are searched for it and it is masked.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
MASK = "***"
ENDPOINTS = {"chat/completions": "chat.completions", "responses": "responses"}


@dataclass(frozen=True)
class Budget:
    """Per-attempt limits on what the agent spends through the proxy (None: no limit)."""

    model_calls: int | None = None
    tokens: int | None = None
    cost: float | None = None


@dataclass(frozen=True)
class Upstream:
    base_url: str
    key: str | None  # the real key: only ever in the forwarded request's header
    model: str | None = None


DRAIN_FACTOR = 64  # an oversized body is read (and dropped) up to this many limits


async def read_body(receive: Receive, limit: int) -> bytes | None:
    """The request's body, or None when it is longer than ``limit`` bytes. The rest of an
    oversized body is read and dropped (up to ``DRAIN_FACTOR`` limits), so that the client
    gets its 413 rather than a connection reset mid-send."""
    data = bytearray()
    size = 0
    while True:
        message = await receive()
        if message.get("type") == "http.disconnect":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size <= limit:
            data.extend(chunk)
        elif size > limit * DRAIN_FACTOR:
            return None
        if not message.get("more_body"):
            break
    return bytes(data) if size <= limit else None


async def respond(
    send: Send,
    status: int,
    body: bytes,
    content_type: str = "application/json",
    final: bool = False,
) -> None:
    """An HTTP answer. ``final``: the request must not be retried (``x-should-retry:
    false``, which the openai clients honour; they retry a 429 otherwise)."""
    headers = [
        (b"content-type", content_type.encode()),
        (b"content-length", str(len(body)).encode()),
    ]
    if final:
        headers.append((b"x-should-retry", b"false"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def read_upstream(content: Any, limit: int) -> bytes:
    """An upstream answer's body, whole, or its first ``limit + 1`` bytes when it is longer
    (aiohttp's ``read(n)`` returns what has arrived, up to n: an answer arriving in
    several pieces was cut at the first)."""
    data = bytearray()
    while len(data) <= limit:
        chunk = await content.read(limit + 1 - len(data))
        if not chunk:
            break
        data.extend(chunk)
    return bytes(data)


def error_body(message: str, kind: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind, "code": kind}}).encode()


def header(scope: Scope, name: bytes) -> str:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return ""


class ModelProxy:
    """One attempt's proxy. ``notify`` hands an event to the attempt's thread (model
    calls, refusals, a spent budget), in the order they happened."""

    def __init__(
        self,
        upstream: Upstream,
        token: str,
        budget: Budget,
        limit: int,
        deadline: float,
        notify: Callable[[str, dict[str, Any]], None],
    ) -> None:
        self.upstream = upstream
        self.token = token
        self.budget = budget
        self.limit = limit
        self.deadline = deadline
        self.notify = notify
        self.calls = 0
        self.tokens = 0
        self.cost = 0.0
        self.ended = False

    def _mask(self, data: bytes) -> bytes:
        key = self.upstream.key
        if key and key.encode() in data:
            return data.replace(key.encode(), MASK.encode())
        return data

    async def refuse(self, send: Send, status: int, kind: str, message: str, **fields: Any) -> None:
        self.notify(
            "proxy_refused", {"status": status, "reason": kind, "message": message, **fields}
        )
        await respond(send, status, error_body(message, kind))

    def _spent(self) -> str | None:
        b = self.budget
        if b.model_calls is not None and self.calls >= b.model_calls:
            return f"the attempt's budget of {b.model_calls} model calls is spent"
        if b.tokens is not None and self.tokens >= b.tokens:
            return f"the attempt's budget of {b.tokens} tokens is spent ({self.tokens} used)"
        if b.cost is not None and self.cost >= b.cost:
            return f"the attempt's budget of {b.cost:g} in cost is spent ({self.cost:g} used)"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path") or "")
        method = str(scope.get("method") or "GET")
        if self.ended:
            await self.refuse(send, 410, "attempt_ended", "the attempt has ended", path=path)
            return
        if header(scope, b"authorization") != f"Bearer {self.token}":
            await self.refuse(send, 401, "wrong_token", "not this attempt's token", path=path)
            return
        route = path.removeprefix("/v1/")
        if method == "GET" and (route == "models" or route.startswith("models/")):
            await self._models(route, send)
            return
        endpoint = ENDPOINTS.get(route)
        if method != "POST" or endpoint is None:
            await self.refuse(send, 404, "not_found", f"no {method} {path} here", path=path)
            return
        body = await read_body(receive, self.limit)
        if body is None:
            await self.refuse(
                send, 413, "oversized", f"request over max_reply_bytes ({self.limit})", path=path
            )
            return
        try:
            request = json.loads(body)
        except ValueError:
            await self.refuse(send, 400, "bad_json", "the request body is not JSON", path=path)
            return
        if not isinstance(request, dict):
            await self.refuse(send, 400, "bad_json", "the request is not a JSON object", path=path)
            return
        spent = self._spent()
        if spent is not None:
            self.notify("budget", {"message": spent})
            # Spent for the whole attempt: a client retrying it would only wait.
            await respond(send, 429, error_body(spent, "budget"), final=True)
            return
        self.calls += 1
        await self._forward(endpoint, route, request, send)

    async def _models(self, route: str, send: Send) -> None:
        from evalcase import transport

        _, session = transport.shared()
        headers = self._headers()
        try:
            async with asyncio.timeout_at(self.deadline):
                async with session.get(f"{self.upstream.base_url}/{route}", headers=headers) as r:
                    data = await read_upstream(r.content, self.limit)
                    status = int(r.status)
        except TimeoutError:
            await self.refuse(send, 504, "timeout", "the attempt's deadline passed")
            return
        except Exception as exc:
            await self.refuse(send, 502, "upstream", f"upstream unreachable: {type(exc).__name__}")
            return
        if len(data) > self.limit:
            await self.refuse(
                send, 502, "oversized", f"the answer exceeds max_reply_bytes ({self.limit})"
            )
            return
        await respond(send, status, self._mask(data))

    def _headers(self) -> dict[str, str]:
        out = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.upstream.key:
            out["Authorization"] = f"Bearer {self.upstream.key}"
        return out

    async def _forward(
        self, endpoint: str, route: str, request: dict[str, Any], send: Send
    ) -> None:
        from evalcase import transport

        _, session = transport.shared()
        asked = request.get("model")
        sent = dict(request)
        if self.upstream.model:
            sent["model"] = self.upstream.model
        stream = request.get("stream") is True
        if stream and endpoint == "chat.completions" and "stream_options" not in sent:
            sent["stream_options"] = {"include_usage": True}  # usage for the record
        entry: dict[str, Any] = {
            "endpoint": endpoint,
            "stream": stream,
            "model": sent.get("model"),
            "asked_model": asked,
            "request": request,
            "status": None,
            "response": None,
            "usage": {},
            "finish_reason": None,
            "latency_ms": 0.0,
            "error": None,
        }
        start = time.perf_counter()

        def finish(status: int | None, response: Any, error: str | None) -> None:
            entry["status"] = status
            entry["error"] = error
            entry["latency_ms"] = round((time.perf_counter() - start) * 1000, 3)
            if isinstance(response, dict):
                entry["response"] = response
                entry["usage"], entry["finish_reason"] = usage_of(endpoint, response)
                self.tokens += sum(
                    v
                    for k, v in entry["usage"].items()
                    if k in ("prompt_tokens", "completion_tokens") and isinstance(v, int)
                )
                cost = entry["usage"].get("cost")
                if isinstance(cost, int | float) and not isinstance(cost, bool):
                    self.cost += float(cost)
            self.notify("model_call", entry)

        data = json.dumps(sent, ensure_ascii=False).encode()
        url = f"{self.upstream.base_url}/{route}"
        try:
            async with asyncio.timeout_at(self.deadline):
                async with session.post(url, data=data, headers=self._headers()) as upstream:
                    status = int(upstream.status)
                    kind = upstream.headers.get("Content-Type", "application/json")
                    if not stream or status >= 400:
                        raw = self._mask(await read_upstream(upstream.content, self.limit))
                        if len(raw) > self.limit:
                            finish(
                                status, None, f"the answer exceeds max_reply_bytes ({self.limit})"
                            )
                            await respond(
                                send, 502, error_body("upstream answer too long", "oversized")
                            )
                            return
                        try:
                            parsed: Any = json.loads(raw)
                        except ValueError:
                            parsed = None
                        error = (
                            None
                            if status < 400
                            else f"HTTP {status}: {raw[:300].decode('utf-8', 'replace')}"
                        )
                        finish(status, parsed, error)
                        await respond(send, status, raw, kind)
                        return
                    await send(
                        {
                            "type": "http.response.start",
                            "status": status,
                            "headers": [
                                (b"content-type", kind.encode()),
                                (b"cache-control", b"no-cache"),
                            ],
                        }
                    )
                    chunks = bytearray()
                    done = False
                    async for chunk in upstream.content.iter_any():
                        chunk = self._mask(chunk)
                        chunks.extend(chunk)
                        if len(chunks) > self.limit:
                            finish(
                                status, None, f"the stream exceeds max_reply_bytes ({self.limit})"
                            )
                            done = True
                            break
                        if not done and _stream_done(endpoint, chunks):
                            # Recorded before the last chunk reaches the agent: a tool call
                            # it makes next is then linked to this proposal.
                            finish(status, assemble(endpoint, bytes(chunks)), None)
                            done = True
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
                    if not done:
                        finish(status, assemble(endpoint, bytes(chunks)), None)
                    await send({"type": "http.response.body", "body": b""})
        except TimeoutError:
            finish(None, None, "the attempt's deadline passed")
            await _late(send, 504, "the attempt's deadline passed", "timeout")
        except Exception as exc:  # upstream unreachable or dropped: recorded, answered
            finish(None, None, f"upstream: {type(exc).__name__}: {exc}")
            await _late(send, 502, f"upstream: {type(exc).__name__}", "upstream")


async def _late(send: Send, status: int, message: str, kind: str) -> None:
    """An error answer, unless the response had started (then the stream just ends)."""
    try:
        await respond(send, status, error_body(message, kind))
    except Exception:
        return


def _stream_done(endpoint: str, data: bytearray) -> bool:
    if endpoint == "chat.completions":
        return b"data: [DONE]" in data
    ends = (b"response.completed", b"response.failed", b"response.incomplete")
    return any(end in data for end in ends)


def sse_events(data: bytes) -> list[Any]:
    """The JSON ``data:`` payloads of a server-sent event stream (``[DONE]`` left out)."""
    out = []
    for block in data.decode("utf-8", "replace").split("\n\n"):
        lines = [x[5:].strip() for x in block.splitlines() if x.startswith("data:")]
        text = "\n".join(lines)
        if not text or text == "[DONE]":
            continue
        try:
            out.append(json.loads(text))
        except ValueError:
            continue
    return out


def assemble(endpoint: str, data: bytes) -> dict[str, Any] | None:
    """The whole answer a stream carried, in the shape of the unstreamed one."""
    events = sse_events(data)
    if endpoint == "responses":
        for event in reversed(events):
            if isinstance(event, dict) and isinstance(event.get("response"), dict):
                found: dict[str, Any] = event["response"]
                return found
        return None
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    usage: Any = None
    model = None
    for event in events:
        if not isinstance(event, dict):
            continue
        model = event.get("model", model)
        if isinstance(event.get("usage"), dict):
            usage = event["usage"]
        for choice in event.get("choices") or ():
            if not isinstance(choice, dict):
                continue
            finish = choice.get("finish_reason") or finish
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                content.append(delta["content"])
            for raw in delta.get("tool_calls") or ():
                if not isinstance(raw, dict):
                    continue
                slot = calls.setdefault(
                    int(raw.get("index") or 0),
                    {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
                )
                slot["id"] = raw.get("id") or slot["id"]
                fn = raw.get("function") or {}
                slot["function"]["name"] += str(fn.get("name") or "")
                slot["function"]["arguments"] += str(fn.get("arguments") or "")
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content) or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    out: dict[str, Any] = {
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }
    if usage is not None:
        out["usage"] = usage
    return out


def usage_of(endpoint: str, response: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """A response's usage (as ``prompt_tokens`` / ``completion_tokens``, plus ``cost``
    when the upstream says) and finish reason."""
    raw = response.get("usage")
    usage: dict[str, Any] = {}
    if isinstance(raw, Mapping):
        prompt = raw.get("prompt_tokens", raw.get("input_tokens"))
        completion = raw.get("completion_tokens", raw.get("output_tokens"))
        for name, value in (("prompt_tokens", prompt), ("completion_tokens", completion)):
            if isinstance(value, int) and not isinstance(value, bool):
                usage[name] = value
        if isinstance(raw.get("cost"), int | float) and not isinstance(raw.get("cost"), bool):
            usage["cost"] = raw["cost"]
    if endpoint == "responses":
        status = response.get("status")
        return usage, str(status) if status is not None else None
    choices = response.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else {}
    finish = first.get("finish_reason") if isinstance(first, Mapping) else None
    return usage, str(finish) if finish is not None else None


def proposals_of(endpoint: str, response: Any) -> list[dict[str, Any]]:
    """The tool calls a model's answer proposes: id, tool name and arguments (as text)."""
    out: list[dict[str, Any]] = []
    if not isinstance(response, Mapping):
        return out
    if endpoint == "responses":
        for item in response.get("output") or ():
            if isinstance(item, Mapping) and item.get("type") == "function_call":
                out.append(
                    {
                        "id": item.get("call_id") or item.get("id"),
                        "tool": str(item.get("name") or ""),
                        "arguments": str(item.get("arguments") or ""),
                    }
                )
        return out
    choices = response.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else {}
    message = first.get("message") if isinstance(first, Mapping) else None
    for raw in (message or {}).get("tool_calls") or () if isinstance(message, Mapping) else ():
        if not isinstance(raw, Mapping):
            continue
        fn = raw.get("function") or {}
        if isinstance(fn, Mapping):
            out.append(
                {
                    "id": raw.get("id"),
                    "tool": str(fn.get("name") or ""),
                    "arguments": str(fn.get("arguments") or ""),
                }
            )
    return out


def reply_text(endpoint: str, response: Any) -> str | None:
    """The text of a model's answer (for the trace)."""
    if not isinstance(response, Mapping):
        return None
    if endpoint == "responses":
        parts = []
        for item in response.get("output") or ():
            if isinstance(item, Mapping) and item.get("type") == "message":
                for c in item.get("content") or ():
                    if isinstance(c, Mapping) and isinstance(c.get("text"), str):
                        parts.append(c["text"])
        return "".join(parts) or None
    choices = response.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else {}
    message = first.get("message") if isinstance(first, Mapping) else None
    content = message.get("content") if isinstance(message, Mapping) else None
    return content if isinstance(content, str) else None
