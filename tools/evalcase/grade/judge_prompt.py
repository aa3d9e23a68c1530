"""The judge prompt of ``llm_rubric`` (version ``PROMPT_VERSION``, shown whole in
docs/grading.md): what a careful human reviewer would look at.

The system message says how to grade and the exact answer shape (numbers, not ranges);
the user message carries, in this order, each section only when the case has it:

1. the rubric: every dimension with its description, scale and weight;
2. judge instructions: the rubric's ``judge_instructions`` and the case's
   ``evaluator_config.judge.instructions``;
3. the case's expectations: goal, expected and negative behaviour, success and failure
   criteria, safety constraints, expected result usage, reference, constraints;
4. gold evidence: the text of every ``gold_evidence`` passage, from the corpus fixture;
5. the attempt, step by step from the runner's trace: every user turn and reply, every
   tool call (name, arguments), every tool result or error (faults and permission
   refusals included);
6. the passages retrieved, with their IDs and text;
7. the state changes the attempt made (path, before, after);
8. the final answer to grade.

A long item is cut with a visible marker that says how much was left out
(``…[cut: 1234 more characters]``, ``…[cut: 17 more items]``), and the number of cuts is
recorded in the grade; nothing is dropped silently.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalcase.contract.records import Observed
from evalcase.contract.task import Rubric
from evalcase.grade.graders import observed
from evalcase.grade.readers import JSONValue, parse
from evalcase.grade.spec import JudgeSpec, as_list, judge_spec_from_case
from evalcase.grade.trace_events import TraceEvent, events, messages

PROMPT_VERSION = "p2"

MAX_ITEM_CHARS = 4000  # one message, tool result, passage or expectation
MAX_ITEMS = 80  # trace steps, passages, state changes

_EXPECTATIONS = (
    ("goal", "Goal"),
    ("user_goal", "User goal"),
    ("expected_behavior", "Expected behaviour"),
    ("negative_behavior", "Negative behaviour (must not happen)"),
    ("success_criteria", "Success criteria"),
    ("failure_criteria", "Failure criteria"),
    ("safety_constraints", "Safety constraints"),
    ("expected_result_usage", "How tool results should be used"),
    ("reference", "Reference answer"),
    ("constraints", "Constraints"),
)

SYSTEM = (
    "You are a careful reviewer grading one attempt of an AI assistant against a rubric. "
    "Read the whole attempt: the conversation, every tool call with its arguments, every "
    "tool result or error, the passages retrieved and the state changes, and compare "
    "them with the case's expectations, the gold evidence and the instructions. Score "
    "every rubric dimension with a number inside its scale and give a short reason that "
    "points at what you saw. Reply with JSON only, no prose around it, in exactly this "
    "shape (the numbers are an example): "
)


@dataclass(frozen=True)
class Dimension:
    name: str
    description: str
    low: float
    high: float
    weight: float


@dataclass
class Cutter:
    """Cuts long items with a visible marker and counts the cuts."""

    cuts: int = 0
    notes: list[str] = field(default_factory=list)

    def text(self, value: Any, limit: int = MAX_ITEM_CHARS) -> str:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        if len(text) <= limit:
            return text
        self.cuts += 1
        return f"{text[:limit]}…[cut: {len(text) - limit} more characters]"

    def items(self, values: Sequence[Any], what: str) -> tuple[list[Any], str | None]:
        if len(values) <= MAX_ITEMS:
            return list(values), None
        self.cuts += 1
        return list(values[:MAX_ITEMS]), f"…[cut: {len(values) - MAX_ITEMS} more {what}]"


def answer_shape(dims: Sequence[Dimension]) -> dict[str, Any]:
    """The example answer: a number inside each scale (its middle, so the example does not
    suggest a verdict), never a range."""
    out = []
    for d in dims:
        middle = round((d.low + d.high) / 2)
        out.append({"name": d.name, "score": middle,
                    "reason": "what in the attempt justifies this score"})  # fmt: skip
    return {"dimensions": out}


def response_schema(dims: Sequence[Dimension]) -> dict[str, Any]:
    """The JSON Schema of an answer (sent as ``response_format``)."""
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["dimensions"],
        "properties": {
            "dimensions": {
                "type": "array",
                "minItems": len(dims),
                "maxItems": len(dims),
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["name", "score", "reason"],
                    "properties": {
                        "name": {"type": "string", "enum": [d.name for d in dims]},
                        "score": {
                            "type": "number",
                            "minimum": min(d.low for d in dims),
                            "maximum": max(d.high for d in dims),
                        },
                        "reason": {"type": "string", "minLength": 1},
                    },
                },
            }
        },
    }


def _section(title: str, body: str) -> str:
    return f"## {title}\n{body.strip()}\n"


def _rubric(dims: Sequence[Dimension], cut: Cutter) -> str:
    lines = []
    for d in dims:
        desc = cut.text(d.description) if d.description else "(no description given)"
        lines.append(f"- {d.name}: score {d.low:g} to {d.high:g}, weight {d.weight:g}. {desc}")
    return "\n".join(lines)


def _bullets(value: Any, cut: Cutter) -> str:
    items = as_list(value)
    if len(items) == 1 and not isinstance(items[0], str):
        return cut.text(items[0])
    return "\n".join(f"- {cut.text(v)}" for v in items)


def _step(event: TraceEvent, cut: Cutter) -> str | None:
    kind, n = event.type, event.step
    if kind in ("system", "user"):
        return f"[{n}] {kind}: {cut.text(event.content or '')}"
    if kind == "assistant":
        raw = event.tool_calls if isinstance(event.tool_calls, list) else ()
        calls = messages(c for c in raw if isinstance(c, Mapping))
        asked = [str(c.tool) for c in calls]
        content = event.content
        said = cut.text(content) if isinstance(content, str) and content else "(no text)"
        return f"[{n}] assistant: {said}" + (f" -> calls {', '.join(asked)}" if asked else "")
    if kind == "tool_call":
        return f"[{n}] tool call {event.tool} arguments {cut.text(event.args)}"
    if kind == "tool_result":
        return f"[{n}] tool result of {event.tool}: {cut.text(event.result)}"
    if kind == "tool_error":
        return f"[{n}] tool ERROR of {event.tool}: {cut.text(event.error)}"
    if kind == "fault":
        applied = " (the action still took effect)" if event.applied else ""
        return f"[{n}] injected fault on {event.tool}: {event.kind}{applied}"
    if kind == "permission_denied":
        return f"[{n}] permission {event.policy} refused {event.tool}"
    if kind == "error":
        return f"[{n}] attempt error: {event.kind}: {cut.text(event.message)}"
    return None  # state changes, audits and retrievals have their own sections


@dataclass(frozen=True)
class _Inline:
    """An inline rubric: its settings are its own keys, else its ``data``'s."""

    data: Mapping[str, JSONValue] | None = None


