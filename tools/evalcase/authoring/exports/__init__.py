"""Export formats other evaluation tools load: one module per format, registered here.

Each module has ``NAME``, ``SUFFIX``, a docstring that is its user documentation (what
the target tool gets, what it cannot carry), and ``render(cases, records) -> Rendered``.
Every export states what it could not carry in a summary line; nothing is dropped
silently.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from evalcase.authoring.exports.view import ExportCase, from_record


@dataclass(frozen=True)
class Rendered:
    """The exported text, and per thing not carried the IDs of the cases that had it."""

    text: str
    cases: int
    not_carried: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def summary(self, name: str) -> str:
        head = f"{name}: {self.cases} case{'s' * (self.cases != 1)} exported"
        if not self.not_carried:
            return head + "; everything carried"
        parts = [
            f"{what} ({len(ids)} case{'s' * (len(ids) != 1)})"
            for what, ids in sorted(self.not_carried.items())
        ]
        return head + "; not carried: " + ", ".join(parts)


class NotCarried:
    """Collects what a format cannot express, case by case."""

    def __init__(self) -> None:
        self._seen: dict[str, list[str]] = {}

    def add(self, what: str, case_id: str) -> None:
        ids = self._seen.setdefault(what, [])
        if case_id not in ids:
            ids.append(case_id)

    def result(self) -> dict[str, tuple[str, ...]]:
        return {k: tuple(v) for k, v in self._seen.items()}


Render = Callable[[Sequence[ExportCase], Sequence[Mapping[str, Any]]], Rendered]


def _registry() -> dict[str, ModuleType]:
    from evalcase.authoring.exports import inspect_ai, jsonl, openai_evals, promptfoo

    return {m.NAME: m for m in (jsonl, inspect_ai, openai_evals, promptfoo)}


FORMATS = ("jsonl", "inspect", "openai-evals", "promptfoo")


def render(fmt: str, records: Sequence[Mapping[str, Any]]) -> Rendered:
    """Records of evalcase.versioning.export in format ``fmt``."""
    module = _registry()[fmt]
    cases = [from_record(r) for r in records]
    result: Rendered = module.render(cases, records)
    return result


def suffix(fmt: str) -> str:
    """The file name ending the format's files use (.jsonl, .yaml)."""
    return str(_registry()[fmt].SUFFIX)


def describe(fmt: str) -> str:
    return (_registry()[fmt].__doc__ or "").strip()
