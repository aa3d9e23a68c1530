"""The judge's view of a case: the contract's ``JudgeSpec`` (contract/task.py), plus the
grader configuration as grading uses it (old names mapped, ``hard`` read from options).

``judge_spec_from_case`` builds a ``JudgeSpec`` from the judge fields of a case document
with the contract's own converters; grader samples and tests use it for cases that are
only judge fields (the runner's tasks come from ``contract.build.build_task``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalcase.contract import build
from evalcase.contract.graders import RENAMED, configured
from evalcase.contract.task import GraderConfig, JudgeSpec, Rubric
from evalcase.grade.readers import JSONValue, ReadError, parse

__all__ = [
    "GraderConfig",
    "JudgeSpec",
    "as_list",
    "judge_spec_from_case",
    "unrun_rule_checks",
]


def as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str | bytes | Mapping):
        return [value]
    if isinstance(value, Sequence):
        return list(value)
    return [value]


def grader_configs(spec: JudgeSpec) -> list[GraderConfig]:
    """The case's graders under their current names, each with its weight (1 when not
    written) and ``hard`` resolved; ``tool_sequence`` + ``tool_args`` (both now
    ``tool_calls``) become one grader with the summed weight."""
    out: dict[str, GraderConfig] = {}
    for raw in spec.graders:
        if not raw.type:
            continue
        name = RENAMED.get(raw.type, raw.type)
        weight = raw.counted_weight
        if name in out:
            old = out[name]
            out[name] = GraderConfig(
                name, old.counted_weight + weight, {**old.options, **raw.options},
                old.hard and raw.hard,
            )  # fmt: skip
        else:
            out[name] = GraderConfig(name, weight, dict(raw.options), raw.hard)
    return list(out.values())


def grader_config(spec: JudgeSpec, name: str) -> GraderConfig | None:
    return next((c for c in grader_configs(spec) if c.type == name), None)


def unrun_rule_checks(spec: JudgeSpec) -> tuple[str, ...]:
    """The case's ``evaluator_config.rule_checks`` that no grader runs: all of them when
    its graders (as grading reads them: old names mapped) have no
    ``trace_rule``, the one grader that runs rule checks; else none. A spec built from a
    case always has it (evalcase.contract.graders implies it, beside a written list too),
    so only a spec built otherwise can leave them out; the engine grades such an
    attempt ``error``."""
    checks = tuple(str(c) for c in spec.rule_checks)
    if not checks or any(c.type == "trace_rule" for c in grader_configs(spec)):
        return ()
    return checks


def options_of(spec: JudgeSpec, name: str) -> Mapping[str, Any]:
    config = grader_config(spec, name)
    return config.options if config is not None else {}


_TEXT = (*build.JUDGE_TEXT, "must_include", "must_not_include", "regex", "json_schema",
         "output_schema", "promise_phrases", "expected_output")  # fmt: skip


@dataclass(frozen=True)
class RubricDocument:
    """A rubric fixture (``fixture_id``, ``fixture_version``, ``data``) or inline rubric."""

    fixture_id: str | None = None
    fixture_version: str | None = None
    data: Mapping[str, JSONValue] | None = None


@dataclass(frozen=True)
class EvaluatorFields:
    rule_checks: tuple[JSONValue, ...] = ()
    judge: Mapping[str, JSONValue] = field(default_factory=dict)
    pass_k: JSONValue = None


@dataclass(frozen=True)
class EnvironmentFields:
    effective_at: JSONValue = None


@dataclass(frozen=True)
class TraceRequirement:
    rules: tuple[JSONValue, ...] = ()


@dataclass(frozen=True)
class CaseJudgeFields:
    """The judge fields of a case document that ``judge_spec_from_case`` reads by name
    (the rest go through the contract's converters)."""

    case_id: str = ""
    case_version: str = "v1"
    risk_level: str = ""
    case_types: tuple[JSONValue, ...] = ()
    forbidden_tools: tuple[JSONValue, ...] = ()
    required_tools: tuple[JSONValue, ...] = ()
    side_effect_policy: JSONValue = None
    final_state_check: JSONValue = None
    evaluator_config: Mapping[str, JSONValue] = field(default_factory=dict)
    rubric: JSONValue = None
    environment: EnvironmentFields = EnvironmentFields()
    trace_requirement: TraceRequirement = TraceRequirement()


def _texts(values: tuple[JSONValue, ...]) -> tuple[str, ...]:
    """The scalar entries of a list field as text (others left out), as the contract's
    task builder reads them."""
    return tuple(str(v) for v in values if isinstance(v, str | int | float))


def _read(cls: type[Any], data: object, what: str) -> Any:
    read = parse(cls, data)
    if isinstance(read, ReadError):
        raise ValueError(f"{what}: {read}")
    return read


def judge_spec_from_case(case: Mapping[str, Any], rubric: Any = None) -> JudgeSpec:
    """A ``JudgeSpec`` from the judge fields of a case document (plain data); a field of
    the wrong kind is a ``ValueError`` naming it."""
    doc: CaseJudgeFields = _read(CaseJudgeFields, case, "case")
    evaluator: EvaluatorFields = _read(EvaluatorFields, doc.evaluator_config, "evaluator_config")
    graders = tuple(
        build.grader_config(g) for g in configured(doc.evaluator_config) if isinstance(g, Mapping)
    )
    if rubric is None and isinstance(doc.rubric, Mapping):
        rubric = doc.rubric
    if isinstance(rubric, Mapping):
        read: RubricDocument = _read(RubricDocument, rubric, "rubric")
        rubric = Rubric(read.fixture_id, read.fixture_version, dict(read.data or rubric))
    rag = {k: case[k] for k in build.RAG_FIELDS if k in case}
    if doc.environment.effective_at:
        rag["effective_at"] = doc.environment.effective_at
    calls = build.expected_calls(case)
    required = _texts(doc.required_tools)
    if not required and calls is not None and calls.any_of:  # as build_task derives them
        common = set.intersection(*[{c.tool for c in plan.calls} for plan in calls.any_of])
        required = tuple(dict.fromkeys(c.tool for c in calls.any_of[0].calls if c.tool in common))
    return JudgeSpec(
        case_id=doc.case_id,
        case_version=doc.case_version,
        risk_level=doc.risk_level,
        case_types=_texts(doc.case_types),
        expected_calls=calls,
        forbidden_tools=_texts(doc.forbidden_tools),
        required_tools=required,
        side_effect_policies=build.side_effect_policies(doc.side_effect_policy),
        final_state_check=build.final_state_check(doc.final_state_check),
        graders=graders,
        rule_checks=_texts(evaluator.rule_checks),
        rubric=rubric if isinstance(rubric, Rubric) else None,
        judge=dict(evaluator.judge),
        pass_k=evaluator.pass_k if isinstance(evaluator.pass_k, int) else None,
        text={k: case[k] for k in _TEXT if k in case},
        rag=rag,
        trace_rules=tuple(r for r in doc.trace_requirement.rules if isinstance(r, str)),
        raw=dict(case),
    )
