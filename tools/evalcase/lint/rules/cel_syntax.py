"""A CEL expression that does not compile.

Preconditions (a case's, and a tool's own ``side_effect_policy``), the ``{CEL}``
segments of state-transition paths, permission conditions, fault conditions, final-state
assertions, trace rules, scripted user turns' ``when`` and tool responses (``when``
strings, ``result_from``, ``value_from``, ``{CEL}`` path segments) are CEL. One that
does not parse would fail every attempt at run time; it is reported at its own line and
column in the file, with CEL's own message. So is one nested deeper than CEL's parser
allows (32 levels, such as a chain of 32 ``+``; split it with ``cel.bind``: see
docs/contract.md, "Expressions nested too deeply"), and a type error in an expression
that reads no name (``1 + "a"``).

Passing::

    side_effect_policy:
      precondition:
        - orders.ORDER_2001.owner_user_id == session.current_user_id

Failing::

    side_effect_policy:
      precondition:
        - orders.ORDER_2001.owner_user_id = session.current_user_id   # '=' is not CEL
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.index.repo import RepoIndex
from evalcase.lint.base import reporter
from evalcase.model import Finding, Severity

CODE = "EC601"
NAME = "cel-syntax"
SEVERITY = Severity.ERROR
SCOPE = "repo"
# Reads only the checked cases, fixtures and manifests (see evalcase.lint.base).
CASE_LOOKUPS: tuple[str, ...] = ()

report = reporter(CODE, NAME, SEVERITY)


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    focus = index.focus
    sources = [(c.path, c.cel) for c in index.checked_cases()]
    sources += [(f.path, f.cel) for f in index.fixtures if focus is None or f.path in focus]
    for path, exprs in sources:
        for context, text, _line, _col, error, _refs in exprs:
            if error is None:
                continue
            line, col, message = error
            shown = text if len(text) <= 60 else text[:57] + "..."
            yield report(
                path,
                line,
                col,
                f"CEL in {context} does not compile: {message} (in {shown!r}); see "
                "docs/contract.md for the syntax",
            )
