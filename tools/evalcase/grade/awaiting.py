"""What a pending case is waiting for, and what its graders already decided.

A case is ``pending`` when a hard grader has not decided yet (an ``llm_rubric`` without a
judge, a ``human`` grader before ``evalcase review``) and no grader failed or erred: the
deterministic graders that did decide, passed. That is worth saying, and it is not a pass:
the judge or the person may still fail the case, so it is never counted as one (pass@1,
gates and ``compare`` are unchanged; docs/grading.md, "How an attempt's verdict is decided").

``awaiting(graded)`` tells, per pending case (its case ID and prompt):

- ``checks_passed``: the number of decided checks that passed, summed over the case's
  attempts, and ``waiting_for``, the graders still undecided (``llm_rubric``, ``human``);
- ``checks_pass``: true when every attempt has at least one decided hard check and all of
  them passed, i.e. the case "passes every check decided so far"; false when nothing is
  decided yet (a case graded by a judge only), which is shown apart.

Example: a case graded by ``tool_calls``, ``state_match`` and a hard ``llm_rubric``, run
without a judge: the two deterministic graders pass, the case is pending with
``checks_pass`` true and ``waiting_for`` ``("llm_rubric",)``. Graded by ``llm_rubric`` alone:
pending, ``checks_pass`` false.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from evalcase.grade.aggregate import CaseFigures
from evalcase.grade.engine import AttemptResult


@dataclass(frozen=True)
class Awaiting:
    checks_passed: int  # decided hard checks that passed, over the case's attempts
    waiting_for: tuple[str, ...]  # undecided graders, in grading order
    checks_pass: bool  # every attempt: at least one decided hard check, all passed

    def to_dict(self) -> dict[str, object]:
        return {
            "checks_passed": self.checks_passed,
            "waiting_for": list(self.waiting_for),
            "checks_pass": self.checks_pass,
        }


def awaiting(
    cases: Iterable[CaseFigures], results: Iterable[AttemptResult]
) -> dict[tuple[str, str], Awaiting]:
    """Per pending case, keyed by (case_id, case_version): what is decided, what is not."""
    pending = {(c.meta.case_id, c.meta.case_version) for c in cases if c.status == "pending"}
    by_case: dict[tuple[str, str], list[AttemptResult]] = {}
    for result in results:
        key = (result.case_id, result.case_version)
        if key in pending:
            by_case.setdefault(key, []).append(result)
    out: dict[tuple[str, str], Awaiting] = {}
    for key, attempts in by_case.items():
        passed = 0
        waiting: dict[str, None] = {}
        every = True
        for attempt in attempts:
            hard = [r for r in attempt.results if r.hard]
            decided = [r for r in hard if r.grade.verdict in ("pass", "fail")]
            passed += sum(1 for r in decided if r.grade.verdict == "pass")
            for r in attempt.results:
                if r.grade.verdict == "pending":
                    waiting[r.grader] = None
            if not decided or any(r.grade.verdict != "pass" for r in decided):
                every = False
        out[key] = Awaiting(passed, tuple(waiting), every)
    return out
