"""What an export reads of a case: the agent-visible part, the answer key, and labels.

Built from the case's :class:`~evalcase.contract.task.Task` (``from_task``): the
agent part comes from its AgentView only, the answer key from its JudgeSpec only, labels
from its meta. An export writes the agent part where the target tool feeds the model,
the answer key where it grades, and never mixes the two where the format allows
keeping them apart. ``from_record`` reads the same view from a resolved export record
(the case plus its fixtures) for the jsonl format, which carries the record whole.

``environment`` names what a case needs from a simulated environment (state, tool
behaviour, faults, permissions, retrieval corpora, final-state checks): formats that
only replay prompts cannot carry it, and their summary says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalcase.contract.task import Task, ToolCard

RISK_WORDS = {"P0": "critical", "P1": "high", "P2": "medium", "P3": "low"}


@dataclass(frozen=True)
class ExportCase:
    case_id: str
    case_version: str
    dataset_id: str
    dataset_version: str
    # the agent-visible part
    system: str | None
    history: tuple[tuple[str, str], ...]
    user_turns: tuple[str, ...]
    context: Mapping[str, Any]
    tools: tuple[ToolCard, ...]
    # the answer key
    expected_behavior: tuple[str, ...]
    negative_behavior: tuple[str, ...]
    reference: str | None
    must_include: tuple[str, ...]
    must_not_include: tuple[str, ...]
    expects_json: bool
    expected_tools: tuple[str, ...]
    forbidden_tools: tuple[str, ...]
    rubric: Mapping[str, Any] | None
    rubric_id: str | None
    # labels
    risk_level: str | None
    case_types: tuple[str, ...]
    tags: tuple[str, ...]
    roles: tuple[str, ...]
    scenario: str | None
    source: str | None
    environment: tuple[str, ...]

    @property
    def input_text(self) -> str:
        return self.user_turns[0] if self.user_turns else ""

    def messages(self) -> list[dict[str, str]]:
        """System prompt, history and the first user turn, as chat messages."""
        out = [{"role": "system", "content": self.system}] if self.system else []
        out += [{"role": role, "content": content} for role, content in self.history]
        if self.user_turns:
            out.append({"role": "user", "content": self.user_turns[0]})
        return out

    def labels(self) -> dict[str, Any]:
        """Governance and reporting labels: never part of the answer key."""
        return {
            "case_id": self.case_id,
            "case_version": self.case_version,
            "dataset_id": self.dataset_id,
            "dataset_version": self.dataset_version,
            "case_types": list(self.case_types),
            "risk_level": self.risk_level,
            "tags": list(self.tags),
            "dataset_role": list(self.roles),
            "scenario": self.scenario,
        }


def mapping(value: Any) -> dict[str, Any]:
    """``value`` when it is a mapping, else an empty one."""
    return value if isinstance(value, dict) else {}


def _texts(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,) if value.strip() else ()
    if isinstance(value, list):
        return tuple(str(v) for v in value if isinstance(v, str | int | float) and str(v).strip())
    return ()


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    import json

    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _fixture_data(fixtures: Mapping[str, Any], fixture_id: Any) -> Any:
    fixture = fixtures.get(fixture_id) if isinstance(fixture_id, str) else None
    return fixture.get("data") if isinstance(fixture, dict) else None


def _conversation(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> list[tuple[str, str]]:
    history: list[tuple[str, str]] = []
    ids = (
        (case.get("context") or {}).get("fixtures") if isinstance(case.get("context"), dict) else ()
    )
    for fixture_id in ids or ():
        fixture = fixtures.get(fixture_id)
        if not isinstance(fixture, dict) or fixture.get("kind") != "conversation":
            continue
        data = fixture.get("data")
        turns = data.get("turns") or data.get("messages") if isinstance(data, dict) else data
        for turn in turns or ():
            if isinstance(turn, dict) and turn.get("role") in ("user", "assistant", "system"):
                history.append((str(turn["role"]), _as_text(turn.get("content", ""))))
    return history


def _tool_ids(case: Mapping[str, Any]) -> list[str]:
    ids: list[str] = []
    for value in (case.get("available_tools"), (case.get("environment") or {}).get("tools")):
        if isinstance(value, list):
            ids += [v for v in value if isinstance(v, str) and v not in ids]
    return ids


def _tools(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> tuple[ToolCard, ...]:
    cards = []
    for tool_id in _tool_ids(case):
        fixture = fixtures.get(tool_id)
        data = fixture.get("data") if isinstance(fixture, dict) else None
        if not isinstance(data, dict):
            cards.append(ToolCard(tool_id, "", {"type": "object"}))
            continue
        description = data.get("description") or (fixture or {}).get("description") or ""
        params = data.get("parameters")
        cards.append(
            ToolCard(
                str(data.get("name") or tool_id),
                str(description),
                params if isinstance(params, dict) else {"type": "object"},
            )
        )
    return tuple(cards)


def _expected_tools(case: Mapping[str, Any]) -> tuple[str, ...]:
    calls = case.get("expected_calls")
    if isinstance(calls, dict) and isinstance(calls.get("calls"), list):
        return tuple(str(c.get("tool")) for c in calls["calls"] if isinstance(c, dict))
    return _texts(case.get("expected_tool_sequence")) + _texts(case.get("required_tools"))


def _environment(case: Mapping[str, Any], tools: tuple[ToolCard, ...]) -> tuple[str, ...]:
    env = mapping(case.get("environment"))
    found = []
    if case.get("state") or case.get("initial_state"):
        found.append("state")
    if tools:
        found.append("tool behaviour")
    if env.get("faults"):
        found.append("tool faults")
    if env.get("permissions"):
        found.append("permissions")
    if env.get("knowledge_base") or case.get("environment_requirements"):
        found.append("retrieval corpus")
    if case.get("final_state_check"):
        found.append("final-state checks")
    if case.get("side_effect_policy"):
        found.append("side-effect policies")
    if case.get("trace_requirement"):
        found.append("trace rules")
    return tuple(found)


def from_record(record: Mapping[str, Any]) -> ExportCase:
    """The export view of one resolved record ({"case": ..., "fixtures": ...})."""
    case: Mapping[str, Any] = record.get("case") or {}
    fixtures: Mapping[str, Any] = record.get("fixtures") or {}
    meta = mapping(case.get("metadata"))
    generation = case.get("generation_config")
    system = generation.get("system_prompt") if isinstance(generation, dict) else None
    turns: list[str] = []
    history = _conversation(case, fixtures)
    interaction = case.get("interaction")
    if isinstance(interaction, list) and interaction:
        for turn in interaction:
            if isinstance(turn, dict) and turn.get("role") == "user":
                turns.append(_as_text(turn.get("content", "")))
            elif (
                isinstance(turn, dict) and turn.get("role") in ("assistant", "system") and not turns
            ):
                history.append((str(turn["role"]), _as_text(turn.get("content", ""))))
    if not turns and "input" in case:
        turns.append(_as_text(case["input"]))
    context = mapping(case.get("context"))
    context = {k: v for k, v in context.items() if k != "fixtures"}
    tools = _tools(case, fixtures)
    constraints = case.get("constraints")
    constraints = constraints if isinstance(constraints, dict) else {}
    graders = (case.get("evaluator_config") or {}).get("graders") or []
    grader_types = {g.get("type") for g in graders if isinstance(g, dict)}
    rubric_ref = case.get("rubric")
    rubric = _fixture_data(fixtures, rubric_ref)
    if rubric is None and isinstance(rubric_ref, dict | list):
        rubric = {"dimensions": rubric_ref} if isinstance(rubric_ref, list) else rubric_ref
    roles = meta.get("dataset_role")
    reference = case.get("reference")
    return ExportCase(
        case_id=str(case.get("case_id", record.get("case_id", ""))),
        case_version=str(case.get("case_version", "")),
        dataset_id=str(record.get("dataset_id") or case.get("dataset_id", "")),
        dataset_version=str(record.get("dataset_version") or case.get("dataset_version", "")),
        system=system if isinstance(system, str) else None,
        history=tuple(history),
        user_turns=tuple(turns),
        context=context,
        tools=tools,
        expected_behavior=_texts(case.get("expected_behavior")),
        negative_behavior=_texts(case.get("negative_behavior")),
        reference=_as_text(reference) if reference is not None else None,
        must_include=_texts(constraints.get("must_include")),
        must_not_include=_texts(constraints.get("must_not_include")),
        expects_json=bool(constraints.get("format") == "json" or "json_schema" in grader_types),
        expected_tools=_expected_tools(case),
        forbidden_tools=_texts(case.get("forbidden_tools")),
        rubric=rubric if isinstance(rubric, dict) else None,
        rubric_id=rubric_ref if isinstance(rubric_ref, str) else None,
        risk_level=case.get("risk_level") if isinstance(case.get("risk_level"), str) else None,
        case_types=_texts(case.get("case_types")),
        tags=_texts(meta.get("tags")),
        roles=_texts(roles),
        scenario=case.get("scenario") if isinstance(case.get("scenario"), str) else None,
        source=case.get("source") if isinstance(case.get("source"), str) else None,
        environment=_environment(case, tools),
    )


def _strings(value: Any) -> tuple[str, ...]:
    return _texts(list(value) if isinstance(value, tuple) else value)


def from_task(task: Task) -> ExportCase:
    """The export view of a built task: AgentView, JudgeSpec and meta kept apart."""
    agent, env, judge, meta = task.agent, task.env, task.judge, task.meta
    text = mapping(dict(judge.text))
    constraints = mapping(text.get("constraints"))
    expected: list[str] = []
    if judge.expected_calls is not None and judge.expected_calls.any_of:
        expected = [c.tool for c in judge.expected_calls.any_of[0].calls]
    expected += [t for t in judge.required_tools if t not in expected]
    environment = []
    for present, what in (
        (bool(env.initial_state), "state"),
        (bool(env.tools), "tool behaviour"),
        (bool(env.faults), "tool faults"),
        (bool(env.permissions), "permissions"),
        (bool(env.corpora), "retrieval corpus"),
        (judge.final_state_check is not None, "final-state checks"),
        (bool(judge.side_effect_policies), "side-effect policies"),
        (bool(judge.trace_rules), "trace rules"),
    ):
        if present:
            environment.append(what)
    reference = text.get("reference")
    grader_types = {g.type for g in judge.graders}
    rubric = judge.rubric
    return ExportCase(
        case_id=task.case_id,
        case_version=task.case_version,
        dataset_id=task.dataset_id,
        dataset_version=str(meta.get("dataset_version", "")),
        system=agent.system,
        history=tuple((t.role, t.content) for t in agent.history),
        user_turns=agent.user_turns,
        context=dict(agent.context),
        tools=agent.tools,
        expected_behavior=_strings(text.get("expected_behavior")),
        negative_behavior=_strings(text.get("negative_behavior")),
        reference=_as_text(reference) if reference is not None else None,
        must_include=_strings(text.get("must_include") or constraints.get("must_include")),
        must_not_include=_strings(
            text.get("must_not_include") or constraints.get("must_not_include")
        ),
        expects_json=constraints.get("format") == "json" or "json_schema" in grader_types,
        expected_tools=tuple(expected),
        forbidden_tools=judge.forbidden_tools,
        rubric=dict(rubric.data) if rubric is not None else None,
        rubric_id=rubric.id if rubric is not None else None,
        risk_level=judge.risk_level or None,
        case_types=judge.case_types,
        tags=_strings(meta.get("tags")),
        roles=_strings(meta.get("dataset_role")),
        scenario=meta.get("scenario") if isinstance(meta.get("scenario"), str) else None,
        source=meta.get("source") if isinstance(meta.get("source"), str) else None,
        environment=tuple(environment),
    )
