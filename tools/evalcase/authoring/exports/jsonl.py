"""``jsonl``: the offline evaluation JSONL of seed 002 section 11 (the default).

One case a line with the section 11 fields (``id``, ``input`` with ``message`` and
``context_refs``, ``expected`` with ``outcome``, ``required_tools`` and
``forbidden_tools``, ``rubric``, ``tags``, ``risk_level`` low..critical, ``source``),
validated by ``schemas/offline-case.schema.json``, followed by evalcase's own fields that
make the line reproducible: ``dataset_id``, ``dataset_version``, ``release``, ``commit``,
``case_id``, ``case_version``, the whole ``case`` and every ``fixture`` it references,
resolved. So nothing is lost: a run months later uses exactly what the release froze,
and a tool that reads section 11 reads the first fields. The format has one line per
case, so the answer key (``expected``) travels in the same line as the input.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from evalcase.authoring.exports import Rendered
from evalcase.authoring.exports.view import RISK_WORDS, ExportCase, mapping

NAME = "jsonl"
SUFFIX = ".jsonl"


def section11(case: ExportCase, record: Mapping[str, Any]) -> dict[str, Any]:
    raw = record.get("case") or {}
    context = mapping(raw.get("context"))
    refs = [str(r) for r in context.get("fixtures") or []]
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
    lines = []
    for case, record in zip(cases, records, strict=True):
        line = {**section11(case, record), **record}
        lines.append(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
    return Rendered("".join(lines), len(cases))
