"""A tool's expression reads a state field that no state the tool can meet has.

A tool fixture's responses read the state of the call (``when``, ``let``,
``result_from``, the steps of ``state_change``), and so do the preconditions of its own
``side_effect_policy``: ``accounts[args.account_id].owner`` selects the field ``owner``
of whichever account the call names. A misspelt field (``.ownr``) compiles, and the
attempt then ends with ``Key not found in map``. The states the tool can meet are known:
the initial state of every case that offers it (its state fixtures and inline state) and
what the tools of those cases write (``set``, ``append``, ``increment``; a ``{CEL}``
segment stands for any key; a tool with a ``handler`` may write anything, unless it
declares ``side_effect: false``). A field is reported only when it exists in **none** of
them, at its place in the fixture: a field present in one state and not in another is
optional and is not reported, nor is anything below a list or a value a tool writes. An
index (``[args.id]``) stands for any key of the map. A field the expression tests first
(``has(accounts[args.id].nickname)``, ``"nickname" in accounts[args.id]``) may be absent
and is not reported; nor are reads through ``state``, names a ``let`` or ``foreach``
binds, or tools no case offers (no state is known). State keys are read as dotted paths,
as EC603 reads them: a key holding a dot is not told apart from a nested one.

Passing (every account of the cases' state has ``owner``)::

    responses:
      - when: 'accounts[args.account_id].owner == args.customer_id'

Failing::

    responses:
      - when: 'accounts[args.account_id].ownr == args.customer_id'
"""

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

from evalcase.config import Config
from evalcase.contract.selections import INDEX
from evalcase.index.facts import CaseFacts, FixtureFacts
from evalcase.index.repo import RepoIndex
from evalcase.lint.base import reporter
from evalcase.lint.contract_state import case_state
from evalcase.lint.semantic import did_you_mean, listing
from evalcase.model import Finding, Severity

CODE = "EC328"
NAME = "state-field-unknown"
SEVERITY = Severity.ERROR
SCOPE = "repo"
# Reads only the checked fixtures, the cases that offer them and their fixtures.
CASE_LOOKUPS: tuple[str, ...] = ()

report = reporter(CODE, NAME, SEVERITY)

_LEAF = "\0leaf"  # a node of the writes below which anything may exist
_BUDGET = 200_000  # search steps for one chain; beyond: taken to exist (no finding)

Node = dict[str, Any]


class _State:
    """One initial state as lint knows it: its dotted paths (every prefix) and leaves;
    the paths sorted, once, when an index asks for a path's child keys."""

    def __init__(self, paths: AbstractSet[str], leaves: AbstractSet[str]) -> None:
        self.paths = paths
        self.leaves = leaves
        self._ordered: list[str] | None = None

    def children(self, prefix: str) -> Iterator[str]:
        if self._ordered is None:
            self._ordered = sorted(self.paths)
        ordered = self._ordered
        # every path below ``prefix`` sorts between "prefix." and "prefix/" ("/" follows ".")
        start = len(prefix) + 1
        for i in range(bisect_left(ordered, prefix + "."), bisect_left(ordered, prefix + "/")):
            rest = ordered[i][start:]
            if "." not in rest:
                yield rest


def _state_of(index: RepoIndex, case: CaseFacts) -> _State | None:
    state = case_state(index, case)
    if not state.complete:
        return None
    known = index.derived.setdefault("state_field_states", {})
    hit = known.get(id(state.paths))
    if hit is None or hit.paths is not state.paths:
        hit = known[id(state.paths)] = _State(state.paths, state.leaves)
    assert isinstance(hit, _State)
    return hit


def _writes(index: RepoIndex, cases: list[CaseFacts]) -> Node:
    """What the cases' tools write, as a tree ("*": any key; below a write, anything)."""
    trie: Node = {}
    for fixture in index.referenced_fixtures(cases):
        for path in fixture.state_writes:
            node = trie
            for part in path.split("."):
                node = node.setdefault(part, {})
            node[_LEAF] = True
    return trie


