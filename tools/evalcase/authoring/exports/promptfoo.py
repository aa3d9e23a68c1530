"""``promptfoo``: a promptfoo tests file (``tests: file://cases.yaml`` in a config).

Each case is one promptfoo test case: ``description`` (the case ID), ``vars`` (the
agent-visible part: ``input``, ``system``, ``history`` and ``context`` as JSON text, and
``tools``, the tool definitions in the OpenAI function-tool shape as JSON text, for the
prompt template or a provider config such as ``tools: '{{tools}}'``), ``assert`` (the
answer key) and ``metadata`` (case ID, versions, risk level, tags, types). The agent part
and the answer key stay apart: vars feed the prompt, assertions only grade.

The answer key, check by check, as evalcase's graders read it:

- ``exact_match``: ``equals`` the reference (several accepted answers: an ``assert-set``
  any one of which passes); with ``ignore_case`` / ``ignore_whitespace`` not carried;
- ``must_include`` (the case's field, its constraints, or the grader's ``values``):
  ``contains`` per required point, ``contains-any`` for a point given as alternatives;
- ``must_not_include``: ``not-contains`` per phrase;
- ``regex``: ``regex`` per required pattern, ``not-regex`` per forbidden one;
- ``json_schema``: ``is-json`` with the schema (``is-json`` alone for a JSON format);
- the reference, expected and negative behaviours, the rubric's dimensions and
  instructions and ``judge.instructions``: one ``llm-rubric``.

promptfoo tests replay prompts against providers: the simulated state, tool behaviour,
faults, permissions, corpora, final-state checks, side-effect policies, trace rules,
expected tool calls and scripted user turns after the first are not carried; the summary
line counts the cases concerned. Validated against promptfoo's own configuration schema
and run with ``promptfoo eval`` in the tests.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from evalcase.authoring.exports import Ledger, Rendered
from evalcase.authoring.exports.view import ExportCase
from evalcase.yamlwrite import round_trip_dump

NAME = "promptfoo"
SUFFIX = ".yaml"


def rubric_text(case: ExportCase) -> str | None:
    lines = []
    for reference in case.references:
        lines.append(f"The answer agrees with this reference: {reference}")
    lines += [f"The answer does this: {b}" for b in case.expected_behavior]
    lines += [f"The answer must not do this: {b}" for b in case.negative_behavior]
    if case.rubric:
        dimensions = case.rubric.get("dimensions")
        for dimension in dimensions if isinstance(dimensions, list) else ():
            name = dimension.get("name") if isinstance(dimension, dict) else dimension
            about = dimension.get("description") if isinstance(dimension, dict) else None
            lines.append(f"Score the dimension: {name}" + (f": {about}" if about else ""))
        if case.rubric.get("pass_threshold") is not None:
            lines.append(f"Pass threshold: {case.rubric['pass_threshold']}")
        instructions = case.rubric.get("judge_instructions")
        if isinstance(instructions, str):
            lines.append(instructions.strip())
    if case.judge_instructions:
        lines.append(case.judge_instructions)
    return "\n".join(lines) or None


def text_asserts(case: ExportCase) -> list[dict[str, Any]]:
    """The deterministic checks, one promptfoo assert per point."""
    asserts: list[dict[str, Any]] = []
    if case.exact and case.exact_flags == (False, False):
        equals = [{"type": "equals", "value": r} for r in case.exact]
        if len(equals) == 1:
            asserts += equals
        else:
            asserts.append({"type": "assert-set", "threshold": 1 / len(equals), "assert": equals})
    for group in case.must_include:
        if len(group) == 1:
            asserts.append({"type": "contains", "value": group[0]})
        else:
            asserts.append({"type": "contains-any", "value": list(group)})
    asserts += [{"type": "not-contains", "value": t} for t in case.must_not_include]
    asserts += [{"type": "regex", "value": p} for p in case.patterns]
    asserts += [{"type": "not-regex", "value": p} for p in case.anti_patterns]
    if case.json_schema is not None:
        asserts.append({"type": "is-json", "value": dict(case.json_schema)})
    elif case.expects_json:
        asserts.append({"type": "is-json"})
    return asserts


def written(case: ExportCase, test: Mapping[str, Any]) -> set[str]:
    """The parts of ``case`` the promptfoo test holds, read back from its vars and asserts."""
    out = set()
    variables = test["vars"]
    if case.system is not None and variables.get("system") == case.system:
        out.add("system prompt")
    if variables.get("history"):
        out.add("conversation history")
    if variables.get("context"):
        out.add("context")
    if variables.get("tools"):
        out.add("tool definitions")
    if test.get("metadata", {}).get("case_id") == case.case_id:
        out.add("case IDs and labels")
    asserts = list(test.get("assert", ()))
    flat = [
        a for x in asserts for a in (x.get("assert", [x]) if x["type"] == "assert-set" else [x])
    ]
    kinds = [(a["type"], json.dumps(a.get("value"), ensure_ascii=False)) for a in flat]

    def has(kind: str, value: Any) -> bool:
        return (kind, json.dumps(value, ensure_ascii=False)) in kinds

    if case.exact and all(has("equals", r) for r in case.exact):
        out.add("exact_match")
    if case.must_include and all(
        has("contains", g[0]) if len(g) == 1 else has("contains-any", list(g))
        for g in case.must_include
    ):
        out.add("must_include")
    if case.must_not_include and all(has("not-contains", t) for t in case.must_not_include):
        out.add("must_not_include")
    if all(has("regex", p) for p in case.patterns) and all(
        has("not-regex", p) for p in case.anti_patterns
    ):
        out.add("regex")
    if case.json_schema is not None and has("is-json", dict(case.json_schema)):
        out.add("json_schema")
    rubric = next((str(a["value"]) for a in flat if a["type"] == "llm-rubric"), "")
    if rubric:
        if all(r in rubric for r in case.references):
            out.add("reference")
        if all(b in rubric for b in case.expected_behavior):
            out.add("expected behaviour")
        if all(b in rubric for b in case.negative_behavior):
            out.add("negative behaviour")
        if case.rubric is not None and all(
            f"Score the dimension: {d.get('name') if isinstance(d, dict) else d}" in rubric
            for d in case.rubric.get("dimensions") or ()
        ):
            out.add("rubric")
        if case.judge_instructions and case.judge_instructions in rubric:
            out.add("judge instructions")
    return out


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
    if case.tools:
        variables["tools"] = json.dumps(
            [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": dict(t.parameters),
                    },
                }
                for t in case.tools
            ],
            ensure_ascii=False,
        )
    asserts = text_asserts(case)
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
    ledger = Ledger()
    tests = []
    for case in cases:
        test = test_case(case)
        ledger.account(case, written(case, test))
        tests.append(test)
    text = _dedent(round_trip_dump(tests)) if tests else "[]\n"
    return ledger.rendered(text, len(cases))
