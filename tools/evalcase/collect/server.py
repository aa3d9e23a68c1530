"""The OTLP/HTTP trace receiver: ``POST /v1/traces``, answered as the OTLP/HTTP
specification says.

- 200 with an ExportTraceServiceResponse in the request's encoding once the request's
  line is fsynced in the inbox; ``partialSuccess.rejectedSpans`` counts spans dropped by
  the marking filter's bounds;
- 400 (a ``google.rpc.Status`` in the request's encoding) for a body that is not an
  export request; 413 for a body over ``max_body_bytes`` (before or after gzip);
  415 for another content type; 404 and 405 for other paths and methods;
- 507 when the inbox is at its bound (nothing written; a log line says so).

With a :class:`~evalcase.collect.otlp.Marking`, only traces that carry the marking
attribute are written. A trace's spans often come in several requests (each batch of a
BatchSpanProcessor holds what ended in its window), so spans of a trace not yet marked
are held in memory, up to ``pending_bytes`` in all (oldest traces dropped first, their
spans counted as rejected in the stop line), and written with the request whose span
marks the trace; later spans of a marked trace are written as they come. Held spans are
lost if the process is stopped or killed before their trace is marked.

Requests are handled one at a time on the server's event loop: each append is a whole
line, in arrival order.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evalcase.collect import otlp
from evalcase.collect.inbox import Full, Inbox

MARKED_REMEMBERED = 100_000


@dataclass
class Stats:
    requests: int = 0
    spans_written: int = 0
    spans_held: int = 0
    spans_dropped: int = 0
    refused: int = 0


@dataclass
class Receiver:
    """What the application does with a request, apart from HTTP."""

    inbox: Inbox
    max_body_bytes: int
    marking: otlp.Marking | None = None
    pending_bytes: int = 32 * 1024 * 1024
    log: Callable[[str], None] = lambda _m: None
    stats: Stats = field(default_factory=Stats)
    _pending: OrderedDict[str, list[tuple[otlp.Located, int]]] = field(default_factory=OrderedDict)
    _pending_size: int = 0
    _marked: OrderedDict[str, None] = field(default_factory=OrderedDict)
    _full_logged: bool = False

    def receive(self, request: dict[str, Any]) -> int:
        """``request`` appended (all of it, or its marked traces' spans); the number of
        spans rejected. Raises :class:`Full`."""
        self.stats.requests += 1
        if self.marking is None:
            self._append(request, otlp.span_count(request))
            return 0
        return self._receive_marked(request, self.marking)

    def _append(self, request: dict[str, Any], spans: int) -> None:
        try:
            self.inbox.append(request)
        except Full as exc:
            self.stats.refused += 1
            if not self._full_logged:
                self.log(f"refusing spans: {exc}; import and remove inbox files to make room")
                self._full_logged = True
            raise
        self._full_logged = False
        self.stats.spans_written += spans

    def _receive_marked(self, request: dict[str, Any], marking: otlp.Marking) -> int:
        spans = list(otlp.spans_of(request))
        for located in spans:
            if marking.marks(located):
                self._remember(str(located.span.get("traceId", "")))
        out: list[otlp.Located] = []
        for trace in {str(s.span.get("traceId", "")) for s in spans} & set(self._marked):
            held = self._pending.pop(trace, [])
            self._pending_size -= sum(size for _, size in held)
            self.stats.spans_held -= len(held)
            out.extend(located for located, _ in held)
        rejected = 0
        for located in spans:
            trace = str(located.span.get("traceId", ""))
            if trace in self._marked:
                out.append(located)
                continue
            size = len(json.dumps(located.span))
            if size > self.pending_bytes:
                rejected += 1
                continue
            self._pending.setdefault(trace, []).append((located, size))
            self._pending_size += size
            self.stats.spans_held += 1
        while self._pending_size > self.pending_bytes and self._pending:
            _, dropped = self._pending.popitem(last=False)
            self._pending_size -= sum(size for _, size in dropped)
            self.stats.spans_held -= len(dropped)
            self.stats.spans_dropped += len(dropped)
        self.stats.spans_dropped += rejected
        if out:
            self._append(otlp.request_of(out), len(out))
        return rejected

    def _remember(self, trace: str) -> None:
        self._marked[trace] = None
        self._marked.move_to_end(trace)
        while len(self._marked) > MARKED_REMEMBERED:
            self._marked.popitem(last=False)


def _status(kind: str, code: int, message: str) -> bytes:
    """A google.rpc.Status: JSON, or its protobuf encoding (field 1 code, 2 message)."""
    if kind == otlp.JSON:
        return json.dumps({"code": code, "message": message}).encode()
    text = message.encode()
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(text)) + text


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _success(kind: str, rejected: int, reason: str) -> bytes:
    if kind == otlp.JSON:
        if not rejected:
            return b"{}"
        return json.dumps(
            {"partialSuccess": {"rejectedSpans": str(rejected), "errorMessage": reason}}
        ).encode()
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

    response = trace_service_pb2.ExportTraceServiceResponse()
    if rejected:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = reason
    data: bytes = response.SerializeToString()
    return data


def make_app(receiver: Receiver, host_ok: Callable[[str], bool] | None = None) -> Any:
    """The receiver's app; with ``host_ok``, a request whose Host header it refuses gets
    421 and nothing is written (a loopback receiver is then out of a DNS-rebinding page's
    reach, as the viewer is)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    async def traces(request: Request) -> Response:
        if host_ok is not None and not host_ok(request.headers.get("host", "")):
            return Response(_status(otlp.JSON, 7, "unknown Host"), 421, media_type=otlp.JSON)
        kind = otlp.media_type(request.headers.get("content-type"))
        if kind is None:
            return Response(
                _status(otlp.JSON, 3, "Content-Type must be application/json or "
                        "application/x-protobuf"),
                415, media_type=otlp.JSON,
            )  # fmt: skip

        def answer(status: int, code: int, message: str) -> Response:
            return Response(_status(kind, code, message), status, media_type=kind)

        limit = receiver.max_body_bytes
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            return answer(413, 8, f"the body is over {limit} bytes")
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                return answer(413, 8, f"the body is over {limit} bytes")
        try:
            raw = otlp.decompress(bytes(body), request.headers.get("content-encoding"), limit)
            parsed = otlp.parse(raw, kind)
        except otlp.TooLarge as exc:
            return answer(413, 8, str(exc))
        except otlp.BadRequest as exc:
            return answer(400, 3, str(exc))
        try:
            rejected = receiver.receive(parsed)
        except Full as exc:
            return answer(507, 8, str(exc))
        reason = "spans too large to hold until their trace is marked" if rejected else ""
        return Response(_success(kind, rejected, reason), 200, media_type=kind)

    return Starlette(routes=[Route("/v1/traces", traces, methods=["POST"])])
