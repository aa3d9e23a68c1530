"""A person reviews the attempt (evalcase review).

Configuration: ``{type: human}`` in ``evaluator_config.graders`` (for high-risk samples,
docs/grading.md, human review). The attempt is queued; ``evalcase review RUN`` lets a
reviewer record pass or fail with a reason, from the terminal or by editing a generated
file, and the next ``evalcase grade`` includes that verdict with who and when. Passing: a
reviewer recorded ``pass``. Failing: a reviewer recorded ``fail`` ("承诺了到账时间"). Until
someone reviews, the verdict is ``pending``, never ``pass``.
"""

from __future__ import annotations

from evalcase.contract.records import Observed
from evalcase.grade.context import GradeContext
from evalcase.grade.graders import reads_attempt
from evalcase.grade.model import Grade, Verdict, pending
from evalcase.grade.spec import JudgeSpec

NAME = "human"
VERSION = "1"


def needs(spec: JudgeSpec) -> str | None:
    return None  # a person needs no configuration: the attempt itself is what they review


@reads_attempt
def grade(spec: JudgeSpec, attempt: Observed, ctx: GradeContext | None = None) -> Grade:
    ctx = ctx or GradeContext()
    key = (
        str(spec.case_id),
        str(spec.case_version),
        attempt.record.attempt,
    )
    review = ctx.human.get(key)
    if review is None:
        return pending("waiting for a person: evalcase review RUN")
    verdict: Verdict = "pass" if review.verdict == "pass" else "fail"
    return Grade(
        verdict,
        1.0 if verdict == "pass" else 0.0,
        review.reason or f"reviewed: {verdict}",
        kind=None if verdict == "pass" else "agent_capability",
        reviewer=review.reviewer,
        reviewed_at=review.reviewed_at,
    )
