"""A shared CEL definition that cannot be expanded, or a call of one that is wrong.

A tool fixture names ``cel`` fixtures in ``data.uses`` and calls their definitions by
name (docs/contract.md#shared-cel-definitions); each call is expanded into the tool's
expression when a case is built, and a case whose tool cannot be expanded is not built.
Reported here, before any run:

- in a tool fixture: a ``uses`` entry that is no ``cel`` fixture; a call of a name that
  is no definition of the fixtures it uses (nor a CEL function), in the tool's own
  expressions or in a definition it uses (reported at the ``uses`` entry); a call with
  the wrong number of arguments; a name two of its ``cel`` fixtures define;
- in a ``cel`` fixture: a definition whose expression does not compile; a definition
  that calls itself, directly or through others (a cycle); a call with the wrong number
  of arguments; a parameter named twice.

Passing (``fixtures/cel/network.yaml`` defines ``has_line(phone)``)::

    data:
      uses: [network]
      responses:
        - when: 'has_line(args.phone)'

Failing::

    data:
      uses: [network]
      responses:
        - when: 'has_line(args.phone, 1)'      # has_line takes 1 argument
        - when: 'line_status(args.phone)'      # no such definition
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.contract import definitions as shared
from evalcase.index.facts import FixtureFacts
from evalcase.index.repo import RepoIndex
from evalcase.lint.base import reporter
from evalcase.lint.semantic import fixture_kind
from evalcase.model import Finding, Severity

CODE = "EC619"
NAME = "cel-definition-invalid"
SEVERITY = Severity.ERROR
SCOPE = "repo"
# Reads only the checked fixtures and the cel fixtures they use (see evalcase.lint.base).
CASE_LOOKUPS: tuple[str, ...] = ()

report = reporter(CODE, NAME, SEVERITY)


def _of(fixture: FixtureFacts) -> dict[str, shared.Definition]:
    fixture_id = fixture.fixture_id[0] if fixture.fixture_id else ""
    return {
        name: shared.Definition(name, params, expr, str(fixture_id))
        for name, params, expr, _line, _col, _error in fixture.definitions
    }


def _cel_fixture(fixture: FixtureFacts) -> Iterable[Finding]:
    defs = _of(fixture)
    for name, params, _expr, line, col, error in fixture.definitions:
        if error is not None:
            yield report(fixture.path, line, col, f"definition {name!r} does not compile: {error}")
            continue
        problem = shared.param_problem(params)
        if problem is not None:
            yield report(fixture.path, line, col, f"definition {name!r}: {problem}")
            continue
        expanded = shared.expand(f"{name}({', '.join(params)})", defs)
        if isinstance(expanded, shared.DefinitionError):
            yield report(fixture.path, line, col, f"definition {name!r}: {expanded.message}")


def _tool_fixture(fixture: FixtureFacts, index: RepoIndex) -> Iterable[Finding]:
    defs: dict[str, shared.Definition] = {}
    targets: list[tuple[FixtureFacts, int, int]] = []
    for fixture_id, line, col in fixture.uses:
        found = index.fixtures_by_id.get(str(fixture_id))
        target = found[0] if found else None
        if target is None or fixture_kind(target) != shared.KIND:
            yield report(
                fixture.path, line, col,
                f"uses {fixture_id!r}, which is not a cel fixture; add "
                f"fixtures/cel/{fixture_id}.yaml or remove it from data.uses",
            )  # fmt: skip
            continue
        for name, definition in _of(target).items():
            if name in defs:
                yield report(
                    fixture.path, line, col,
                    f"definition {name!r} is in both {defs[name].fixture_id} and {fixture_id}",
                )  # fmt: skip
            defs.setdefault(name, definition)
        targets.append((target, line, col))
    for target, line, col in targets:
        for name, roots in target.definition_reads:
            used = defs.get(name)
            if used is None:
                continue
            for callee, _count in shared.calls(used.expr, frozenset(roots) - defs.keys()):
                yield report(
                    fixture.path, line, col,
                    f"definition {name!r} of {used.fixture_id} calls {callee}(), which is no "
                    "definition of the cel fixtures this tool uses nor a CEL function",
                )  # fmt: skip
    for context, text, line, col, error, refs in fixture.cel:
        if context == "tool_scope" or error is not None:
            continue
        expanded = shared.expand(text, defs)
        if isinstance(expanded, shared.DefinitionError):
            yield report(fixture.path, line, col, expanded.message)
            continue
        # a free name called as a function: no definition and no CEL function
        unknown = frozenset(r[0] for r in refs if "." not in r[0]) - defs.keys()
        for name, _count in shared.calls(text, unknown):
            offered = ", ".join(sorted(defs)) or "none (data.uses names no cel fixture)"
            yield report(
                fixture.path, line, col,
                f"{name}() is no definition of the cel fixtures this tool uses nor a CEL "
                f"function; defined: {offered}",
            )  # fmt: skip


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    focus = index.focus
    for fixture in index.fixtures:
        if focus is not None and fixture.path not in focus:
            continue
        kind = fixture_kind(fixture)
        if kind == shared.KIND:
            yield from _cel_fixture(fixture)
        elif kind == "tool":
            yield from _tool_fixture(fixture, index)
