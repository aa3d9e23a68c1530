"""``promptfoo``: a promptfoo tests file (``tests: file://cases.yaml`` in a config).

Each case is one promptfoo test case: ``description`` (the case ID and title words),
``vars`` (the agent-visible part: ``input``, ``system``, ``history`` and ``context`` as
JSON text, for the prompt template to use), ``assert`` (the answer key:
``contains`` for each must-include point, ``not-contains`` for each must-not-include
point, ``is-json`` when the output must be JSON, and ``llm-rubric`` with the expected
and negative behaviours and the rubric's dimensions), and ``metadata`` (case ID,
versions, risk level, tags, types). The agent part and the answer key stay apart:
vars feed the prompt, assertions only grade.

promptfoo tests replay prompts against providers: the simulated state, tool
behaviour, faults, permissions, corpora, final-state checks, side-effect policies,
trace rules and scripted user turns after the first are not carried; the summary line
counts the cases concerned. Validated against promptfoo's own configuration schema.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from evalcase.authoring.exports import NotCarried, Rendered
from evalcase.authoring.exports.view import ExportCase
from evalcase.loader import round_trip_dump

NAME = "promptfoo"
SUFFIX = ".yaml"


def rubric_text(case: ExportCase) -> str | None:
    lines = []
    if case.reference:
        lines.append(f"The answer agrees with this reference: {case.reference}")
    lines += [f"The answer does this: {b}" for b in case.expected_behavior]
    lines += [f"The answer must not do this: {b}" for b in case.negative_behavior]
    if case.rubric:
        dimensions = case.rubric.get("dimensions")
        for dimension in dimensions if isinstance(dimensions, list) else ():
            name = dimension.get("name") if isinstance(dimension, dict) else dimension
            lines.append(f"Score the dimension: {name}")
        instructions = case.rubric.get("judge_instructions")
        if isinstance(instructions, str):
            lines.append(instructions)
    return "\n".join(lines) or None


def test_case(case: ExportCase) -> dict[str, Any]:
    variables: dict[str, Any] = {"input": case.input_text}
    if case.system:
        variables["system"] = case.system
    if case.history:
        variables["history"] = json.dumps(
            [{"role": r, "content": c} for r, c in case.history], ensure_ascii=False
        )
    if case.context:
        variables["context"] = json.dumps(dict(case.context), ensure_ascii=False)
    asserts: list[dict[str, Any]] = [{"type": "contains", "value": t} for t in case.must_include]
    asserts += [{"type": "not-contains", "value": t} for t in case.must_not_include]
    if case.expects_json:
        asserts.append({"type": "is-json"})
    rubric = rubric_text(case)
    if rubric is not None:
        asserts.append({"type": "llm-rubric", "value": rubric})
    test: dict[str, Any] = {"description": case.case_id, "vars": variables}
    if asserts:
        test["assert"] = asserts
    labels = case.labels()
    test["metadata"] = {k: v for k, v in labels.items() if v not in (None, [], "")}
    return test


def _dedent(text: str) -> str:
    """A top-level list starts at column 0 (evalcase's layout indents nested lists)."""
    lines = text.splitlines(keepends=True)
    if all(line.startswith("  ") or not line.strip() for line in lines):
        return "".join(line[2:] if line.strip() else line for line in lines)
    return text


def render(cases: Sequence[ExportCase], records: Sequence[Mapping[str, Any]]) -> Rendered:
    missing = NotCarried()
    tests = []
    for case in cases:
        missing.chat_sample_limits(case)
        test = test_case(case)
        if "assert" not in test:
            missing.add("any assertion (the case has no expectation promptfoo can check)",
                        case.case_id)  # fmt: skip
        tests.append(test)
    text = _dedent(round_trip_dump(tests)) if tests else "[]\n"
    return Rendered(text, len(cases), missing.result())
