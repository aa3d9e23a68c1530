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
