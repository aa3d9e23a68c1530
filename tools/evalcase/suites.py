"""A manifest suite's criteria: one vocabulary and one selector for lint, ``evalcase run
--suite`` and release gates, so that the three can never select different cases.

A suite lists criteria, each a list of values:

- ``case_ids``: the case's ID;
- ``tags``: the case's ``metadata.tags``;
- ``dataset_roles``: the case's ``metadata.dataset_role``;
- ``risk_levels``: the case's ``risk_level``;
- ``case_types``: the case's ``case_types``.

A case is in the suite when it meets **every** criterion the suite names, and a criterion
is met by **any** of its values (``tags: [smoke, golden]``: smoke or golden). A value may
be a glob (``case_ids: [refund_*]``, ``risk_levels: ["P[01]"]``). A suite with no criteria
(only a ``description``) holds every case. ``cases``, the spelling an earlier
docs/running.md used, is read as ``case_ids`` (and lint reports it, EC102, with the fix).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

CRITERIA = ("case_ids", "tags", "dataset_roles", "risk_levels", "case_types")
# Old spelling -> the criterion it means.
ALIASES = {"cases": "case_ids"}
# Keys of a suite that select nothing.
NOT_CRITERIA = frozenset({"description"})

Criteria = Mapping[str, tuple[str, ...]]


class SuiteError(ValueError):
    """A suite that cannot be applied (a key that is not a criterion)."""


@dataclass(frozen=True)
class Facets:
    """What suites select a case by."""

    case_id: str
    tags: tuple[str, ...] = ()
    dataset_roles: tuple[str, ...] = ()
    risk_level: str | None = None
    case_types: tuple[str, ...] = ()

    def values(self, criterion: str) -> tuple[str, ...]:
        if criterion == "case_ids":
            return (self.case_id,)
        if criterion == "risk_levels":
            return () if self.risk_level is None else (self.risk_level,)
        found: tuple[str, ...] = getattr(self, criterion)
        return found


def strings(value: Any) -> tuple[str, ...]:
    """A criterion's values: a list of values, or one value."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Iterable) and not isinstance(value, Mapping):
        return tuple(str(v) for v in value)
    return (str(value),)


def criteria(suite: Mapping[str, Any], name: str = "") -> dict[str, tuple[str, ...]]:
    """The criteria of one suite, old spellings read as the current ones."""
    out: dict[str, tuple[str, ...]] = {}
    for key, value in suite.items():
        key = str(key)
        if key in NOT_CRITERIA or key.startswith("x-"):
            continue
        criterion = ALIASES.get(key, key)
        if criterion not in CRITERIA:
            where = f"suite {name!r}: " if name else ""
            raise SuiteError(f"{where}{key!r} is not a suite criterion; use {', '.join(CRITERIA)}")
        out[criterion] = out.get(criterion, ()) + strings(value)
    return out


def in_suite(case: Facets, wanted: Criteria) -> bool:
    """Whether ``case`` meets every criterion (any value of each, globs allowed)."""
    for criterion, values in wanted.items():
        have = case.values(criterion)
        if not any(fnmatchcase(h, w) for h in have for w in values):
            return False
    return True
