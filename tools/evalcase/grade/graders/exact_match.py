"""The answer equals the reference.

Configuration: the case's ``reference`` (or ``expected_output``), or grader options
``{type: exact_match, expected: "...", ignore_case: true, ignore_whitespace: true}``.
Leading and trailing whitespace never counts. Passing: reference ``"可以退款"``, answer
``" 可以退款\\n"``. Failing: answer ``"可以退款。"``. No reference, or no answer, is an error;
so is a flag that is not true or false (and lint's EC320).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from evalcase.contract.records import Observed
from evalcase.grade.context import GradeContext
from evalcase.grade.graders import reads_attempt
from evalcase.grade.graders._util import short, text_values
from evalcase.grade.model import Evidence, Grade, error, failed, passed
from evalcase.grade.readers import ReadError, parse
from evalcase.grade.spec import JudgeSpec, options_of

NAME = "exact_match"
VERSION = "1"


def normal(text: str, ignore_case: bool, ignore_space: bool) -> str:
    """The text as compared (exports that restate this check use it too)."""
    text = text.strip()
    if ignore_space:
        text = re.sub(r"\s+", "", text)
    return text.casefold() if ignore_case else text


def _references(spec: JudgeSpec) -> list[str]:
    refs = text_values(spec, options_of(spec, NAME), "expected", "reference", "expected_output")
    return [r for r in refs if isinstance(r, str)]


@dataclass(frozen=True)
class ExactOptions:
    """The grader's flags (its ``expected`` is read with the case's reference)."""

    ignore_case: bool = False
    ignore_whitespace: bool = False


def options(spec: JudgeSpec) -> ExactOptions | ReadError:
    return parse(ExactOptions, options_of(spec, NAME))


def needs(spec: JudgeSpec) -> str | None:
    if isinstance(read := options(spec), ReadError):
        return f"grader options: {read}"
    if not _references(spec):
        return "no reference answer to compare with: set reference or grader option expected"
    return None


@reads_attempt
def grade(spec: JudgeSpec, attempt: Observed, ctx: GradeContext | None = None) -> Grade:
    if (problem := needs(spec)) is not None:
        return error(problem)
    read = options(spec)
    flags = (read.ignore_case, read.ignore_whitespace) if isinstance(read, ExactOptions) else (
        False, False)  # fmt: skip
    refs = _references(spec)
    answer = attempt.output
    if answer is None:
        return error("the attempt has no output to compare")
    if any(normal(answer, *flags) == normal(r, *flags) for r in refs):
        return passed("the answer equals the reference")
    return failed(
        f"the answer {short(answer)!r} differs from {short(refs[0])!r}", Evidence(None, "output")
    )
