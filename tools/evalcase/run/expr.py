"""CEL expressions and dotted state paths, as the runner needs them.

A thin door onto ``evalcase.contract.cel`` and ``evalcase.contract.paths`` (design
sections 3 and 5): errors come back from those as values; here they become an
``ExprError`` that the environment turns into a recorded tool error, never a crash of
the run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalcase.contract import cel, paths


class ExprError(Exception):
    """An expression or path failed; the message says which and why."""


def evaluate(source: str, variables: Mapping[str, Any]) -> Any:
    """Evaluate ``source`` with JSON-like ``variables``; plain Python values back."""
    value = cel.evaluate(source, variables)
    if isinstance(value, cel.CelError):
        raise ExprError(f"{source!r} does not compile: {value.message}")
    if isinstance(value, cel.EvalError):
        raise ExprError(f"{source!r}: {value.message}")
    return value


def truthy(source: str, variables: Mapping[str, Any]) -> bool:
    return evaluate(source, variables) is True


def split_path(path: str, variables: Mapping[str, Any]) -> list[str]:
    """``orders.{args.order_id}.status`` -> ``["orders", "ORDER_1", "status"]``."""
    segments = paths.parse(path)
    if isinstance(segments, paths.PathError):
        raise ExprError(f"state path {path!r}: {segments.message}")
    resolved = paths.resolve(segments, lambda source: evaluate(source, variables))
    if isinstance(resolved, paths.PathError):
        raise ExprError(f"state path {path!r}: {resolved.message}")
    return list(resolved)


def get_path(state: Any, parts: list[str]) -> Any:
    """The value at ``parts``, or ``None`` when any step is missing."""
    value = paths.get(state, parts)
    return None if value is paths.MISSING else value


def apply_op(
    state: dict[str, Any], op: str, parts: list[str], value: Any = None
) -> tuple[Any, Any]:
    """Apply one state operation in place; returns (before, after) at the path."""
    if op == "delete":
        change = paths.delete(state, parts)
    elif op == "increment":
        change = paths.increment(state, parts, 1 if value is None else value)
    elif op == "set":
        change = paths.set_(state, parts, value)
    elif op == "append":
        change = paths.append(state, parts, value)
    else:
        raise ExprError(f"unknown state operation {op!r}")
    if isinstance(change, paths.PathError):
        raise ExprError(f"{op} {change.path}: {change.message}")
    return change.before, change.after
