"""``openai-evals``: samples in the OpenAI evals registry JSONL shape.

Each line is ``{"input": [chat messages], "ideal": [strings]}`` as the registry's
``samples.jsonl`` files hold them (``evals/registry/data/<eval>/samples.jsonl``): the
agent-visible conversation (system prompt, history, first user turn) as ``input``, and
as ``ideal`` a list of strings, each one an acceptable answer (the evals' ``Includes``
passes when any one is in the answer, ``Match`` when the answer starts with one): the
reference's alternatives (a list reference is its items, never one JSON text), else the
``exact_match`` answers, else the one required point's alternatives when the case
requires exactly one (``Includes`` then checks what ``must_include`` checks), else the
expected behaviours (for a model-graded eval, ``modelgraded_spec``).

The registry format has no room for labels, negative behaviour or environments: case IDs
and labels, negative behaviours, must-not-include phrases, more than one required point
(``ideal`` means any one of them), exact answers as such (neither ``Includes`` nor
``Match`` compares for equality), regexes, schemas, rubrics, tool definitions and every
part of the simulated environment (state, tools, faults, permissions, corpora,
final-state checks, side-effect policies, trace rules) are not carried; the summary line
counts the cases concerned.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from evalcase.authoring.exports import Ledger, Rendered, messages_written
from evalcase.authoring.exports.view import ExportCase

NAME = "openai-evals"
SUFFIX = ".jsonl"


def ideal(case: ExportCase) -> list[str]:
    if case.references:
        return list(case.references)
    if case.exact:
        return list(case.exact)
    if len(case.must_include) == 1:
        return list(case.must_include[0])
    return list(case.expected_behavior)


def written(case: ExportCase, line: Mapping[str, Any]) -> set[str]:
    """The parts of ``case`` the sample holds, read back from it."""
    out = messages_written(case, line["input"])
    answers = line["ideal"]
    if case.references and answers == list(case.references):
        out.add("reference")
    # exact_match is not carried: Includes (containment) and Match (prefix) do not mean
    # equality, though its answers are the ideal when there is no reference.
    if len(case.must_include) == 1 and answers == list(case.must_include[0]):
        out.add("must_include")
    if case.expected_behavior and answers == list(case.expected_behavior):
        out.add("expected behaviour")
    return out


def render(cases: Sequence[ExportCase], records: Sequence[Mapping[str, Any]]) -> Rendered:
    ledger = Ledger()
    lines = []
    for case in cases:
        line: dict[str, Any] = {"input": case.messages(), "ideal": ideal(case)}
        ledger.account(case, written(case, line))
        lines.append(json.dumps(line, ensure_ascii=False) + "\n")
    return ledger.rendered("".join(lines), len(cases))
