"""CEL expressions and dotted state paths, as the runner needs them.

The runner's one door to the contract's expression language (design sections 3 and 5):
``compile_expr`` caches compiled programs, ``evaluate`` returns plain JSON values, and the
path functions apply ``set``/``append``/``increment``/``delete`` to a state document with
``{CEL}`` segments. A failing expression is an ``ExprError`` (a value the environment
turns into a recorded tool error), never a crash of the run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any


class ExprError(Exception):
    """An expression failed to compile or evaluate; the message says where and why."""


@lru_cache(maxsize=4096)
def compile_expr(source: str) -> Any:
    env = _environment()
    try:
        return env.program(env.compile(source))
    except Exception as exc:
        raise ExprError(f"cannot compile {source!r}: {exc}") from exc


@lru_cache(maxsize=1)
def _environment() -> Any:
    import celpy

    return celpy.Environment()


def evaluate(source: str, variables: Mapping[str, Any]) -> Any:
    """Evaluate ``source`` with JSON-like ``variables``; the result as plain JSON values."""
    from celpy.adapter import json_to_cel
    from celpy.evaluation import CELEvalError

    program = compile_expr(source)
    activation = {k: json_to_cel(v) for k, v in variables.items() if _is_name(k)}
    try:
        value = program.evaluate(activation)
    except Exception as exc:
        raise ExprError(f"cannot evaluate {source!r}: {exc}") from exc
    if isinstance(value, CELEvalError):
        raise ExprError(f"cannot evaluate {source!r}: {value.args[0] if value.args else value}")
    return to_json(value)


def truthy(source: str, variables: Mapping[str, Any]) -> bool:
    return evaluate(source, variables) is True


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _is_name(key: str) -> bool:
    return bool(_NAME.match(key))


def to_json(value: Any) -> Any:
    """CEL values (celpy types subclass the Python ones) as plain JSON values."""
    from celpy.celtypes import BoolType

    if isinstance(value, bool | BoolType):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, Mapping):
        return {str(to_json(k)): to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if value is None:
        return None
    return str(value)


_SEGMENT = re.compile(r"\{[^{}]*\}|[^.{}]+")


def split_path(path: str, variables: Mapping[str, Any]) -> list[str]:
    """``orders.{args.order_id}.status`` -> ``["orders", "ORDER_1", "status"]``."""
    parts: list[str] = []
    for match in _SEGMENT.finditer(path):
        token = match.group(0)
        if token.startswith("{"):
            parts.append(str(evaluate(token[1:-1], variables)))
        else:
            parts.append(token)
    if not parts:
        raise ExprError(f"empty state path {path!r}")
    return parts


_MISSING = object()


def get_path(state: Any, parts: list[str]) -> Any:
    """The value at ``parts``, or ``None`` when any step is missing."""
    node = state
    for part in parts:
        if isinstance(node, Mapping):
            node = node.get(part, _MISSING)
        elif (
            isinstance(node, list)
            and part.lstrip("-").isdigit()
            and -len(node) <= int(part) < len(node)
        ):
            node = node[int(part)]
        else:
            return None
        if node is _MISSING:
            return None
    return node


def _parent(state: dict[str, Any], parts: list[str], create: bool) -> Any:
    node: Any = state
    for part in parts[:-1]:
        if isinstance(node, dict):
            if part not in node or not isinstance(node[part], dict | list):
                if not create:
                    return None
                node[part] = {}
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise ExprError(f"path {'.'.join(parts)!r}: {part!r} is not a key of a mapping")
    return node


def apply_op(
    state: dict[str, Any], op: str, parts: list[str], value: Any = None
) -> tuple[Any, Any]:
    """Apply one state operation in place; returns (before, after) at the path."""
    before = get_path(state, parts)
    parent = _parent(state, parts, create=op != "delete")
    last = parts[-1]
    if op == "delete":
        if isinstance(parent, dict):
            parent.pop(last, None)
        elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
            del parent[int(last)]
        return before, None
    if op == "set":
        after = value
    elif op == "append":
        if before is None:
            after = [value]
        elif isinstance(before, list):
            after = [*before, value]
        else:
            raise ExprError(f"append to {'.'.join(parts)!r}, which is not a list")
    elif op == "increment":
        base = 0 if before is None else before
        if not isinstance(base, int | float) or isinstance(base, bool):
            raise ExprError(f"increment of {'.'.join(parts)!r}, which is not a number")
        after = base + (1 if value is None else value)
    else:
        raise ExprError(f"unknown state operation {op!r}")
    if isinstance(parent, dict):
        parent[last] = after
    elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        parent[int(last)] = after
    else:
        raise ExprError(f"cannot write {'.'.join(parts)!r}")
    return before, after
