"""Small readers shared by graders."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalcase.contract.attempt import ToolCallRecord
from evalcase.grade.spec import JudgeSpec, as_list


def call_view(
    calls: tuple[ToolCallRecord, ...], *fields: str, ok: bool = True
) -> list[dict[str, Any]]:
    """The calls as CEL expressions see them: the named fields of each (``None`` for a
    field a call does not have), with ``ok`` (no error)."""
    out = []
    for call in calls:
        view = {name: getattr(call, name, None) for name in fields}
        if ok:
            view["ok"] = call.error is None
        out.append(view)
    return out


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


def text_values(spec: JudgeSpec, options: Mapping[str, Any], *names: str) -> list[Any]:
    """The first non-empty list among grader options and the case's text fields."""
    for name in names:
        if options.get(name):
            return as_list(options[name])
    text = spec.text
    constraints = text.get("constraints")
    for name in names:
        if text.get(name):
            return as_list(text[name])
        if isinstance(constraints, Mapping) and constraints.get(name):
            return as_list(constraints[name])
    return []


def short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
