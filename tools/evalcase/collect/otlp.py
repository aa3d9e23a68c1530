"""OTLP trace export requests read into one canonical OTLP/JSON form, and the marking
filter of ``evalcase collect --only-marked``.

Both encodings go through the protobuf message (``opentelemetry-proto``): a protobuf body
is parsed, a JSON body is parsed with its hex IDs turned into bytes first (OTLP/JSON's
one difference from the protobuf JSON mapping), unknown fields ignored as the
specification asks. What comes out is the OTLP/JSON the OTel collector's file exporter
writes: camelCase field names, enums as integers, 64-bit integers as strings, trace and
span IDs as lowercase hex strings.
"""

from __future__ import annotations

import base64
import binascii
import json
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

JSON = "application/json"
PROTOBUF = "application/x-protobuf"
# The ID fields OTLP/JSON writes as hex strings (base64 in the protobuf JSON mapping).
_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


class BadRequest(Exception):
    """A body that is not an export request: answered 400 with this message."""


class TooLarge(Exception):
    """A body over the size bound (before or after decompression): answered 413."""


def media_type(content_type: str | None) -> str | None:
    """``application/json`` or ``application/x-protobuf`` (parameters such as
    ``charset`` dropped), or None for any other content type."""
    base = (content_type or "").split(";", 1)[0].strip().lower()
    return base if base in (JSON, PROTOBUF) else None


def decompress(body: bytes, encoding: str | None, limit: int) -> bytes:
    """``body`` decoded from its ``Content-Encoding`` (``gzip``, ``deflate`` or none),
    never more than ``limit`` bytes out: a small bomb is refused, not inflated."""
    name = (encoding or "identity").strip().lower()
    if name in ("", "identity"):
        return body
    if name not in ("gzip", "deflate"):
        raise BadRequest(f"Content-Encoding {name!r} is not supported (gzip, deflate, none)")
    wbits = 31 if name == "gzip" else zlib.MAX_WBITS
    inflater = zlib.decompressobj(wbits)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise BadRequest(f"the {name} body cannot be decompressed: {exc}") from None
    if len(out) > limit or inflater.unconsumed_tail:
        raise TooLarge(f"the decompressed body is over {limit} bytes")
    if not inflater.eof:
        raise BadRequest(f"the {name} body is truncated")
    return out


def _message() -> Any:
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

    return trace_service_pb2.ExportTraceServiceRequest()


