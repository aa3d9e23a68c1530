"""What an export reads of a case: the agent-visible part, the answer key, and labels.

Built from the case's :class:`~evalcase.contract.task.Task` (``from_task``): the
agent part comes from its AgentView only, the answer key from its JudgeSpec only, labels
from its meta. An export writes the agent part where the target tool feeds the model,
the answer key where it grades, and never mixes the two where the format allows
keeping them apart.

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
    fixtures: tuple[str, ...] = ()  # fixture IDs the case resolved (its context references)

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
        fixtures=tuple(sorted(task.fixture_versions)),
    )
