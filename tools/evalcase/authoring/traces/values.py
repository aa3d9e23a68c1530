"""Helpers the conventions' readers share: JSON held in attribute strings, flattened
attributes (``llm.input_messages.0.message.role``) read back as nested values."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from evalcase.authoring.import_ import nesting_depth
from evalcase.authoring.traces.model import MAX_DEPTH


class BadValue(ValueError):
    """An attribute whose content cannot be read (the message says which and why)."""


def loads(value: Any, key: str) -> Any:
    """A JSON value held in an attribute string (or already structured)."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text or text[0] not in "[{":
        return value
    try:
        parsed = json.loads(text)
    except RecursionError:
        raise BadValue(
            f"attribute {key} holds JSON nested deeper than {MAX_DEPTH} levels"
        ) from None
    except json.JSONDecodeError:
        return value
    opened = text.count("[") + text.count("{")
    if opened > MAX_DEPTH and nesting_depth(parsed, MAX_DEPTH) > MAX_DEPTH:
        raise BadValue(f"attribute {key} holds JSON nested deeper than {MAX_DEPTH} levels")
    return parsed


def nested(attributes: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """``prefix.a.0.b = v`` attributes as ``{"a": {"0": {"b": v}}}``."""
    out: dict[str, Any] = {}
    start = prefix + "."
    for key, value in attributes.items():
        if not key.startswith(start):
            continue
        node = out
        parts = key[len(start) :].split(".")
        if len(parts) > MAX_DEPTH:
            raise BadValue(f"attribute {key} is nested deeper than {MAX_DEPTH} levels")
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[parts[-1]] = value
    return out


def items(node: Any) -> list[Any]:
    """A list, or the numbered children of a mapping in number order."""
    if isinstance(node, list):
        return node
    if isinstance(node, dict):
        numbered = [(int(k), v) for k, v in node.items() if k.isdigit()]
        return [v for _, v in sorted(numbered, key=lambda kv: kv[0])]
    return []


def text(value: Any) -> str:
    """Message content as text: a string, or the text parts of a list of parts."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        pieces = []
        for part in value:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, dict):
                inner = part.get("content", part.get("text"))
                if isinstance(inner, str) and part.get("type", "text") == "text":
                    pieces.append(inner)
        return "\n".join(pieces)
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def arguments(value: Any, key: str) -> dict[str, Any]:
    """A tool call's arguments: a JSON object (or a string holding one)."""
    parsed = loads(value, key) if value is not None else {}
    if parsed in ("", None):
        return {}
    if not isinstance(parsed, dict):
        raise BadValue(f"{key} is not a JSON object of arguments")
    return parsed


def result(value: Any, key: str) -> Any:
    """A tool's result: JSON when it holds JSON, else the text."""
    return loads(value, key)


def definition(entry: Any) -> tuple[str, str, Any] | None:
    """(name, description, parameters) of a tool definition, flat (``{type, name,
    description, parameters}``, as GenAI writes it) or OpenAI-shaped (``{type:
    function, function: {...}}``)."""
    if not isinstance(entry, dict):
        return None
    raw = entry.get("function")
    inner: dict[str, Any] = raw if isinstance(raw, dict) else entry
    name = inner.get("name")
    if not isinstance(name, str) or not name:
        return None
    description = inner.get("description")
    return name, description if isinstance(description, str) else "", inner.get("parameters")
