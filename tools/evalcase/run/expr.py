"""CEL expressions and dotted state paths, as the runner needs them.

A thin door onto ``evalcase.contract.cel`` and ``evalcase.contract.paths`` (design
sections 3 and 5): errors come back from those as values; here they become an
``ExprError`` that the environment turns into a recorded tool error, never a crash of
the run.

Every evaluation is bounded by the attempt's deadline (:func:`bounded`): one that could be
expensive runs in a killable worker process (:mod:`evalcase.run.celworker`), and one
still running at the deadline ends the attempt as a recorded ``timeout``. Only the
variables an expression names are passed to it, so that the cost of an evaluation does
not grow with the state or the calls it does not read.

Within :func:`scoped` (the environment, for each attempt) conversions are kept: a state
key is converted to CEL once, and again only after a change to it
(:class:`evalcase.contract.cel.Scopes`), in process and in the worker alike (a worker is
sent a large value once, then only its token).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from evalcase.contract import cel, paths
from evalcase.run import celworker
from evalcase.run.protocol import AgentFault

# What may make an evaluation expensive: a comprehension, or + (strings and lists grow).
_COSTLY = re.compile(
    r"\.\s*(all|exists|exists_one|existsOne|map|filter|transformList|transformMap|"
    r"transformMapEntry|sortBy|range)\s*\(|\+"
)
_bounds = threading.local()


@contextmanager
def bounded(deadline: float, memory_mb: int = celworker.DEFAULT_MEMORY_MB) -> Iterator[None]:
    """Evaluations in this thread stop at ``deadline`` (a ``time.monotonic()`` value)."""
    saved = getattr(_bounds, "value", None)
    _bounds.value = (deadline, memory_mb)
    try:
        yield
    finally:
        _bounds.value = saved


@contextmanager
def scoped(scopes: cel.Scopes) -> Iterator[None]:
    """Evaluations in this thread reuse ``scopes``' conversions (one per attempt)."""
    saved = getattr(_bounds, "scopes", None)
    _bounds.scopes = scopes
    try:
        yield
    finally:
        _bounds.scopes = saved


class ExprError(Exception):
    """An expression or path failed; the message says which and why."""


def evaluate(source: str, variables: Mapping[str, Any]) -> Any:
    """Evaluate ``source`` with JSON-like ``variables``; plain Python values back."""
    analysis = cel.analyze(source) if isinstance(source, str) else None
    if analysis is not None and analysis.error is None:
        roots = analysis.roots
        variables = {k: v for k, v in variables.items() if k in roots}
    bounds = getattr(_bounds, "value", None)
    if bounds is not None and time.monotonic() >= bounds[0]:
        raise AgentFault("timeout", "the attempt's deadline passed during tool work")
    scopes: cel.Scopes | None = getattr(_bounds, "scopes", None)
    if bounds is not None and isinstance(source, str) and _COSTLY.search(source):
        try:
            value = celworker.evaluate(source, variables, bounds[0], bounds[1], scopes)
        except celworker.WorkerTimeout:
            raise AgentFault(
                "timeout", f"the expression {source[:80]!r} was still running at the deadline"
            ) from None
        except celworker.WorkerFailed:
            raise ExprError(
                f"{source[:80]!r}: the evaluation exceeded its memory limit of {bounds[1]} MB"
            ) from None
    elif scopes is not None and isinstance(source, str):
        value = scopes.evaluate(source, variables)
    else:
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