class _Search:
    """A depth-first search for one state (or write) that has every part of a chain:
    the first found ends it, so a chain that exists costs a walk down one branch; only a
    chain no state has is searched through (within :data:`_BUDGET` steps, else it is
    taken to exist). ``deepest``: the furthest part any branch reached, with the names
    found there."""

    def __init__(self, parts: Sequence[str]) -> None:
        self.parts = parts
        self.steps = 0
        self.deepest = 0
        self.have: set[str] = set()

    def _fail(self, i: int, names: Iterable[str]) -> bool:
        if i > self.deepest:
            self.deepest, self.have = i, set()
        if i == self.deepest:
            self.have.update(names)
        return False

    def state(self, s: _State, prefix: str, i: int) -> bool:
        self.steps += 1
        if i == len(self.parts) or prefix in s.leaves or self.steps > _BUDGET:
            return True  # found, or below a list or a value: not known
        part = self.parts[i]
        if part == INDEX:
            if any(self.state(s, f"{prefix}.{k}", i + 1) for k in s.children(prefix)):
                return True
            return self._fail(i, ())
        if f"{prefix}.{part}" in s.paths:
            return self.state(s, f"{prefix}.{part}", i + 1)
        return self._fail(i, s.children(prefix))

    def write(self, node: Node, i: int) -> bool:
        self.steps += 1
        if i == len(self.parts) or _LEAF in node:
            return True
        part = self.parts[i]
        keys = [k for k in node if k != _LEAF] if part == INDEX else [part, "*"]
        if any(self.write(node[k], i + 1) for k in keys if k in node):
            return True
        return self._fail(i, (k for k in node if k not in (_LEAF, "*")))


def _missing(
    states: Sequence[_State], writes: Node, parts: Sequence[str]
) -> tuple[int, set[str]] | None:
    """The position of the first part that no state (nor a write) has, with the names
    they have there; None when every part may exist."""
    search = _Search(parts)
    root = parts[0]
    if any(search.state(s, root, 1) for s in states if root in s.paths):
        return None
    if any(search.write(writes[k], 1) for k in (root, "*") if k in writes):
        return None
    return max(search.deepest, 1), search.have


def _text(parts: Sequence[str]) -> str:
    return parts[0] + "".join("[…]" if p == INDEX else f".{p}" for p in parts[1:])


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    focus = index.focus
    tools = [
        f
        for f in index.fixtures
        if f.state_reads and (focus is None or (f.path in focus and f.path not in index.quiet))
    ]
    if not tools:
        return
    wanted = {f.path for f in tools}
    users: dict[str, dict[str, CaseFacts]] = {}
    for case in index.cases:
        for _field, kind, target, _line, _col in case.offered_tools():
            for fixture in index.resolve(kind, target):
                if fixture.path in wanted:
                    users.setdefault(fixture.path, {})[case.path] = case
    for tool in tools:
        yield from _check_tool(index, tool, list(users.get(tool.path, {}).values()))


def _check_tool(index: RepoIndex, tool: FixtureFacts, cases: list[CaseFacts]) -> Iterable[Finding]:
    if not cases:
        return  # no case offers it: no state is known
    states: dict[int, _State] = {}
    for case in cases:
        state = _state_of(index, case)
        if state is None:
            return  # a dangling state fixture (EC301)
        states.setdefault(id(state.paths), state)
    writes = _writes(index, cases)
    for parts, places in tool.state_reads:
        if not any(parts[0] in s.paths for s in states.values()):
            continue  # not a state key of these cases (EC602 names unknown variables)
        gone = _missing(list(states.values()), writes, parts)
        if gone is None:
            continue
        at, have = gone
        line, col = places[at]
        field = parts[at]
        names = sorted({c.path.rsplit("/", 1)[-1] for c in cases})
        offered = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        yield report(
            tool.path,
            line,
            col,
            f"{_text(parts)}: no state this tool meets has field {field!r} there"
            f"{did_you_mean(field, have)} ({_text(parts[:at])} has "
            f"{listing(have, 8) or 'nothing'}; the states: the initial states of the cases "
            f"offering it, {offered}, and what their tools write); fix the name, or test it "
            f"first: has({_text(parts[: at + 1])})",
        )
