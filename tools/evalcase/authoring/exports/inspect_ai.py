"""``inspect``: a JSON Lines dataset for Inspect AI's ``json_dataset``.

Each line is one Inspect sample: ``id`` (the case ID), ``input`` (the agent-visible
conversation: system prompt, conversation history, the first user turn), ``target``
(the answer key: the reference answer, else the expected behaviours, each negative
behaviour as "must not: ..."), and ``metadata`` (case types, risk level, tags, roles,
scenario, versions, the agent-visible context and tool definitions for a solver that
offers tools). Load it with ``json_dataset("cases.jsonl")``.

Inspect samples are prompts, not environments: the simulated state, tool behaviour,
faults, permissions, retrieval corpora, final-state checks, side-effect policies and
trace rules are not carried, nor are scripted user turns after the first; the summary
line counts the cases concerned.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from evalcase.authoring.exports import NotCarried, Rendered
from evalcase.authoring.exports.view import ExportCase

NAME = "inspect"
SUFFIX = ".jsonl"


def target(case: ExportCase) -> list[str]:
    key = [case.reference] if case.reference else list(case.expected_behavior)
    key += [f"must include: {t}" for t in case.must_include]
    key += [f"must not: {t}" for t in case.negative_behavior + case.must_not_include]
    return key


def sample(case: ExportCase) -> dict[str, Any]:
    metadata = case.labels()
    if case.context:
        metadata["context"] = dict(case.context)
    if case.tools:
        metadata["tools"] = [
            {"name": t.name, "description": t.description, "parameters": dict(t.parameters)}
            for t in case.tools
        ]
    return {
        "id": case.case_id,
        "input": case.messages(),
        "target": target(case),
        "metadata": metadata,
    }


def render(cases: Sequence[ExportCase], records: Sequence[Mapping[str, Any]]) -> Rendered:
    missing = NotCarried()
    lines = []
    for case in cases:
        missing.chat_sample_limits(case)
        lines.append(json.dumps(sample(case), ensure_ascii=False) + "\n")
    return Rendered("".join(lines), len(cases), missing.result())
