"""Export formats other evaluation tools load: one module per format, registered here.

Each module has ``NAME``, ``SUFFIX``, a docstring that is its user documentation (what
the target tool gets, what it cannot carry), and ``render(cases, records) -> Rendered``.
Every export states what it could not carry in a summary line; nothing is dropped
silently.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any

from evalcase.authoring.exports.view import ExportCase, from_task
from evalcase.config import Config
from evalcase.contract.task import Task
from evalcase.versioning.export import Export


@dataclass(frozen=True)
class Rendered:
    """The exported text, per thing not carried the IDs of the cases that had it, and
    the cases not exported at all (their task does not build) with why."""

    text: str
    cases: int
    not_carried: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    not_exported: tuple[tuple[str, str], ...] = ()

    def summary(self, name: str) -> str:
        head = f"{name}: {self.cases} case{'s' * (self.cases != 1)} exported"
        if self.not_exported:
            ids = ", ".join(case_id for case_id, _ in self.not_exported)
            head += f"; NOT EXPORTED ({len(self.not_exported)}, fix them first): {ids}"
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

    def chat_sample_limits(self, case: ExportCase) -> None:
        """What no chat-sample format (one input, assertions on the answer) can carry: the
        runner-owned environment, expectations about tool calls, later scripted turns."""
        for what in case.environment:
            self.add(what, case.case_id)
        if case.expected_tools or case.forbidden_tools:
            self.add("expected and forbidden tool calls", case.case_id)
        if len(case.user_turns) > 1:
            self.add("scripted user turns after the first", case.case_id)

    def result(self) -> dict[str, tuple[str, ...]]:
        return {k: tuple(v) for k, v in self._seen.items()}


Render = Callable[[Sequence[ExportCase], Sequence[Mapping[str, Any]]], Rendered]


def _registry() -> dict[str, ModuleType]:
    from evalcase.authoring.exports import inspect_ai, jsonl, openai_evals, promptfoo

    return {m.NAME: m for m in (jsonl, inspect_ai, openai_evals, promptfoo)}


FORMATS = ("jsonl", "inspect", "openai-evals", "promptfoo")


def render(fmt: str, records: Sequence[Mapping[str, Any]], tasks: Sequence[Task]) -> Rendered:
    """The records of evalcase.versioning.export whose task builds, in format ``fmt``
    (every format reads the Task; jsonl also carries the record whole)."""
    module = _registry()[fmt]
    by_id = {t.case_id: t for t in tasks}
    kept = [r for r in records if r.get("case_id") in by_id]
    result: Rendered = module.render([from_task(by_id[str(r["case_id"])]) for r in kept], kept)
    return result


def export(
    config: Config, spec: str, fmt: str, *, use_cache: bool = True
) -> tuple[Export, Rendered]:
    """Read ``spec`` (DATASET, DATASET@vN, DATASET@REV) and render it as ``fmt``. Cases
    whose task does not build are in ``not_exported`` with their problems."""
    from evalcase.actions import export_dataset
    from evalcase.index.dataset import load_dataset

    result = export_dataset(config, spec, use_cache=use_cache)
    dataset = load_dataset(
        config.root, result.dataset_id, revision=result.revision.commit, config=config
    )
    rendered = render(fmt, result.records, dataset.tasks)
    built = {t.case_id for t in dataset.tasks}
    missing = tuple(
        (str(r["case_id"]), "; ".join(r.get("problems") or []) or "its task does not build")
        for r in result.records
        if r.get("case_id") not in built
    )
    from evalcase import scrub

    text = scrub.active().text(rendered.text)  # an export is a written file like any other
    return result, replace(rendered, text=text, not_exported=missing)


def suffix(fmt: str) -> str:
    """The file name ending the format's files use (.jsonl, .yaml)."""
    return str(_registry()[fmt].SUFFIX)


def describe(fmt: str) -> str:
    return (_registry()[fmt].__doc__ or "").strip()
