"""Which cases a run runs: ``--suite`` and ``--select``, and how they combine.

- A manifest suite lists criteria (``tags``, ``dataset_roles``, ``risk_levels``,
  ``case_types``, ``cases``): a case is in the suite when it meets **every** criterion the
  suite names, and a criterion is met by **any** of its values (``tags: [smoke, golden]``
  means smoke or golden). A suite with no criteria holds every case.
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
SUITE_KEYS = {suite_key: meta_keys for suite_key, meta_keys in FACETS.values()}


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


def in_suite(task: Selectable, suite: Mapping[str, Any]) -> bool:
    for key, wanted in suite.items():
        if key == "description":
            continue
        values = [wanted] if isinstance(wanted, str) else [str(w) for w in wanted or ()]
        if key == "cases":
            have = [task.case_id]
        elif key in SUITE_KEYS:
            have = facet_values(task, SUITE_KEYS[key])
        else:
            raise SelectionError(
                f"suite criterion {key!r} is not one of cases, {', '.join(SUITE_KEYS)}"
            )
        if not any(fnmatchcase(h, w) for h in have for w in values):
            return False
    return True


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
    suites: Mapping[str, Mapping[str, Any]],
    suite_names: Sequence[str] = (),
    patterns: Sequence[str] = (),
) -> list[T]:
    for name in suite_names:
        if name not in suites:
            known = ", ".join(sorted(suites)) or "none"
            raise SelectionError(f"no suite {name!r} in the manifest (its suites: {known})")
    chosen = [
        t
        for t in tasks
        if (not suite_names or any(in_suite(t, suites[n]) for n in suite_names))
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
