"""The answer contains every required phrase.

Configuration: grader options ``{type: must_include, values: [...]}``, else the case's
``must_include`` or ``constraints.must_include``. An item that is a list means "any one of
these". Passing: required ``[原路, 7 个工作日]``, answer ``"退款将原路退回，预计 7 个工作日到账"``.
Failing: the answer omits ``7 个工作日`` (the reason names it). Nothing required, or no answer,
is an error.

Options (grader options, all optional)::

    - type: must_include
      values: ["1628", "EHGLP3"]
      scope: assistant_messages   # final_answer (the default): the attempt's final answer;
                                  # assistant_messages: any one assistant message may hold it
      ignore_case: true           # compared case-folded
      ignore_punctuation: true    # punctuation, separators and spaces ignored on both sides

Both texts are first normalised like the privacy checks' (Unicode NFKC, any script's
digits read as ASCII digits, ``evalcase.pii.normalise``); ``ignore_punctuation`` then
drops every punctuation mark (commas, dashes, dots, quotes...), separator and whitespace,
so ``"1628"`` is found in ``"$1,628"`` and ``"EHGLP3"`` in ``"EHG-LP3"``; ``ignore_case``
case-folds. With ``assistant_messages`` each phrase must appear within one assistant
message (text the agent sent the user, tool-call turns included), never across two.
A value left empty by the normalisation, an unknown scope or a non-boolean flag is an
error (lint: EC325), never a check that always passes.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any

from evalcase import pii
from evalcase.contract.records import Observed
from evalcase.grade.context import GradeContext
from evalcase.grade.graders import reads_attempt
from evalcase.grade.graders._util import text_values
from evalcase.grade.model import Evidence, Grade, error, failed, passed
from evalcase.grade.spec import JudgeSpec, as_list, options_of

NAME = "must_include"
VERSION = "2"

SCOPES = ("final_answer", "assistant_messages")
FLAGS = ("ignore_case", "ignore_punctuation")


def normalise(text: str, *, ignore_case: bool, ignore_punctuation: bool) -> str:
    """``text`` as compared: NFKC with ASCII digits, then without punctuation, separators
    and whitespace (``ignore_punctuation``), then case-folded (``ignore_case``)."""
    out = pii.normalise(text)[0] if (ignore_case or ignore_punctuation) else text
    if ignore_punctuation:
        out = "".join(
            ch for ch in out if not ch.isspace() and unicodedata.category(ch)[0] not in ("P", "Z")
        )
    if ignore_case:
        out = out.casefold()
    return out


def option_problems(options: Mapping[str, Any], values: list[Any]) -> list[tuple[str, str]]:
    """``(option, why)`` for each misuse of the options (EC325 reports them at their line;
    the grader returns the first as its error)."""
    out: list[tuple[str, str]] = []
    scope = options.get("scope", "final_answer")
    if scope not in SCOPES:
        out.append(("scope", f"scope {scope!r} is not one of {', '.join(SCOPES)}"))
    for flag in FLAGS:
        if flag in options and not isinstance(options[flag], bool):
            out.append((flag, f"{flag} must be true or false, not {options[flag]!r}"))
    flags = {f: options.get(f) is True for f in FLAGS}
    if any(flags.values()):
        for item in values:
            for choice in as_list(item):
                if not normalise(str(choice), **flags):
                    on = " and ".join(f for f, v in flags.items() if v)
                    out.append(
                        (
                            "values",
                            f"value {str(choice)!r} is empty once {on} apply: it would be "
                            "found in any answer",
                        )
                    )
    return out


def texts(attempt: Observed, scope: str) -> list[str] | None:
    """What the phrases are looked for in: the final answer, or every assistant message."""
    if scope == "final_answer":
        answer = attempt.output
        return None if answer is None else [answer]
    found = [c for _, c in attempt.contents("assistant") if isinstance(c, str)]
    if not found:  # an older record without messages: the trace's assistant events
        found = [
            e["content"] for e in attempt.events("assistant") if isinstance(e.get("content"), str)
        ]
    answer = attempt.output
    if answer is not None and answer not in found:
        found.append(answer)
    return found or None


def needs(spec: JudgeSpec) -> str | None:
    if not text_values(spec, options_of(spec, NAME), "values", "must_include"):
        return "no phrases to require: set must_include or grader option values"
    return None


@reads_attempt
def grade(spec: JudgeSpec, attempt: Observed, ctx: GradeContext | None = None) -> Grade:
    if (problem := needs(spec)) is not None:
        return error(problem)
    options = options_of(spec, NAME)
    required = text_values(spec, options, "values", "must_include")
    misuse = option_problems(options, required)
    if misuse:
        return error(misuse[0][1])
    scope = str(options.get("scope", "final_answer"))
    flags = {f: options.get(f) is True for f in FLAGS}
    found = texts(attempt, scope)
    if found is None:
        what = "output" if scope == "final_answer" else "assistant message"
        return error(f"the attempt has no {what} to check")
    haystacks = [normalise(t, **flags) for t in found]
    missing = []
    for item in required:
        choices = [str(c) for c in as_list(item)]
        if not any(normalise(c, **flags) in h for c in choices for h in haystacks):
            missing.append(" / ".join(choices))
    where = "output" if scope == "final_answer" else "messages"
    if missing:
        return failed(
            f"missing: {', '.join(missing)}",
            Evidence(None, where),
            score=1 - len(missing) / len(required),
        )
    return passed(f"all {len(required)} required phrases present")
