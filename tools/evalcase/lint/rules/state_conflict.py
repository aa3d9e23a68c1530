"""Two state fixtures of a case set the same leaf to different values.

A case's initial state is its state fixtures merged in the order listed (mappings merge,
the same leaf set differently is a conflict). Which value wins would depend on the order
of the list, which nobody reading the case sees: reported where the case names the
second fixture, with both fixture files and the two leaves.

Passing::

    initial_state:
      fixtures: [refund_session_user_a_verified, refund_order_account_change_open]

Failing (both set ``session.user_authenticated``, to true and to false)::

    initial_state:
      fixtures: [refund_session_user_a_verified, refund_session_user_a_unverified]
"""

from collections.abc import Iterable

from evalcase.config import Config
from evalcase.index.repo import RepoIndex
from evalcase.lint.base import reporter
from evalcase.lint.contract_state import case_state
from evalcase.model import Finding, Severity

CODE = "EC604"
NAME = "state-conflict"
SEVERITY = Severity.ERROR
SCOPE = "repo"

report = reporter(CODE, NAME, SEVERITY)


def check(index: RepoIndex, config: Config) -> Iterable[Finding]:
    for case in index.checked_cases():
        for conflict in case_state(index, case).conflicts:
            yield report(
                case.path,
                conflict.ref_at[0],
                conflict.ref_at[1],
                f"state fixtures disagree on {conflict.path!r}: {conflict.first.path} "
                f"(line {conflict.first_at[0]}) and {conflict.second.path} (line "
                f"{conflict.second_at[0]}) set it differently; keep one of them, or move "
                "the differing value into the case's inline state",
                (
                    (conflict.first.path, *conflict.first_at),
                    (conflict.second.path, *conflict.second_at),
                ),
            )
