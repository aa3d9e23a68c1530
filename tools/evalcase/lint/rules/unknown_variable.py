"""A CEL expression reads a variable its context does not offer.

Each context offers its own variables (docs/contract.md): a precondition or permission
condition ``args``, ``call``, ``calls``, ``state`` and the top-level keys of the case's
merged initial state (``orders``, ``session``...); a fault condition only ``args`` and
``call``; a final-state assertion the state keys, ``state``, ``initial``, ``calls`` and
``output``; a trace rule ``trace``, ``calls``, ``output``, ``state`` and ``initial``; a
scripted user turn's ``when`` ``message``, ``calls`` and ``turn``. Any
other name is a typo or a state key no fixture provides, and the expression would fail
when evaluated. Reported where the name starts.

In a tool fixture, a name a response's ``let`` binds is visible to that response's
``let`` entries after it, its ``state_change`` steps, ``result_from`` and
``error.message_from`` (not to its own ``when``, nor to other responses); a ``foreach``
step's ``as`` name (default ``item``) only inside its ``do``. Read anywhere else, it is
not a variable (the state key of that name, if any, is not what the author meant).

Passing (the state has ``session``)::

    precondition: [session.user_authenticated == true]

Failing::

    precondition: [sesion.user_authenticated == true]

Failing (``rid`` is bound after the match; ``when`` is evaluated before)::

    responses:
      - when: 'rid in reservations'
        let: {rid: '"HAT" + string(call.index)'}
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.contract.cel import CONTEXT_VARIABLES, STATE_CONTEXTS
from evalcase.index.repo import RepoIndex
from evalcase.lint.base import reporter
from evalcase.lint.contract_state import case_state
from evalcase.lint.semantic import did_you_mean, listing
from evalcase.model import Finding, Severity

CODE = "EC602"
NAME = "unknown-variable"
SEVERITY = Severity.ERROR
SCOPE = "repo"
# Reads only the checked cases, fixtures and manifests (see evalcase.lint.base).
CASE_LOOKUPS: tuple[str, ...] = ()

report = reporter(CODE, NAME, SEVERITY)


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    focus = index.focus
    for fixture in index.fixtures:
        if focus is not None and fixture.path not in focus:
            continue
        for context, _text, _line, _col, _error, refs in fixture.cel:
            if context != "tool_scope":
                continue
            for name, line, col in refs:
                root = name.split(".", 1)[0]
                yield report(
                    fixture.path,
                    line,
                    col,
                    f"{root!r} is bound by a let or foreach of this tool but not visible "
                    "here: a let name is read by its own response's later let entries, "
                    "state_change, result_from and error.message_from (not its when); a "
                    "foreach name only inside its do",
                )
    for case in index.checked_cases():
        if not case.cel and not case.state_paths:
            continue
        state = case_state(index, case)
        roots = state.roots
        names: list[tuple[str, str, int, int]] = []
        for context, _text, _line, _col, error, refs in case.cel:
            if error is None:
                names += [(context, name, line, col) for name, line, col in refs]
        # the {path: value} sugar of preconditions and permissions names variables too
        names += [p for p in case.state_paths if p[0] in ("precondition", "permission")]
        for context, name, line, col in names:
            offered = set(CONTEXT_VARIABLES.get(context, ()))
            if context in STATE_CONTEXTS:
                if not state.complete:
                    continue  # a dangling state fixture is reported by EC301
                offered |= roots
            root = name.split(".", 1)[0]
            if root in offered:
                continue
            yield report(
                case.path,
                line,
                col,
                f"{context} reads {root!r}, which is not a variable here"
                f"{did_you_mean(root, offered)}; offered: {listing(offered) or 'none'}",
            )
