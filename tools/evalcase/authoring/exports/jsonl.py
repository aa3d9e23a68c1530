"""``jsonl``: the offline evaluation JSONL (schemas/offline-case.schema.json; the default).

One case a line with the offline JSONL fields (``id``, ``input`` with ``message``,
``context_refs`` (the fixtures the case resolved) and ``context``, ``expected`` with
``outcome``, ``required_tools`` and ``forbidden_tools``, ``rubric``, ``tags``,
``risk_level`` low..critical, ``source``), validated by
``schemas/offline-case.schema.json``, followed by evalcase's own record
(evalcase.versioning.export): ``dataset_id``, ``dataset_version``, ``release``,
``commit``, ``case_id``, ``case_version``, ``digest``, and the task in its separate
parts ``agent_view``, ``environment`` and ``answer_key``, with ``meta`` and
``fixture_versions``. So nothing is lost: a run months later uses exactly what the
release froze, and a tool that reads offline JSONL reads the first fields. That format
puts ``expected`` in the same line as ``input``; evalcase's own parts keep them apart.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from evalcase.authoring.exports import Ledger, Rendered
from evalcase.authoring.exports.view import RISK_WORDS, ExportCase

NAME = "jsonl"
SUFFIX = ".jsonl"


def section11(case: ExportCase) -> dict[str, Any]:
    refs = list(case.fixtures)
    message: dict[str, Any] = {"message": case.input_text}
    if refs:
        message["context_refs"] = refs
    if case.context:
        message["context"] = dict(case.context)
    expected: dict[str, Any] = {
        "outcome": "; ".join(case.expected_behavior) or (case.reference or ""),
        "required_tools": list(case.expected_tools),
        "forbidden_tools": list(case.forbidden_tools),
    }
    if case.negative_behavior:
        expected["negative_behavior"] = list(case.negative_behavior)
    return {
        "id": case.case_id,
        "input": message,
        "expected": expected,
        "rubric": case.rubric_id,
        "tags": list(case.tags),
        "risk_level": RISK_WORDS.get(case.risk_level or "", "medium"),
        "source": case.source or "",
    }


def render(cases: Sequence[ExportCase], records: Sequence[Mapping[str, Any]]) -> Rendered:
    ledger = Ledger()
    lines = []
    for case, record in zip(cases, records, strict=True):
        line = {**section11(case), **record}
        # The task is written whole, in its parts: every part is carried when they are.
        whole = all(line.get(k) is not None for k in ("agent_view", "environment", "answer_key"))
        ledger.account(case, set(case.present) if whole else set())
        lines.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
    return ledger.rendered("".join(lines), len(cases))
