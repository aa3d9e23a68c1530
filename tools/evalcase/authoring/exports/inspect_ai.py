"""``inspect``: a JSON Lines dataset for Inspect AI's ``json_dataset``, graded by the
scorer evalcase ships for it (``evalcase.authoring.exports.inspect_scorer``).

Each line is one Inspect sample: ``id`` (the case ID), ``input`` (the agent-visible
conversation as ``evalcase run`` sends it: system prompt, conversation history, the first
user turn, with the case's prompt fixture rendered: its system prompt, messages and user
template; ``metadata.prompt`` names it), ``target``
and ``metadata`` (case types, risk level, tags, roles, scenario, versions, the
agent-visible context and tool definitions for a solver that offers tools). Load it with
``json_dataset("cases.jsonl")``.

Inspect reads a list target as alternatives, so no list can say "every required point
and none of the forbidden ones". The ``target`` is therefore one JSON text, the case's
answer key as plain data: ``{"evalcase_answer_key": 1, "text": {expected_behavior,
negative_behavior, reference, must_include, ...}, "graders": [the deterministic text
graders with their options], "model_graded": true|false, "rubric": {...},
"judge_instructions": ...}``. Grade it with ``evalcase_scorer()`` (or the module's
``evalcase_cases`` task): evalcase's own text graders on the answer, and a grader model
for the behaviours and the rubric. Inspect's built-in scorers must not be used on it.

Inspect samples are prompts, not environments: the simulated state, tool behaviour,
faults, permissions, retrieval corpora, final-state checks, side-effect policies, trace
rules, expected tool calls and the graders that judge them, scripted user turns after
the first, a simulated user (``user_simulator``: a sample is one prompt; its ``input``
holds only what the case scripts) and ``role: tool`` turns (in no agent view) are not
carried; the summary line
counts the cases concerned.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from evalcase.authoring.exports import Ledger, Rendered, messages_written
from evalcase.authoring.exports.view import ExportCase
from evalcase.contract.prompt import Prompt

NAME = "inspect"
SUFFIX = ".jsonl"

# A key part -> the text field of the answer key that carries it.
_TEXT_PARTS = {
    "reference": "reference",
    "expected behaviour": "expected_behavior",
    "negative behaviour": "negative_behavior",
}


def target(case: ExportCase) -> str:
    return json.dumps(dict(case.portable_key), ensure_ascii=False, sort_keys=True)


def sample(case: ExportCase) -> dict[str, Any]:
    metadata = case.labels()
    if case.prompt is not None:
        metadata["prompt"] = case.prompt
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


def written(case: ExportCase, line: Mapping[str, Any]) -> set[str]:
    """The parts of ``case`` the sample ``line`` holds, read back from it."""
    out = messages_written(case, line["input"])
    metadata = line["metadata"]
    if metadata.get("context"):
        out.add("context")
    if metadata.get("tools"):
        out.add("tool definitions")
    if metadata.get("case_id") == case.case_id:
        out.add("case IDs and labels")
    key = json.loads(line["target"])
    text = key.get("text") or {}
    for part, name in _TEXT_PARTS.items():
        # Behaviours and references reach a grader model only.
        if text.get(name) is not None and key.get("model_graded"):
            out.add(part)
    out |= {g["type"] for g in key.get("graders", ())}
    if key.get("rubric") is not None and key.get("model_graded"):
        out.add("rubric")
    if key.get("judge_instructions") and key.get("model_graded"):
        out.add("judge instructions")
    return out


def render(
    cases: Sequence[ExportCase],
    records: Sequence[Mapping[str, Any]],
    prompts: Mapping[str, Prompt] | None = None,
) -> Rendered:
    ledger = Ledger()
    lines = []
    for case in cases:
        line = sample(case)
        ledger.account(case, written(case, line))
        lines.append(json.dumps(line, ensure_ascii=False) + "\n")
    return ledger.rendered("".join(lines), len(cases))
