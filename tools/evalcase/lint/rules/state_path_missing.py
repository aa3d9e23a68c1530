"""A state path that the case's merged initial state does not have.

Preconditions and permission conditions read the state as it is at the call, final-state
checks compare with it, and ``unchanged`` / ``absent`` name parts of it. A path that no
state fixture (and no inline state) provides is a typo or a missing fixture: the
condition would fail, ``unchanged`` would hold trivially, ``absent`` could never fail.
Checked: static paths in CEL (``orders.ORDER_2001.status``), the ``{path: value}`` sugar,
``unchanged`` and ``absent``. Paths a tool creates during the run belong in ``expected``,
which is not checked here; a path that may be absent is read through ``state``
(``"approvals" in state && state.approvals...``), which is not checked either.

Passing (the fixture has orders.ORDER_2001.refund_status)::

    precondition: [{orders.ORDER_2001.refund_status: processing}]

Failing::

    precondition: [{orders.ORDER_2001.refund_state: processing}]
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.contract.cel import CONTEXT_VARIABLES, RESERVED
from evalcase.index.repo import RepoIndex
from evalcase.lint.base import reporter
from evalcase.lint.contract_state import CaseState, case_state
from evalcase.lint.semantic import did_you_mean
from evalcase.model import Finding, Severity

CODE = "EC603"
NAME = "state-path-missing"
SEVERITY = Severity.ERROR
SCOPE = "repo"

report = reporter(CODE, NAME, SEVERITY)

_CHECKED = ("precondition", "permission", "assert")


def _missing(state: CaseState, path: str) -> str | None:
    """The first missing prefix of ``path`` (None when it exists)."""
    if state.has(path):
        return None
    parts = path.split(".")
    for i in range(1, len(parts) + 1):
        prefix = ".".join(parts[:i])
        if not state.has(prefix):
            return prefix
    return None


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    for case in index.checked_cases():
        if not case.cel and not case.state_paths:
            continue
        state = case_state(index, case)
        if not state.complete:
            continue
        candidates: list[tuple[str, str, int, int]] = []
        for context, _text, _line, _col, error, refs in case.cel:
            if error is None and context in _CHECKED:
                candidates += [(context, name, line, col) for name, line, col in refs]
        candidates += list(case.state_paths)
        for context, name, line, col in candidates:
            if "{" in name:
                continue
            root = name.split(".", 1)[0]
            if root == "state":
                continue  # ``state.x`` reads a key that may be absent ("x" in state)
            if root in RESERVED and root in CONTEXT_VARIABLES.get(context, RESERVED):
                continue  # args, calls... are not state
            if context not in ("unchanged", "absent") and root not in state.roots:
                continue  # not a state key at all: EC602 reports the variable
            gone = _missing(state, name)
            if gone is None:
                continue
            parent = gone.rsplit(".", 1)[0] if "." in gone else ""
            siblings = {
                p[len(parent) + 1 :].split(".", 1)[0] if parent else p.split(".", 1)[0]
                for p in state.paths
                if (p.startswith(parent + ".") if parent else True)
            }
            last = gone.rsplit(".", 1)[-1]
            yield report(
                case.path,
                line,
                col,
                f"{context} names state path {name!r}, but {gone!r} is not in the case's "
                f"merged initial state{did_you_mean(last, siblings)}; fix the path or add "
                "the state fixture that provides it",
            )
