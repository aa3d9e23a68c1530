"""CEL evaluation and dotted state paths for graders.

One place for both so that graders never depend on the CEL library directly: when the
contract's ``contract.cel`` lands this module delegates to it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

MISSING: Any = object()


@dataclass(frozen=True)
class CelFailure:
    """A rule that could not be compiled or evaluated: a grader error, never a pass."""

    expression: str
    message: str


def _message(exc: BaseException) -> str:
    text = str(exc.args[0]) if exc.args else str(exc)
    # celpy puts its whole activation into the message; the first clause is the useful part.
    text = text.split(" (in activation", 1)[0].strip("(\"' ")
    return text[:200]


@lru_cache(maxsize=512)
def _program(expression: str) -> Any:
    import celpy

    env = celpy.Environment()
    return env.program(env.compile(expression))


def evaluate(expression: str, variables: Mapping[str, Any]) -> Any | CelFailure:
    """The value of ``expression`` (Python data), or a ``CelFailure``."""
    import celpy

    try:
        program = _program(expression)
    except Exception as exc:  # compile errors of untrusted rule text are values
        return CelFailure(expression, f"does not compile: {_message(exc)}")
    try:
        activation = {k: celpy.json_to_cel(_jsonable(v)) for k, v in variables.items()}  # type: ignore[attr-defined]
        value = program.evaluate(activation)
    except Exception as exc:
        return CelFailure(expression, _message(exc))
    if isinstance(value, Exception):
        return CelFailure(expression, _message(value))
    return _plain(value)


def check(expression: str, variables: Mapping[str, Any]) -> bool | CelFailure:
    """A rule that must be true: True/False, or a failure when it is not a boolean."""
    value = evaluate(expression, variables)
    if isinstance(value, CelFailure):
        return value
    if not isinstance(value, bool):
        return CelFailure(expression, f"is not a condition (gave {type(value).__name__})")
    return value


def sugar(condition: Any) -> str | None:
    """``{path: value}`` is sugar for ``path == value`` (contract section 5)."""
    if isinstance(condition, str):
        return condition
    if isinstance(condition, Mapping) and condition:
        import json

        parts = [
            f"{path} == {json.dumps(value, ensure_ascii=False)}"
            for path, value in condition.items()
        ]
        return " && ".join(parts)
    return None


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _plain(value: Any) -> Any:
    import celpy

    if isinstance(value, celpy.celtypes.BoolType):
        return bool(value)
    if isinstance(value, celpy.celtypes.IntType | celpy.celtypes.UintType):
        return int(value)
    if isinstance(value, celpy.celtypes.DoubleType):
        return float(value)
    if isinstance(value, celpy.celtypes.StringType):
        return str(value)
    if isinstance(value, Mapping):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


_SEGMENT = re.compile(r"\{[^}]*\}|[^.]+")


def split_path(path: str) -> list[str]:
    return _SEGMENT.findall(path)


def resolve_path(path: str, variables: Mapping[str, Any]) -> str | CelFailure:
    """Replace ``{CEL}`` segments by their values (``refunds.{args.id}.status``)."""
    out = []
    for segment in split_path(path):
        if segment.startswith("{") and segment.endswith("}"):
            value = evaluate(segment[1:-1], variables)
            if isinstance(value, CelFailure):
                return value
            out.append(str(value))
        else:
            out.append(segment)
    return ".".join(out)


def get_path(document: Any, path: str) -> Any:
    """The value at a dotted path, or ``MISSING``."""
    node = document
    for segment in split_path(path):
        if isinstance(node, Mapping):
            if segment not in node:
                return MISSING
            node = node[segment]
        elif isinstance(node, list) and segment.lstrip("-").isdigit():
            index = int(segment)
            if not -len(node) <= index < len(node):
                return MISSING
            node = node[index]
        else:
            return MISSING
    return node


def state_variables(state: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
    """Top-level state keys plus ``state``; reserved names win over state keys."""
    out: dict[str, Any] = {k: v for k, v in state.items() if isinstance(k, str)}
    out["state"] = state
    out.update(extra)
    return out
