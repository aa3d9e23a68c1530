"""The answer matches the required patterns and none of the forbidden ones.

Configuration: grader options ``{type: regex, must_match: [...], must_not_match: [...]}``
(``pattern`` / ``patterns`` are read as ``must_match``), else the case's ``regex`` field in
the same shape. Python ``re`` syntax, searched anywhere in the answer. Passing: must_match
``ORDER_[0-9]{4}``, answer ``"订单 ORDER_6001 已受理"``. Failing: the answer names no order. An
invalid pattern, a pattern that is not a string, no pattern or no answer is an error (and
lint's EC320).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from evalcase.contract.records import Observed
from evalcase.grade.context import GradeContext
from evalcase.grade.graders import reads_attempt
from evalcase.grade.model import Evidence, Grade, error, failed, passed
from evalcase.grade.readers import JSONValue, ReadError, parse
from evalcase.grade.spec import JudgeSpec, as_list, options_of

NAME = "regex"
VERSION = "1"


@dataclass(frozen=True)
class RegexOptions:
    """The grader's options (or the case's ``regex`` field in the same shape)."""

    must_match: tuple[str, ...] = ()
    must_not_match: tuple[str, ...] = ()
    pattern: tuple[str, ...] = ()  # read as must_match
    patterns: tuple[str, ...] = ()  # read as must_match


@dataclass(frozen=True)
class _Text:
    regex: JSONValue = None  # the case's regex field


def options(spec: JudgeSpec) -> RegexOptions | ReadError:
    source: Any = options_of(spec, NAME)
    if not any(f.name in source for f in fields(RegexOptions)):
        text = parse(_Text, spec.text)
        source = text.regex if isinstance(text, _Text) else None
        if not source:
            return RegexOptions()
        if isinstance(source, str | list):
            return RegexOptions(must_match=tuple(str(p) for p in as_list(source)))
        if not isinstance(source, Mapping):
            return RegexOptions()
    return parse(RegexOptions, source)


def patterns(spec: JudgeSpec) -> tuple[list[str], list[str]]:
    read = options(spec)
    if isinstance(read, ReadError):
        return [], []
    return [*read.must_match, *read.pattern, *read.patterns], list(read.must_not_match)


def needs(spec: JudgeSpec) -> str | None:
    if isinstance(read := options(spec), ReadError):
        return f"grader options: {read}"
    must, must_not = patterns(spec)
    if not must and not must_not:
        return (
            "no patterns configured: set grader options must_match / must_not_match "
            "(or the case's regex field)"
        )
    for pattern in (*must, *must_not):
        try:
            re.compile(pattern)
        except re.error as exc:
            return f"invalid pattern {pattern!r}: {exc}"
    return None


@reads_attempt
def grade(spec: JudgeSpec, attempt: Observed, ctx: GradeContext | None = None) -> Grade:
    if (problem := needs(spec)) is not None:
        return error(problem)
    must, must_not = patterns(spec)
    answer = attempt.output
    if answer is None:
        return error("the attempt has no output to check")
    compiled = [(p, re.compile(p), True) for p in must]
    compiled += [(p, re.compile(p), False) for p in must_not]
    for text, pattern, wanted in compiled:
        found = pattern.search(answer) is not None
        if found != wanted:
            verb = "does not match" if wanted else "matches forbidden pattern"
            return failed(f"the answer {verb} {text!r}", Evidence(None, "output"))
    return passed(f"{len(compiled)} pattern checks hold")
