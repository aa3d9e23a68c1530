"""An expected call that a ``from_expected_calls`` replay cannot make.

With ``final_state_check.from_expected_calls: true`` the grader replays every expected
call, with exactly the arguments written, on a fresh environment of the case; a call that
errors gives no gold state and every attempt of the case ends in a grader error. What lint
knows before any run is reported here, at the call's line: a call written without arguments (the
``expected_tool_sequence`` form, or an ``expected_calls`` entry with no ``args``) to a
tool whose parameter schema requires some (the replay would be answered
``invalid_arguments``). Arguments given but rejected by the schema are EC304's, a tool
the case does not offer (the replay would end ``unknown_tool``) EC303's. Errors
only a replay can show (no matching response, a permission that refuses, a tool error)
are the grader's error, naming the call.

Passing::

    available_tools: [cancel_reservation]
    expected_calls:
      calls: [{tool: cancel_reservation, args: {reservation_id: EHGLP3}}]
    final_state_check: {from_expected_calls: true}

Failing::

    available_tools: [cancel_reservation]
    expected_calls:
      calls:
        - {tool: cancel_reservation}           # reservation_id is required
    final_state_check: {from_expected_calls: true}
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.contract.param_schema import first_error
from evalcase.index.repo import RepoIndex
from evalcase.lint.base import reporter
from evalcase.lint.semantic import fixture_kind
from evalcase.model import Finding, Severity

CODE = "EC617"
NAME = "gold-call-not-replayable"
SEVERITY = Severity.ERROR
SCOPE = "repo"
# Reads only the checked cases, fixtures and manifests (see evalcase.lint.base).
CASE_LOOKUPS: tuple[str, ...] = ()

report = reporter(CODE, NAME, SEVERITY)


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    for case in index.checked_cases():
        if not case.gold_calls:
            continue
        for n, (tool, args, line, col) in enumerate(case.gold_calls, 1):
            if args is not None:
                continue  # EC304 checks given arguments against the schema
            fixture = index.fixture(tool)
            if fixture is None or fixture_kind(fixture) != "tool" or not fixture.parameters:
                continue
            problem = first_error(fixture.parameters, {})
            if problem is not None:
                yield report(
                    case.path,
                    line,
                    col,
                    f"expected call {n} ({tool}) has no arguments, but the tool requires some "
                    f"({problem}): the from_expected_calls replay would be answered "
                    "invalid_arguments; write the call's full args",
                )
