"""A tool's expression reads a state field that no state the tool can meet has.

A tool fixture's responses read the state of the call (``when``, ``let``,
``result_from``, the steps of ``state_change``): ``accounts[args.account_id].owner``
selects the field ``owner`` of whichever account the call names. A misspelt field
(``.ownr``) compiles, and the attempt then ends with ``Key not found in map``. The states
the tool can meet are known: the initial state of every case that offers it (its state
fixtures and inline state) and what the tools of those cases write (``set``, ``append``,
``increment``; a ``{CEL}`` segment stands for any key). A field is reported only when it
exists in **none** of them, at its place in the fixture: a field present in one state
and not in another is optional and is not reported, nor is anything below a list or a
value a tool writes. An index (``[args.id]``) stands for any key of the map. A field the
expression tests first (``has(accounts[args.id].nickname)``, ``"nickname" in
accounts[args.id]``) may be absent and is not reported; nor are reads through ``state``,
names a ``let`` or ``foreach`` binds, or tools no case offers (no state is known).

Passing (every account of the cases' state has ``owner``)::

    responses:
      - when: 'accounts[args.account_id].owner == args.customer_id'

Failing::

    responses:
      - when: 'accounts[args.account_id].ownr == args.customer_id'
"""

from collections.abc import Iterable, Sequence
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

_LEAF = "\0leaf"  # a node below which anything may exist (a list, a scalar, a write)
_WIDE = 10_000  # an index over more nodes than this: not followed (no finding)

Node = dict[str, Any]


def _add(trie: Node, parts: Sequence[str], leaf: bool) -> None:
    node = trie
    for part in parts:
        node = node.setdefault(part, {})
    if leaf:
        node[_LEAF] = True


def _missing(trie: Node, parts: Sequence[str]) -> tuple[int, set[str]] | None:
    """The position of the first part that no state has, with the names the states
    have there; None when every part may exist."""
    frontier = [trie]
    for i, part in enumerate(parts):
        found: dict[int, Node] = {}
        for node in frontier:
            if _LEAF in node:
                return None
            if part == INDEX:
                found.update((id(v), v) for k, v in node.items() if k != _LEAF)
            else:
                for key in (part, "*"):
                    if key in node:
                        found[id(node[key])] = node[key]
        if not found:
            return i, {k for node in frontier for k in node if k not in (_LEAF, "*")}
        if len(found) > _WIDE:
            return None
        frontier = list(found.values())
    return None


def _shape(index: RepoIndex, cases: list[CaseFacts]) -> Node | None:
    """Every state the cases start from, and what their tools write, as one trie; None
    when a case's state is not known (a state fixture that does not resolve)."""
    trie: Node = {}
    seen: set[int] = set()
    for case in cases:
        state = case_state(index, case)
        if not state.complete:
            return None
        if id(state.paths) not in seen:
            seen.add(id(state.paths))
            for path in state.paths:
                _add(trie, path.split("."), path in state.leaves)
    for fixture in index.referenced_fixtures(cases):
        for path in fixture.state_writes:
            _add(trie, path.split("."), True)
    return trie


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
    users: dict[str, list[CaseFacts]] = {}
    for case in index.cases:
        for _field, kind, target, _line, _col in case.offered_tools():
            for fixture in index.resolve(kind, target):
                found = users.setdefault(fixture.path, [])
                if fixture.path in wanted and case not in found:
                    found.append(case)
    for tool in tools:
        yield from _check_tool(index, tool, users.get(tool.path, []))


def _check_tool(index: RepoIndex, tool: FixtureFacts, cases: list[CaseFacts]) -> Iterable[Finding]:
    if not cases:
        return  # no case offers it: no state is known
    trie = _shape(index, cases)
    if trie is None:
        return  # a dangling state fixture (EC301)
    for parts, places in tool.state_reads:
        if parts[0] not in trie:
            continue  # not a state key of these cases (EC602 names unknown variables)
        gone = _missing(trie, parts)
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
