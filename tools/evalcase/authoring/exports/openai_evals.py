"""``openai-evals``: samples in the OpenAI evals registry JSONL shape.

Each line is ``{"input": [chat messages], "ideal": [...]}`` as the registry's
``samples.jsonl`` files hold them (``evals/registry/data/<eval>/samples.jsonl``): the
agent-visible conversation (system prompt, history, first user turn) as ``input``; the
answer key as ``ideal``: the reference answer, else the must-include points, else the
expected behaviours. Use it with a model-graded eval (``modelgraded_spec``), or with
``Includes`` when the ideal answers are literal points.

The registry format has no room for labels, negative behaviour or environments: case
IDs and labels, negative behaviours, must-not-include points, rubrics, and every part
of the simulated environment (state, tools, faults, permissions, corpora, final-state
checks, side-effect policies, trace rules) are not carried; the summary line counts
the cases concerned.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from evalcase.authoring.exports import NotCarried, Rendered
from evalcase.authoring.exports.view import ExportCase

NAME = "openai-evals"
SUFFIX = ".jsonl"


def ideal(case: ExportCase) -> list[str]:
    if case.reference:
        return [case.reference]
    return list(case.must_include or case.expected_behavior)


def render(cases: Sequence[ExportCase], records: Sequence[Mapping[str, Any]]) -> Rendered:
    missing = NotCarried()
    lines = []
    for case in cases:
        missing.add("case IDs and labels (risk level, tags)", case.case_id)
        missing.chat_sample_limits(case)
        if case.negative_behavior or case.must_not_include:
            missing.add("negative behaviour", case.case_id)
        if case.rubric is not None:
            missing.add("rubrics", case.case_id)
        line: dict[str, Any] = {"input": case.messages(), "ideal": ideal(case)}
        lines.append(json.dumps(line, ensure_ascii=False) + "\n")
    return Rendered("".join(lines), len(cases), missing.result())