def rubric_setting(rubric: Rubric | Mapping[str, Any] | None, name: str) -> Any:
    """A rubric's setting ``name``: an inline rubric's own key, else its ``data``'s."""
    if isinstance(rubric, Rubric):
        return rubric.data.get(name)
    if not isinstance(rubric, Mapping):
        return None
    inline = parse(_Inline, rubric)
    data = inline.data if isinstance(inline, _Inline) else None
    return rubric.get(name) or (data.get(name) if data is not None else None)


def _steps(attempt: Observed, cut: Cutter) -> str:
    lines = [line for e in events(attempt.record.trace) if (line := _step(e, cut)) is not None]
    if not lines:  # a record without trace: the messages it has
        for m in messages(attempt.record.messages):
            if isinstance(m.content, str):
                lines.append(f"{m.role}: {cut.text(m.content)}")
    shown, note = cut.items(lines, "steps")
    return "\n".join(shown + ([note] if note else []))


@dataclass(frozen=True)
class _Passages:
    passages: JSONValue = None  # a retrieval tool's result (a list)


@dataclass(frozen=True)
class _PassageKey:
    doc_id: JSONValue = None
    passage_id: JSONValue = None


def _passages(attempt: Observed) -> list[dict[str, Any]]:
    """Passages a tool returned (with text), in retrieval order, once each."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for call in attempt.calls:
        result = parse(_Passages, call.result)
        found = result.passages if isinstance(result, _Passages) else None
        for p in found if isinstance(found, list | tuple) else ():
            key = parse(_PassageKey, p)
            if isinstance(key, _PassageKey) and isinstance(p, Mapping):
                out.setdefault((str(key.doc_id), str(key.passage_id)), dict(p))
    return list(out.values())


def _changes(attempt: Observed) -> list[str]:
    return [
        f"- step {call.step} {call.tool}: {c.path} "
        f"{json.dumps(c.before, ensure_ascii=False)} -> "
        f"{json.dumps(c.after, ensure_ascii=False)}"
        for call in attempt.calls
        for c in call.changes
    ]


@dataclass(frozen=True)
class _CaseJudge:
    """``evaluator_config.judge``: what the case tells the judge."""

    instructions: JSONValue = None


@dataclass(frozen=True)
class _Gold:
    gold_passages: JSONValue = None  # the case's RAG field (JudgeSpec.rag)


@dataclass(frozen=True)
class Prompt:
    messages: list[dict[str, str]]
    cuts: int


def build(
    spec: JudgeSpec | Mapping[str, Any],
    attempt: Observed | Mapping[str, Any],
    rubric: Any,
    dims: Sequence[Dimension],
    answer: str,
) -> Prompt:
    """The judge's messages for one attempt (a case's judge fields and a record's JSON
    object are read as the typed values)."""
    spec = spec if isinstance(spec, JudgeSpec) else judge_spec_from_case(spec)
    attempt = observed(attempt)
    cut = Cutter()
    system = SYSTEM + json.dumps(answer_shape(dims), ensure_ascii=False)
    parts = [_section("Rubric", _rubric(dims, cut))]
    case_judge = parse(_CaseJudge, spec.judge)
    instructions = [
        str(x)
        for x in (
            rubric_setting(rubric, "judge_instructions"),
            case_judge.instructions if isinstance(case_judge, _CaseJudge) else None,
        )
        if x
    ]
    if instructions:
        parts.append(_section("Judge instructions", "\n".join(cut.text(i) for i in instructions)))
    text, raw = spec.text, spec.raw
    expectations = []
    for key, title in _EXPECTATIONS:
        value = text.get(key, raw.get(key))
        if value not in (None, "", [], {}):
            expectations.append(f"### {title}\n{_bullets(value, cut)}")
    if expectations:
        parts.append(_section("What the case expects", "\n".join(expectations)))
    rag = parse(_Gold, spec.rag)
    gold = as_list(rag.gold_passages) if isinstance(rag, _Gold) else []
    if gold:
        rows = [f"- {g['doc_id']}#{g['passage_id']}: {cut.text(g.get('text', ''))}" for g in gold]
        parts.append(_section("Gold evidence (the passages a correct answer rests on)",
                              "\n".join(rows)))  # fmt: skip
    parts.append(_section("The attempt, step by step", _steps(attempt, cut) or "(nothing)"))
    passages, note = cut.items(_passages(attempt), "passages")
    if passages:
        rows = [f"- {p.get('doc_id')}#{p.get('passage_id')}: {cut.text(p.get('text', ''))}"
                for p in passages]  # fmt: skip
        parts.append(_section("Passages retrieved", "\n".join(rows + ([note] if note else []))))
    changes, note = cut.items(_changes(attempt), "state changes")
    if changes:
        parts.append(_section("State changes made", "\n".join(changes + ([note] if note else []))))
    parts.append(_section("Final answer to grade", cut.text(answer)))
    user = "\n".join(parts)
    return Prompt([{"role": "system", "content": system}, {"role": "user", "content": user}],
                  cut.cuts)  # fmt: skip