def parse(body: bytes, kind: str) -> dict[str, Any]:
    """The export request in ``body`` (``kind``: :data:`JSON` or :data:`PROTOBUF`) as
    canonical OTLP/JSON, or :class:`BadRequest` saying what is wrong."""
    from google.protobuf import json_format
    from google.protobuf.message import DecodeError

    message = _message()
    if kind == PROTOBUF:
        try:
            message.ParseFromString(body)
        except (DecodeError, RecursionError, ValueError) as exc:
            raise BadRequest(f"not an ExportTraceServiceRequest in protobuf: {exc}") from None
    else:
        try:
            data = json.loads(body)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise BadRequest(f"not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise BadRequest("the JSON body is not an object (an ExportTraceServiceRequest)")
        _ids_to_base64(data)
        try:
            json_format.ParseDict(data, message, ignore_unknown_fields=True)
        except (json_format.ParseError, RecursionError, ValueError, TypeError) as exc:
            raise BadRequest(f"not an ExportTraceServiceRequest in OTLP/JSON: {exc}") from None
    out: dict[str, Any] = json_format.MessageToDict(message, use_integers_for_enums=True)
    _ids_to_hex(out)
    return out


def _id_holders(request: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The objects of ``request`` that carry trace or span IDs: spans and their links."""
    for resource_spans in _list(request.get("resourceSpans")):
        for scope_spans in _list(_dict(resource_spans).get("scopeSpans")):
            for span in _list(_dict(scope_spans).get("spans")):
                if isinstance(span, dict):
                    yield span
                    yield from (link for link in _list(span.get("links")) if isinstance(link, dict))


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _ids_to_base64(request: dict[str, Any]) -> None:
    for holder in _id_holders(request):
        for key in _ID_FIELDS:
            value = holder.get(key)
            if isinstance(value, str) and value:
                try:
                    raw = bytes.fromhex(value)
                except ValueError:
                    raise BadRequest(f"{key} {value[:40]!r} is not a hex string") from None
                holder[key] = base64.b64encode(raw).decode("ascii")


def _ids_to_hex(request: dict[str, Any]) -> None:
    for holder in _id_holders(request):
        for key in _ID_FIELDS:
            value = holder.get(key)
            if isinstance(value, str) and value:
                try:
                    holder[key] = base64.b64decode(value, validate=True).hex()
                except (binascii.Error, ValueError):
                    raise BadRequest(f"{key} is not a valid ID") from None


def span_count(request: Mapping[str, Any]) -> int:
    return sum(1 for _ in spans_of(request))


@dataclass(frozen=True)
class Located:
    """One span with the resource and scope it came under."""

    resource: Mapping[str, Any]
    scope: Mapping[str, Any]
    span: Mapping[str, Any]
    resource_schema: str = ""
    scope_schema: str = ""


def spans_of(request: Mapping[str, Any]) -> Iterator[Located]:
    for resource_spans in _list(request.get("resourceSpans")):
        rs = _dict(resource_spans)
        for scope_spans in _list(rs.get("scopeSpans")):
            ss = _dict(scope_spans)
            for span in _list(ss.get("spans")):
                if isinstance(span, dict):
                    yield Located(
                        _dict(rs.get("resource")),
                        _dict(ss.get("scope")),
                        span,
                        str(rs.get("schemaUrl", "")),
                        str(ss.get("schemaUrl", "")),
                    )


def request_of(spans: list[Located]) -> dict[str, Any]:
    """An export request holding ``spans``, under their resources and scopes (neighbours
    under the same resource and scope share one entry)."""
    resource_spans: list[dict[str, Any]] = []
    last: tuple[str, str] | None = None
    for located in spans:
        r_key = json.dumps([located.resource, located.resource_schema], sort_keys=True)
        s_key = json.dumps([located.scope, located.scope_schema], sort_keys=True)
        if last is None or last[0] != r_key:
            entry: dict[str, Any] = {"resource": dict(located.resource), "scopeSpans": []}
            if located.resource_schema:
                entry["schemaUrl"] = located.resource_schema
            resource_spans.append(entry)
            last = (r_key, "")
        scopes = resource_spans[-1]["scopeSpans"]
        if last[1] != s_key:
            scope: dict[str, Any] = {"scope": dict(located.scope), "spans": []}
            if located.scope_schema:
                scope["schemaUrl"] = located.scope_schema
            scopes.append(scope)
            last = (r_key, s_key)
        scopes[-1]["spans"].append(dict(located.span))
    return {"resourceSpans": resource_spans}


@dataclass(frozen=True)
class Marking:
    """``--only-marked KEY[=VALUE]``: a trace is kept when any of its spans (or a span's
    resource) has attribute ``KEY`` (equal to ``VALUE`` when one is given, compared with
    the attribute's value as text: ``true``, ``1``, ``thumbs_down``)."""

    key: str
    value: str | None = None

    @classmethod
    def parse(cls, text: str) -> Marking:
        key, sep, value = text.partition("=")
        if not key.strip():
            raise ValueError(f"--only-marked {text!r}: give KEY or KEY=VALUE")
        return cls(key.strip(), value if sep else None)

    def marks(self, located: Located) -> bool:
        for attributes in (located.span.get("attributes"), located.resource.get("attributes")):
            for attribute in _list(attributes):
                item = _dict(attribute)
                if item.get("key") != self.key:
                    continue
                if self.value is None or _as_text(_dict(item.get("value"))) == self.value:
                    return True
        return False


def _as_text(value: Mapping[str, Any]) -> str:
    if "stringValue" in value:
        return str(value["stringValue"])
    if "boolValue" in value:
        return "true" if value["boolValue"] else "false"
    for key in ("intValue", "doubleValue"):
        if key in value:
            return str(value[key])
    return json.dumps(value, sort_keys=True)
