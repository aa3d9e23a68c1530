"""The merged initial state of a case, as lint sees it from facts (no file is re-read).

The same merge as evalcase.contract.state (fixtures in order, then inline state), on the
leaves the facts carry: which dotted paths exist, which top-level keys the CEL contexts
offer, and which leaves two fixtures set differently.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace

from evalcase.index.facts import CaseFacts, FixtureFacts
from evalcase.index.repo import RepoIndex

STATE_REF_FIELDS = ("state.fixtures", "initial_state.fixtures", "context.fixtures")


@dataclass
class Conflict:
    path: str
    first: FixtureFacts
    first_at: tuple[int, int]
    second: FixtureFacts
    second_at: tuple[int, int]
    ref_at: tuple[int, int]  # where the case names the second fixture


@dataclass
class CaseState:
    complete: bool  # every state fixture resolved
    # Every leaf and every prefix of one. Cases without inline state share their
    # fixtures' sets: a run holds one state per case.
    paths: AbstractSet[str] = field(default_factory=set)
    leaves: AbstractSet[str] = field(default_factory=set)
    conflicts: list[Conflict] = field(default_factory=list)
    roots: AbstractSet[str] = field(default_factory=set)  # top-level keys

    def has(self, path: str) -> bool:
        """The path exists, or lies below a leaf that is a list or free-form value."""
        if path in self.paths:
            return True
        parts = path.split(".")
        return any(".".join(parts[:i]) in self.leaves for i in range(1, len(parts)))


def _add(paths: set[str], leaves: set[str], path: str) -> None:
    """The leaf, and it and every dotted prefix of it as a path. A path in ``paths`` has
    its prefixes there already (they come in together), so the walk up stops at the
    first one found: a state's siblings share their parents' work."""
    leaves.add(path)
    while path not in paths:
        paths.add(path)
        cut = path.rfind(".")
        if cut < 0:
            break
        path = path[:cut]


def case_state(index: RepoIndex, case: CaseFacts) -> CaseState:
    """The state a case starts from, from its state fixtures and inline state.

    Computed once per run and case (three rules read it); what the fixtures contribute is
    computed once per sequence of fixture IDs, which many cases share."""
    known = index.derived.setdefault("case_state", {})
    state = known.get(case.path)
    if state is None:
        state = known[case.path] = _case_state(index, case)
    assert isinstance(state, CaseState)
    return state


# Conflicts of a fixture sequence, with the position in it of the fixture that clashes
# (the case's reference to it gives the place to report).
_Merged = tuple[
    bool, frozenset[str], frozenset[str], frozenset[str], tuple[tuple[int, Conflict], ...]
]


def _case_state(index: RepoIndex, case: CaseFacts) -> CaseState:
    refs = [(t, line, col) for f, _k, t, line, col in case.refs if f in STATE_REF_FIELDS]
    targets = tuple(t for t, _line, _col in refs)
    merged_by_targets = index.derived.setdefault("fixture_state", {})
    merged = merged_by_targets.get(targets)
    if merged is None:
        merged = merged_by_targets[targets] = _merge(index, targets)
    complete, paths, leaves, roots, conflicts = merged
    at = [replace(c, ref_at=refs[i][1:]) for i, c in conflicts]
    if not case.inline_state:
        return CaseState(complete, paths, leaves, at, roots)
    own_paths, own_leaves = set(paths), set(leaves)
    for path, _value, _line, _col in case.inline_state:
        _add(own_paths, own_leaves, path)
    return CaseState(complete, own_paths, own_leaves, at, _roots(own_paths))


def _roots(paths: AbstractSet[str]) -> frozenset[str]:
    return frozenset(p.split(".", 1)[0] for p in paths)


def _merge(index: RepoIndex, targets: tuple[str, ...]) -> _Merged:
    complete = True
    paths: set[str] = set()
    leaves: set[str] = set()
    conflicts: list[tuple[int, Conflict]] = []
    owners: dict[str, tuple[str, FixtureFacts, int, int]] = {}
    # dotted prefix -> the first leaf below it (value, fixture, line, column)
    below: dict[str, tuple[str, FixtureFacts, int, int]] = {}
    found = [(i, index.fixture(target)) for i, target in enumerate(targets)]
    states = {id(f): f for _i, f in found if f is not None and f.kind and f.kind[0] == "state"}
    for position, fixture in found:
        if fixture is None:
            complete = False
            continue
        if fixture.kind is None or fixture.kind[0] != "state":
            continue  # a conversation in context.fixtures
        if fixture.state_leaves is None:  # never a lint's facts: a run's load made these
            raise ValueError(f"{fixture.path}: facts analysed without state leaves")
        if len(states) == 1:
            # One state fixture (perhaps named twice): nothing to clash with, only paths.
            for leaf in fixture.state_leaves:
                _add(paths, leaves, leaf[0])
            continue
        for path, value, f_line, f_col in fixture.state_leaves:
            here = (value, fixture, f_line, f_col)
            parts = path.split(".")
            clash = owners.get(path)
            if clash is None:
                # a mapping where another fixture has a value, or the reverse
                clash = next(
                    (
                        owners[p]
                        for i in range(1, len(parts))
                        if (p := ".".join(parts[:i])) in owners
                    ),
                    None,
                ) or below.get(path)
            if clash is not None and clash[1] is not fixture and clash[0] != value:
                conflict = Conflict(path, clash[1], clash[2:], fixture, (f_line, f_col), (0, 0))
                conflicts.append((position, conflict))
            owners[path] = here
            for i in range(1, len(parts)):
                below.setdefault(".".join(parts[:i]), here)
            _add(paths, leaves, path)
    return complete, frozenset(paths), frozenset(leaves), _roots(paths), tuple(conflicts)
