"""OTLP trace files decoded into spans: OTLP/JSON and OTLP protobuf.

OTLP/JSON is what the OpenTelemetry collector's file exporter writes (one
``ExportTraceServiceRequest`` a line) and what an OTLP/HTTP JSON body holds (one request,
possibly over several lines). As the OTLP specification says, trace and span IDs are hex
strings (not base64), enums may be integers or names, 64-bit integers may be strings,
and field names may be lowerCamelCase (``traceId``) or the proto's own (``trace_id``).
OTLP protobuf is one serialized ``ExportTraceServiceRequest`` (the ``traces`` extra:
``opentelemetry-proto``).

A file is what it holds, whatever its name: text starting with ``{`` is JSON, bytes
starting with the protobuf tag of ``resource_spans`` are protobuf. Errors are values the
caller reports with the file and line (``TraceError``); a span with an attribute over the
bound, or JSON nested too deep, is skipped with its reason (``Skipped``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from evalcase.authoring.traces.model import (
    MAX_ATTRIBUTE_BYTES,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_SPANS,
    Event,
    Skipped,
    Span,
)

JSON, PROTOBUF = "otlp/json", "otlp/protobuf"
_STATUS_ERROR = (2, "2", "STATUS_CODE_ERROR")


class TraceError(ValueError):
    """A trace file that cannot be read: ``where`` (file or file:line) and what is wrong."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message


class _Oversized(ValueError):
    pass


def sniff(path: Path) -> str | None:
    """``JSON`` or ``PROTOBUF`` when the file holds OTLP traces, else None."""
    try:
        with path.open("rb") as handle:
            head = handle.read(64 * 1024)
    except OSError:
        return None
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped.startswith(b"{"):
        first = stripped.split(b"\n", 1)[0] if b"\n" in stripped else stripped
        keys = (b'"resourceSpans"', b'"resource_spans"')
        return JSON if any(k in first for k in keys) or any(k in head for k in keys) else None
    if head[:1] == b"\x0a" and len(head) > 2:
        return PROTOBUF if _plausible_protobuf(head) else None
    return None


def _plausible_protobuf(head: bytes) -> bool:
    """Field 1 (resource_spans, length-delimited) whose body starts with a field of
    ResourceSpans (resource 1, scope_spans 2, schema_url 3)."""
    i, length, shift = 1, 0, 0
    while i < len(head) and i < 11:
        byte = head[i]
        length |= (byte & 0x7F) << shift
        i += 1
        if not byte & 0x80:
            break
        shift += 7
    return i < len(head) and head[i] in (0x0A, 0x12, 0x1A) and length > 0


