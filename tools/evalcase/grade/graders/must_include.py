"""The answer contains every required phrase.

Configuration: grader options ``{type: must_include, values: [...]}``, else the case's
``must_include`` or ``constraints.must_include``. An item that is a list means "any one of
these". Passing: required ``[原路, 7 个工作日]``, answer ``"退款将原路退回，预计 7 个工作日到账"``.
Failing: the answer omits ``7 个工作日`` (the reason names it). Nothing required, or no answer,
is an error.
"""

from __future__ import annotations

from evalcase.grade.context import GradeContext
from evalcase.grade.graders._util import output, text_values
from evalcase.grade.model import Attempt, Evidence, Grade, error, failed, passed
from evalcase.grade.spec import JudgeSpec, as_list, options_of

NAME = "must_include"
VERSION = "1"


def needs(spec: JudgeSpec) -> str | None:
    if not text_values(spec, options_of(spec, NAME), "values", "must_include"):
        return "no phrases to require: set must_include or grader option values"
    return None


def grade(spec: JudgeSpec, attempt: Attempt, ctx: GradeContext | None = None) -> Grade:
    if (problem := needs(spec)) is not None:
        return error(problem)
    required = text_values(spec, options_of(spec, NAME), "values", "must_include")
    answer = output(attempt)
    if answer is None:
        return error("the attempt has no output to check")
    missing = []
    for item in required:
        choices = [str(c) for c in as_list(item)]
        if not any(c in answer for c in choices):
            missing.append(" / ".join(choices))
    if missing:
        return failed(
            f"missing: {', '.join(missing)}",
            Evidence(None, "output"),
            score=1 - len(missing) / len(required),
        )
    return passed(f"all {len(required)} required phrases present")
