"""CEL evaluation and dotted state paths for graders.

One place for both so that graders never depend on the CEL library directly: evaluation is
the contract's (``contract.cel``), the same as the runner's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MISSING: Any = object()


@dataclass(frozen=True)
class CelFailure:
    """A rule that could not be compiled or evaluated: a grader error, never a pass."""

    expression: str
    message: str


def evaluate(expression: str, variables: Mapping[str, Any]) -> Any | CelFailure:
    """The value of ``expression`` (plain Python data), or a ``CelFailure``."""
    from evalcase.contract import cel

    compiled = cel.compile(expression)
    if isinstance(compiled, cel.CelError):
        return CelFailure(
            expression,
            f"does not compile (line {compiled.line}, column {compiled.column}): "
            f"{compiled.message}",
        )
    value = cel.evaluate(compiled, variables)
    if isinstance(value, cel.EvalError | cel.CelError):
        return CelFailure(expression, value.message)
    return value


def check(expression: str, variables: Mapping[str, Any]) -> bool | CelFailure:
    """A rule that must be true: True/False, or a failure when it is not a boolean."""
    value = evaluate(expression, variables)
    if isinstance(value, CelFailure):
        return value
    if not isinstance(value, bool):
        return CelFailure(expression, f"is not a condition (gave {type(value).__name__})")
    return value


def sugar(condition: Any) -> str | None:
    """``{path: value}`` is sugar for ``path == value`` (docs/contract.md)."""
    if isinstance(condition, str):
        return condition
    if isinstance(condition, Mapping) and condition:
        from evalcase.contract.build import condition_text

        return " && ".join(condition_text(condition))
    return None


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
