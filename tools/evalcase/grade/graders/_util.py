"""Small readers of the attempt record shared by graders."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalcase.grade.model import Attempt
from evalcase.grade.spec import as_list, field_of


def calls(attempt: Attempt) -> list[Mapping[str, Any]]:
    return [c for c in attempt.get("calls") or () if isinstance(c, Mapping)]


def output(attempt: Attempt) -> str | None:
    value = attempt.get("output")
    return value if isinstance(value, str) else None


def subset_match(expected: Any, actual: Any) -> bool:
    """Named fields only: every key of an expected mapping must match; others are ignored."""
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return False
        return all(k in actual and subset_match(v, actual[k]) for k, v in expected.items())
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    if isinstance(expected, float | int) and isinstance(actual, float | int):
        return abs(float(expected) - float(actual)) < 1e-9
    return bool(expected == actual)


def text_values(spec: Any, options: Mapping[str, Any], *names: str) -> list[Any]:
    """The first non-empty list among grader options and the case's text fields."""
    for name in names:
        if options.get(name):
            return as_list(options[name])
    text = field_of(spec, "text", {}) or {}
    constraints = text.get("constraints") if isinstance(text, Mapping) else None
    for name in names:
        if isinstance(text, Mapping) and text.get(name):
            return as_list(text[name])
        if isinstance(constraints, Mapping) and constraints.get(name):
            return as_list(constraints[name])
    return []


def short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
