"""A value valid for a JSON Schema, for the ``flail`` agent's tool calls.

``example(schema)`` gives the plainest value the schema accepts: an object with its
required properties, the first ``enum`` or ``const`` value, the smallest allowed number,
a string as long as ``minLength`` asks, a list as long as ``minItems`` asks, the first
alternative of ``anyOf`` / ``oneOf``. It is a best effort, not a solver: a ``pattern`` or
a ``format`` is not honoured (the environment then answers with its own validation
error, which is what a flailing agent meets too).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_DEPTH = 8


def example(schema: Any, depth: int = 0) -> Any:
    if not isinstance(schema, Mapping) or depth > _DEPTH:
        return None
    if "const" in schema:
        return schema["const"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            return example(options[0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if kind is None and "properties" in schema:
        kind = "object"
    if kind == "object":
        props = schema.get("properties")
        props = props if isinstance(props, Mapping) else {}
        required = schema.get("required")
        names = [str(n) for n in required] if isinstance(required, list) else []
        return {name: example(props.get(name, {}), depth + 1) for name in names}
    if kind == "array":
        count = schema.get("minItems")
        count = count if isinstance(count, int) and count > 0 else 0
        return [example(schema.get("items", {}), depth + 1) for _ in range(count)]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        value = low if isinstance(low, int | float) and not isinstance(low, bool) else 0
        if "exclusiveMinimum" in schema and value == schema.get("exclusiveMinimum"):
            value += 1
        high = schema.get("maximum")
        if isinstance(high, int | float) and not isinstance(high, bool) and value > high:
            value = high
        return int(value) if kind == "integer" else value
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    if kind == "string" or kind is None:
        length = schema.get("minLength")
        length = length if isinstance(length, int) and length > 1 else 1
        return "x" * length
    return None


PLACEHOLDER = "evalcase audit"


def placeholder(schema: Any) -> Any:
    """A value for a parameter that names nothing: free text (a string schema without
    ``enum``, ``const``, ``pattern`` or ``format``) or an amount (a number or integer
    without ``enum``), for the audit's foreign writes: the text ``evalcase audit`` (to
    ``minLength``/``maxLength``), the amount 1 (within ``minimum``/``maximum``). Else None."""
    if not isinstance(schema, Mapping) or any(k in schema for k in ("enum", "const")):
        return None
    kind = schema.get("type")
    if kind == "string" and not any(k in schema for k in ("pattern", "format")):
        low, high = schema.get("minLength"), schema.get("maxLength")
        text = PLACEHOLDER
        if isinstance(low, int) and len(text) < low:
            text = text.ljust(low, ".")
        if isinstance(high, int) and len(text) > high:
            text = text[: max(high, 0)]
        return text
    if kind in ("number", "integer"):
        value: int | float = 1
        low, high = schema.get("minimum"), schema.get("maximum")
        if isinstance(low, int | float) and not isinstance(low, bool) and value < low:
            value = low
        if isinstance(high, int | float) and not isinstance(high, bool) and value > high:
            value = high
        return int(value) if kind == "integer" else value
    return None
