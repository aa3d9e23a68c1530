"""The judge's view of a case (execution contract section 2, ``JudgeSpec``).

Graders read only this and the attempt record. Until the contract package provides its own
``JudgeSpec`` this module defines a field-compatible one and builds it from a case as written
(``judge_spec_from_case``), converting the older field forms the contract still accepts
(``expected_tool_sequence`` + ``expected_args``, ``final_state_check.type: state_unchanged``).
Sub-structures are read with ``field_of`` so that either mappings or frozen objects work.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalcase.grade.graders import RENAMED


@dataclass(frozen=True)
class GraderConfig:
    type: str
    weight: float = 1.0
    hard: bool = True
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JudgeSpec:
    case_id: str
    case_version: str = "v1"
    risk_level: str = ""
    case_types: tuple[str, ...] = ()
    expected_calls: Mapping[str, Any] | None = None
    forbidden_tools: tuple[str, ...] = ()
    required_tools: tuple[str, ...] = ()
    side_effect_policies: tuple[Mapping[str, Any], ...] = ()
    final_state_check: Mapping[str, Any] | None = None
    graders: tuple[GraderConfig, ...] = ()
    rule_checks: tuple[str, ...] = ()
    rubric: Mapping[str, Any] | None = None
    judge: Mapping[str, Any] = field(default_factory=dict)
    pass_k: int | None = None
    text: Mapping[str, Any] = field(default_factory=dict)
    rag: Mapping[str, Any] = field(default_factory=dict)
    trace_rules: tuple[str, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict)


def field_of(obj: Any, name: str, default: Any = None) -> Any:
    """``obj[name]`` for a mapping, ``obj.name`` for an object, else ``default``."""
    if obj is None:
        return default
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str | bytes | Mapping):
        return [value]
    if isinstance(value, Sequence):
        return list(value)
    return [value]


def grader_config(spec: Any, name: str) -> GraderConfig | None:
    for config in field_of(spec, "graders", ()) or ():
        if field_of(config, "type") == name:
            if isinstance(config, GraderConfig):
                return config
            return GraderConfig(
                type=name,
                weight=float(field_of(config, "weight", 1.0) or 1.0),
                hard=bool(field_of(config, "hard", True)),
                options=dict(field_of(config, "options", {}) or {}),
            )
    return None


def options_of(spec: Any, name: str) -> Mapping[str, Any]:
    config = grader_config(spec, name)
    return config.options if config is not None else {}


_TEXT_FIELDS = (
    "reference",
    "constraints",
    "expected_behavior",
    "negative_behavior",
    "success_criteria",
    "failure_criteria",
    "must_include",
    "must_not_include",
    "regex",
    "json_schema",
    "promise_phrases",
    "expected_output",
    "exact_match",
    "reference_answer",
    "output_schema",
)
_RAG_FIELDS = ("gold_evidence", "citation_requirement", "evaluation_metrics", "effective_at")


def _expected_calls(case: Mapping[str, Any]) -> Mapping[str, Any] | None:
    calls = case.get("expected_calls")
    if isinstance(calls, Mapping):
        return calls
    if isinstance(calls, list):
        return {"order": "in_order", "calls": calls}
    sequence = case.get("expected_tool_sequence")
    if isinstance(sequence, list):
        args = case.get("expected_args") or {}
        return {
            "order": "in_order",
            "calls": [
                {"tool": tool, "args": dict(args.get(tool, {}) or {})}
                for tool in sequence
                if isinstance(tool, str)
            ],
        }
    return None


def _graders(case: Mapping[str, Any]) -> tuple[GraderConfig, ...]:
    config = case.get("evaluator_config") or {}
    out: dict[str, GraderConfig] = {}
    for raw in config.get("graders") or ():
        if not isinstance(raw, Mapping) or not isinstance(raw.get("type"), str):
            continue
        name = str(RENAMED.get(raw["type"], raw["type"]))
        options = {k: v for k, v in raw.items() if k not in ("type", "weight", "hard")}
        options.update(raw.get("options") or {})
        weight = float(raw.get("weight", 1.0) or 0.0)
        if name in out:  # tool_sequence + tool_args both became tool_calls: one grader
            old = out[name]
            out[name] = GraderConfig(
                name, old.weight + weight, old.hard, {**old.options, **options}
            )
        else:
            out[name] = GraderConfig(name, weight, bool(raw.get("hard", True)), options)
    return tuple(out.values())


def judge_spec_from_case(
    case: Mapping[str, Any], rubric: Mapping[str, Any] | None = None
) -> JudgeSpec:
    """Build the judge's view from a case document as written (plain data)."""
    config = case.get("evaluator_config") or {}
    metadata = case.get("metadata") or {}
    policies = case.get("side_effect_policy")
    fsc = case.get("final_state_check")
    trace_req = case.get("trace_requirement") or {}
    text = {k: case[k] for k in _TEXT_FIELDS if k in case}
    rag = {k: case[k] for k in _RAG_FIELDS if k in case}
    environment = case.get("environment") or {}
    if "effective_at" in environment:
        rag.setdefault("effective_at", environment["effective_at"])
    if isinstance(case.get("rubric"), Mapping) and rubric is None:
        rubric = case["rubric"]
    elif rubric is None and isinstance(case.get("rubric"), str):
        rubric = {"rubric_id": case["rubric"]}
    return JudgeSpec(
        case_id=str(case.get("case_id", "")),
        case_version=str(case.get("case_version", "v1")),
        risk_level=str(case.get("risk_level", "")),
        case_types=tuple(as_list(case.get("case_types"))),
        expected_calls=_expected_calls(case),
        forbidden_tools=tuple(as_list(case.get("forbidden_tools"))),
        required_tools=tuple(as_list(case.get("required_tools"))),
        side_effect_policies=tuple(p for p in as_list(policies) if isinstance(p, Mapping)),
        final_state_check=fsc if isinstance(fsc, Mapping) else None,
        graders=_graders(case),
        rule_checks=tuple(as_list(config.get("rule_checks"))),
        rubric=rubric,
        judge=dict(config.get("judge") or {}),
        pass_k=config.get("pass_k"),
        text=text,
        rag=rag,
        trace_rules=tuple(r for r in as_list(trace_req.get("rules")) if isinstance(r, str)),
        raw={**case, "metadata": metadata},
    )
