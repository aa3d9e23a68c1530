"""Export formats other evaluation tools load: one module per format, registered here.

Each module has ``NAME``, ``SUFFIX``, a docstring that is its user documentation (what
the target tool gets, what it cannot carry), and ``render(cases, records, prompts) ->
Rendered`` (``prompts``: the revision's prompt fixtures, by ID).
Every export states what it carried and what it could not in a summary line, computed
case by case: each format says which parts it wrote, judged from what it wrote (an
assert per point, a target naming the rubric), and every part the case has
(``view.parts``: its agent view and judge view, field by field) that was not written is
listed as not carried. Nothing is dropped silently; ``--strict`` makes any loss exit 1.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any

from evalcase.authoring.exports.view import ExportCase, from_task, prompt_problem, unportable
from evalcase.config import Config
from evalcase.contract.prompt import Prompt
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
    carried: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    order: tuple[str, ...] = ()  # the case ID of each exported line or test, in order

    def leaving_out(self, why: str, case_ids: tuple[str, ...]) -> Rendered:
        """The same, with ``case_ids`` listed as not carried at all (left out of the file
        because the format cannot grade them as evalcase does), under ``why``."""
        return replace(self, not_carried={**self.not_carried, why: case_ids})

    @property
    def lossy(self) -> bool:
        return bool(self.not_carried or self.not_exported)

    def summary(self, name: str) -> str:
        head = f"{name}: {self.cases} case{'s' * (self.cases != 1)} exported"
        if self.not_exported:
            ids = ", ".join(case_id for case_id, _ in self.not_exported)
            head += f"; NOT EXPORTED ({len(self.not_exported)}, fix them first): {ids}"
        if not self.not_carried:
            return head + "; everything carried"
        return head + "; not carried: " + _counts(self.not_carried)

    def details(self) -> list[str]:
        """One line per part: carried, and not carried with the case IDs."""
        lines = [f"  carried: {_counts(self.carried)}"] if self.carried else []
        for what, ids in _ordered(self.not_carried):
            lines.append(f"  not carried: {what}: {', '.join(ids)}")
        return lines


def _ordered(parts: Mapping[str, tuple[str, ...]]) -> list[tuple[str, tuple[str, ...]]]:
    from evalcase.authoring.exports.view import PARTS

    rank = {p: i for i, p in enumerate(PARTS)}
    return sorted(parts.items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0]))


def _counts(parts: Mapping[str, tuple[str, ...]]) -> str:
    return ", ".join(
        f"{what} ({len(ids)} case{'s' * (len(ids) != 1)})" for what, ids in _ordered(parts)
    )


class Ledger:
    """What each case had and what the format wrote of it, case by case."""

    def __init__(self) -> None:
        self._missing: dict[str, list[str]] = {}
        self._carried: dict[str, list[str]] = {}
        self._order: list[str] = []

    def account(self, case: ExportCase, written: set[str]) -> None:
        """Every part ``case`` has (``view.parts``) is carried when ``written`` names it,
        else not carried."""
        self._order.append(case.case_id)
        for what in case.present:
            seen = self._carried if what in written else self._missing
            ids = seen.setdefault(what, [])
            if case.case_id not in ids:
                ids.append(case.case_id)

    def rendered(self, text: str, cases: int) -> Rendered:
        return Rendered(
            text,
            cases,
            {k: tuple(v) for k, v in self._missing.items()},
            carried={k: tuple(v) for k, v in self._carried.items()},
            order=tuple(self._order),
        )


def messages_written(case: ExportCase, messages: Sequence[Mapping[str, Any]]) -> set[str]:
    """Which agent-view parts a chat message list holds, read from the messages (the
    prompt fixture: every message of the view it rendered, in order)."""
    out = set()
    roles = [(m.get("role"), m.get("content")) for m in messages]
    if case.prompt is not None and [dict(m) for m in messages] == case.messages():
        out.add("prompt fixture")
    if case.system is not None and ("system", case.system) in roles:
        out.add("system prompt")
    if case.history and all((r, c) in roles for r, c in case.history):
        out.add("conversation history")
    return out


Render = Callable[
    [Sequence[ExportCase], Sequence[Mapping[str, Any]], Mapping[str, Prompt]], Rendered
]


def _registry() -> dict[str, ModuleType]:
    from evalcase.authoring.exports import inspect_ai, jsonl, openai_evals, promptfoo

    return {m.NAME: m for m in (jsonl, inspect_ai, openai_evals, promptfoo)}


FORMATS = ("jsonl", "inspect", "openai-evals", "promptfoo")


def render(
    fmt: str,
    records: Sequence[Mapping[str, Any]],
    tasks: Sequence[Task],
    prompts: Mapping[str, Prompt] | None = None,
) -> Rendered:
    """The records of evalcase.versioning.export whose task builds, in format ``fmt``
    (every format reads the Task, with the case's own prompt fixture applied, from
    ``prompts``: the revision's prompt fixtures; jsonl also carries the record whole)."""
    module = _registry()[fmt]
    prompts = prompts or {}
    by_id = {t.case_id: t for t in tasks}
    refused: list[tuple[str, str]] = []
    if fmt != "jsonl":  # jsonl carries the record whole and grades nothing
        for case_id, task in by_id.items():
            why = unportable(task) or prompt_problem(task, prompts)
            if why is not None:
                refused.append((case_id, why))
    skip = {case_id for case_id, _ in refused}
    kept = [r for r in records if r.get("case_id") in by_id and r.get("case_id") not in skip]
    # The dataset's version is the record's (the release tag's, else the manifest's),
    # never a case's own dataset_version: that says where the case last changed, and the
    # cases of one release may carry several.
    cases = [
        from_task(
            by_id[str(r["case_id"])],
            prompts,
            int(r.get("tool_turns") or 0),
            str(r["dataset_version"]) if r.get("dataset_version") else None,
        )
        for r in kept
    ]
    result: Rendered = module.render(cases, kept, prompts)
    listed = {str(r.get("case_id")) for r in records}
    return replace(result, not_exported=(
        *result.not_exported, *((c, w) for c, w in refused if c in listed)
    ))  # fmt: skip


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
    rendered = render(fmt, result.records, dataset.tasks, dataset.prompts)
    built = {t.case_id for t in dataset.tasks}
    missing = tuple(
        (str(r["case_id"]), "; ".join(r.get("problems") or []) or "its task does not build")
        for r in result.records
        if r.get("case_id") not in built
    )
    from evalcase import scrub

    text = scrub.active().text(rendered.text)  # an export is a written file like any other
    return result, replace(rendered, text=text, not_exported=(*rendered.not_exported, *missing))


def suffix(fmt: str) -> str:
    """The file name ending the format's files use (.jsonl, .yaml)."""
    return str(_registry()[fmt].SUFFIX)


def describe(fmt: str) -> str:
    return (_registry()[fmt].__doc__ or "").strip()
