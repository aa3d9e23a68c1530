"""Which cases a run runs: ``--suite`` and ``--select``, and how they combine.

- A manifest suite lists criteria (``case_ids``, ``tags``, ``dataset_roles``,
  ``risk_levels``, ``case_types``): a case is in the suite when it meets **every**
  criterion the suite names, and a criterion is met by **any** of its values (``tags:
  [smoke, golden]`` means smoke or golden). A suite with no criteria holds every case.
  The selection is :mod:`evalcase.suites`', the one lint and the release gates make.
- ``--select PATTERN`` (repeatable) picks cases by ID glob (``refund_*``) or by facet:
  ``tag:smoke``, ``role:golden``, ``risk:P0``, ``type:agent``; a facet value may be a
  glob too (``risk:P[01]``). Several ``--select`` are a union.
- Several ``--suite`` are a union. ``--suite`` and ``--select`` together are an
  intersection: ``--suite safety --select risk:P0`` runs the P0 cases of the safety suite.
- Nothing selected is an error (a run of nothing would say nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any, Protocol, TypeVar

from evalcase import suites


class Selectable(Protocol):
    @property
    def case_id(self) -> str: ...

    @property
    def meta(self) -> Mapping[str, Any]: ...


T = TypeVar("T", bound=Selectable)

# facet name in --select -> (suite key, meta keys that may hold it)
FACETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "tag": ("tags", ("tags",)),
    "role": ("dataset_roles", ("dataset_roles", "roles", "dataset_role")),
    "risk": ("risk_levels", ("risk_level",)),
    "type": ("case_types", ("case_types",)),
}


class SelectionError(ValueError):
    """A selector that cannot be applied (unknown suite, bad facet, nothing selected)."""


def facet_values(task: Selectable, meta_keys: Sequence[str]) -> list[str]:
    for key in meta_keys:
        value = task.meta.get(key)
        if value is None:
            continue
        if isinstance(value, str):
            return [value]
        if isinstance(value, Iterable):
            return [str(v) for v in value]
        return [str(value)]
    return []


def facets(task: Selectable) -> suites.Facets:
    """What suites select a task by (evalcase.suites)."""
    risk = facet_values(task, FACETS["risk"][1])
    return suites.Facets(
        case_id=task.case_id,
        tags=tuple(facet_values(task, FACETS["tag"][1])),
        dataset_roles=tuple(facet_values(task, FACETS["role"][1])),
        risk_level=risk[0] if risk else None,
        case_types=tuple(facet_values(task, FACETS["type"][1])),
    )


def in_suite(task: Selectable, suite: Mapping[str, Any], name: str = "") -> bool:
    """evalcase.suites' selection: the one lint and the gates make."""
    try:
        wanted = suites.criteria(suite, name)
    except suites.SuiteError as exc:
        raise SelectionError(str(exc)) from None
    return suites.in_suite(facets(task), wanted)


def matches(task: Selectable, pattern: str) -> bool:
    facet, sep, value = pattern.partition(":")
    if not sep:
        return fnmatchcase(task.case_id, pattern)
    if facet not in FACETS:
        raise SelectionError(
            f"--select {pattern!r}: unknown facet {facet!r}; use an ID glob or one of "
            + ", ".join(f"{f}:VALUE" for f in FACETS)
        )
    return any(fnmatchcase(v, value) for v in facet_values(task, FACETS[facet][1]))


def select(
    tasks: Sequence[T],
    named: Mapping[str, Mapping[str, Any]],
    suite_names: Sequence[str] = (),
    patterns: Sequence[str] = (),
) -> list[T]:
    for name in suite_names:
        if name not in named:
            known = ", ".join(sorted(named)) or "none"
            raise SelectionError(f"no suite {name!r} in the manifest (its suites: {known})")
    chosen = [
        t
        for t in tasks
        if (not suite_names or any(in_suite(t, named[n], n) for n in suite_names))
        and (not patterns or any(matches(t, p) for p in patterns))
    ]
    if not chosen:
        what = " and ".join(
            x for x in (
                f"suite {', '.join(suite_names)}" if suite_names else "",
                f"--select {' '.join(patterns)}" if patterns else "",
            ) if x
        ) or "the dataset"  # fmt: skip
        raise SelectionError(f"{what} selects no case")
    return chosen