def read_file(path: Path, shown: str, budget: int = MAX_SPANS) -> tuple[list[Span], list[Skipped]]:
    """The spans of one trace file (at most ``budget``), and the spans left out."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise TraceError(shown, f"cannot read: {exc.strerror}") from exc
    if size > MAX_FILE_BYTES:
        raise TraceError(
            shown,
            f"{size:,} bytes, over the {MAX_FILE_BYTES:,}-byte bound of one trace file; "
            "split it (one request a line)",
        )
    data = path.read_bytes()
    kind = sniff(path)
    if kind == PROTOBUF:
        return _read_protobuf(data, shown, budget)
    if kind == JSON:
        return _read_json(data, shown, budget)
    raise TraceError(shown, "not an OTLP trace file (neither OTLP/JSON nor OTLP protobuf)")


# --- JSON -------------------------------------------------------------------------------
def _get(node: Mapping[str, Any], camel: str, snake: str) -> Any:
    value = node.get(camel)
    return node.get(snake) if value is None else value


def _read_json(data: bytes, shown: str, budget: int) -> tuple[list[Span], list[Skipped]]:
    spans: list[Span] = []
    skipped: list[Skipped] = []
    requests = list(_json_requests(data, shown))
    for where, request in requests:
        if request is _INCOMPLETE:
            skipped.append(Skipped(where, "", _INCOMPLETE_REASON))
            continue
        if not isinstance(request, dict):
            raise TraceError(where, "not an OTLP export request (a JSON object)")
        resources = _get(request, "resourceSpans", "resource_spans")
        if resources is None:
            raise TraceError(where, "not an OTLP export request: no resourceSpans")
        for resource in _list(resources, where, "resourceSpans"):
            scopes = _get(resource, "scopeSpans", "scope_spans")
            if scopes is None:  # OTLP before 0.15
                scopes = _get(
                    resource, "instrumentationLibrarySpans", "instrumentation_library_spans"
                )
            for scope in _list(scopes or [], where, "scopeSpans"):
                for raw in _list(scope.get("spans") or [], where, "spans"):
                    if len(spans) >= budget:
                        raise TraceError(where, too_many())
                    span = _json_span(raw, where, skipped)
                    if span is not None:
                        spans.append(span)
    return spans, skipped


def too_many() -> str:
    return f"more than {MAX_SPANS:,} spans in one import (the bound); import fewer files at once"


_INCOMPLETE = object()
_INCOMPLETE_REASON = (
    "an incomplete last line (not JSON, and no newline at its end: still being written?); "
    "left out, import the file again once it is complete"
)


def _json_requests(data: bytes, shown: str) -> Iterator[tuple[str, Any]]:
    """(file:line, request) for each line; a whole-file body when the first line alone
    is not JSON (an OTLP/HTTP body written over several lines)."""
    lines = data.split(b"\n")
    whole = None
    for number, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        where = f"{shown}:{number}"
        try:
            text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            raise TraceError(where, f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
        try:
            yield where, json.loads(text)
        except RecursionError:
            raise TraceError(where, f"JSON nested deeper than {MAX_DEPTH} levels") from None
        except json.JSONDecodeError as exc:
            if number == 1 and whole is None:
                whole = _whole(data, shown)
                if whole is not None:
                    yield f"{shown}:1", whole
                    return
            if number == len(lines) and number > 1:
                yield where, _INCOMPLETE  # a last line without its newline: being appended
                return
            raise TraceError(where, f"not JSON: {exc.msg} at column {exc.colno}") from None


def _whole(data: bytes, shown: str) -> Any:
    try:
        return json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None


def _list(value: Any, where: str, what: str) -> list[Any]:
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise TraceError(where, f"{what} is not a list of objects")
    return value


def _hex(value: Any) -> str:
    return value.lower() if isinstance(value, str) else ""


def _json_span(raw: dict[str, Any], where: str, skipped: list[Skipped]) -> Span | None:
    span_id = _hex(_get(raw, "spanId", "span_id"))
    trace_id = _hex(_get(raw, "traceId", "trace_id"))
    if not span_id or not trace_id:
        skipped.append(Skipped(where, span_id, "a span without traceId or spanId"))
        return None
    try:
        attributes = _json_attributes(raw.get("attributes"))
        events = tuple(
            Event(str(e.get("name") or ""), _json_attributes(e.get("attributes")))
            for e in raw.get("events") or ()
            if isinstance(e, dict)
        )
    except _Oversized as exc:
        skipped.append(Skipped(where, span_id, str(exc)))
        return None
    status = raw.get("status")
    code = status.get("code") if isinstance(status, dict) else None
    start = _get(raw, "startTimeUnixNano", "start_time_unix_nano")
    return Span(
        trace_id,
        span_id,
        _hex(_get(raw, "parentSpanId", "parent_span_id")),
        str(raw.get("name") or ""),
        int(start) if isinstance(start, int | str) and str(start).isdigit() else 0,
        attributes,
        events,
        where,
        code in _STATUS_ERROR,
    )


def _json_attributes(raw: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if not isinstance(raw, list):
        return out
    for item in raw:
        if isinstance(item, dict) and isinstance(key := item.get("key"), str):
            value = item.get("value")
            text = value.get("stringValue") if type(value) is dict and len(value) == 1 else None
            if type(text) is str and len(text) * 4 <= MAX_ATTRIBUTE_BYTES:
                out[key] = text  # nearly every attribute: a string well under the bound
            else:
                out[key] = _json_value(key, value, 0)
    return out


def _json_value(key: str, value: Any, depth: int) -> Any:
    if not isinstance(value, dict):
        return None
    if depth > MAX_DEPTH:
        raise _Oversized(f"attribute {key} nested deeper than {MAX_DEPTH} levels")
    for name, kind in value.items():
        if name in ("stringValue", "string_value"):
            if isinstance(kind, str) and len(kind) * 4 > MAX_ATTRIBUTE_BYTES:
                _check_size(key, kind)
            return kind if isinstance(kind, str) else None
        if name in ("intValue", "int_value"):
            try:
                return int(kind)
            except (TypeError, ValueError):
                return None
        if name in ("boolValue", "bool_value", "doubleValue", "double_value"):
            return kind
        if name in ("arrayValue", "array_value"):
            values = kind.get("values") if isinstance(kind, dict) else None
            return [_json_value(key, v, depth + 1) for v in values or ()]
        if name in ("kvlistValue", "kvlist_value"):
            values = kind.get("values") if isinstance(kind, dict) else None
            return {
                str(v.get("key")): _json_value(key, v.get("value"), depth + 1)
                for v in values or ()
                if isinstance(v, dict)
            }
        if name in ("bytesValue", "bytes_value"):
            return base64.b64decode(kind, validate=False).hex() if isinstance(kind, str) else None
    return None


def _check_size(key: str, text: str) -> None:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_ATTRIBUTE_BYTES:
        raise _Oversized(
            f"attribute {key} holds {size:,} bytes, over the {MAX_ATTRIBUTE_BYTES:,}-byte bound"
        )


# --- protobuf ---------------------------------------------------------------------------
def _read_protobuf(data: bytes, shown: str, budget: int) -> tuple[list[Span], list[Skipped]]:
    try:
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )
    except ImportError:
        raise TraceError(
            shown,
            "an OTLP protobuf file; reading it needs opentelemetry-proto, an evalcase "
            "dependency that is missing here: pip install 'opentelemetry-proto>=1.27', "
            "or export OTLP/JSON",
        ) from None
    try:
        request = ExportTraceServiceRequest.FromString(data)
    except (DecodeError, RecursionError) as exc:
        raise TraceError(shown, f"not an OTLP protobuf export request ({exc})") from None
    spans: list[Span] = []
    skipped: list[Skipped] = []
    for resource in request.resource_spans:
        for scope in resource.scope_spans:
            for raw in scope.spans:
                if len(spans) >= budget:
                    raise TraceError(shown, too_many())
                span_id = raw.span_id.hex()
                try:
                    attributes = _pb_attributes(raw.attributes)
                    events = tuple(Event(e.name, _pb_attributes(e.attributes)) for e in raw.events)
                except _Oversized as exc:
                    skipped.append(Skipped(shown, span_id, str(exc)))
                    continue
                if not span_id or not raw.trace_id:
                    skipped.append(Skipped(shown, span_id, "a span without traceId or spanId"))
                    continue
                spans.append(
                    Span(
                        raw.trace_id.hex(),
                        span_id,
                        raw.parent_span_id.hex(),
                        raw.name,
                        raw.start_time_unix_nano,
                        attributes,
                        events,
                        f"{shown} (span {span_id})",
                        raw.status.code == 2,
                    )
                )
    return spans, skipped


def _pb_attributes(raw: Any) -> dict[str, Any]:
    return {kv.key: _pb_value(kv.key, kv.value, 0) for kv in raw}


def _pb_value(key: str, value: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise _Oversized(f"attribute {key} nested deeper than {MAX_DEPTH} levels")
    which = value.WhichOneof("value")
    if which == "string_value":
        text: str = value.string_value
        if len(text) * 4 > MAX_ATTRIBUTE_BYTES:
            _check_size(key, text)
        return text
    if which == "array_value":
        return [_pb_value(key, v, depth + 1) for v in value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _pb_value(key, kv.value, depth + 1) for kv in value.kvlist_value.values}
    if which == "bytes_value":
        return bytes(value.bytes_value).hex()
    return getattr(value, which) if which else None
