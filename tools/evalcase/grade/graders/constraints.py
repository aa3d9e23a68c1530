"""The answer respects length, sentence and format constraints.

Configuration (the case's ``constraints``, or grader options of the same shape)::

    constraints:
      max_chars: 80            # also min_chars
      max_sentences: 3         # also min_sentences
      format: 两到三句话   # N句话以内, 两到三句话, 一段话, json, bullet_list, numbered_list
      must_include: [原路]      # checked here too, as a constraint
      must_not_include: [保证]

Free-text fields such as ``tone`` are for ``llm_rubric`` and are not checked here.
Passing: ``max_chars: 80`` and a 40-character answer of two sentences for ``两到三句话``.
Failing: a 120-character answer (the reason gives both numbers). A case without any
checkable constraint, or an attempt without output, is an error.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from evalcase.contract.records import Observed
from evalcase.grade.context import GradeContext
from evalcase.grade.graders import reads_attempt
from evalcase.grade.model import Evidence, Grade, error, failed, passed
from evalcase.grade.spec import JudgeSpec, as_list, options_of

NAME = "constraints"
VERSION = "1"
_NUMBERS = {
    "一": 1,
    "两": 2,
    "二": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
    "十": 10,
}
_SENTENCE_END = re.compile(r"[。！？!?；;]+|\.(?=\s|$)")


def _number(text: str) -> int | None:
    return int(text) if text.isdigit() else _NUMBERS.get(text)


def sentences(text: str) -> int:
    return len([p for p in _SENTENCE_END.split(text.strip()) if p.strip()])


def _format_rule(fmt: str) -> tuple[str, Any] | None:
    fmt = fmt.strip()
    n = r"([0-9]+|[一两二三四五六七八九十])"
    if m := re.fullmatch(rf"{n}到{n}句话?", fmt):
        return "sentences", (_number(m.group(1)), _number(m.group(2)))
    if m := re.fullmatch(rf"{n}句话?(?:以内|之内)", fmt):
        return "sentences", (1, _number(m.group(1)))
    if m := re.fullmatch(rf"{n}句话?", fmt):
        return "sentences", (_number(m.group(1)), _number(m.group(1)))
    if fmt in ("一段话", "一段", "single_paragraph", "paragraph"):
        return "paragraphs", 1
    if fmt.lower() in ("json", "bullet_list", "numbered_list"):
        return fmt.lower(), None
    return None


def _checks(source: Mapping[str, Any]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key in ("max_chars", "min_chars", "max_sentences", "min_sentences"):
        if isinstance(source.get(key), int):
            out.append((key, source[key]))
    if isinstance(source.get("format"), str) and (rule := _format_rule(source["format"])):
        out.append(rule)
    for key in ("must_include", "must_not_include"):
        if source.get(key):
            out.append((key, as_list(source[key])))
    return out


def _source(spec: JudgeSpec) -> Any:
    return options_of(spec, NAME) or spec.text.get("constraints")


def needs(spec: JudgeSpec) -> str | None:
    source = _source(spec)
    if not isinstance(source, Mapping):
        return "the case has no constraints (and the grader no options of that shape)"
    if not _checks(source):
        return (
            "constraints name nothing a script can check (max_chars, min_chars, "
            "max_sentences, min_sentences, format, must_include, must_not_include)"
        )
    return None


@reads_attempt
def grade(spec: JudgeSpec, attempt: Observed, ctx: GradeContext | None = None) -> Grade:
    if (problem := needs(spec)) is not None:
        return error(problem)
    checks = _checks(_source(spec))
    answer = attempt.output
    if answer is None:
        return error("the attempt has no output to check")
    text = answer.strip()
    here = Evidence(None, "output")
    for key, value in checks:
        problem = None
        if key == "max_chars" and len(text) > value:
            problem = f"{len(text)} characters, at most {value} allowed"
        elif key == "min_chars" and len(text) < value:
            problem = f"{len(text)} characters, at least {value} required"
        elif key == "max_sentences" and sentences(text) > value:
            problem = f"{sentences(text)} sentences, at most {value} allowed"
        elif key == "min_sentences" and sentences(text) < value:
            problem = f"{sentences(text)} sentences, at least {value} required"
        elif key == "sentences" and not value[0] <= sentences(text) <= value[1]:
            problem = f"{sentences(text)} sentences, {value[0]} to {value[1]} required"
        elif key == "paragraphs" and len([p for p in re.split(r"\n\s*\n", text) if p]) > 1:
            problem = "more than one paragraph"
        elif key == "json":
            try:
                json.loads(text)
            except json.JSONDecodeError:
                problem = "not JSON"
        elif key == "bullet_list" and not re.search(r"^\s*[-*•]\s", text, re.M):
            problem = "not a bullet list"
        elif key == "numbered_list" and not re.search(r"^\s*[0-9]+[.、)]\s*", text, re.M):
            problem = "not a numbered list"
        elif key == "must_include":
            missing = [str(v) for v in value if str(v) not in text]
            problem = f"missing: {', '.join(missing)}" if missing else None
        elif key == "must_not_include":
            found = [str(v) for v in value if str(v) in text]
            problem = f"contains forbidden: {', '.join(found)}" if found else None
        if problem:
            return failed(f"{key}: {problem}", here)
    return passed(f"{len(checks)} constraints hold")
