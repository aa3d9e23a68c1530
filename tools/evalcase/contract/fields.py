"""Who may read each field of a case (seed 000 12.3.1), exactly one class per field:

- ``agent``: what the agent under test receives (through the AgentView);
- ``environment``: what only the simulated environment knows (state, tool behaviour,
  faults, permissions, corpora);
- ``judge``: the answer key graders read;
- ``governance``: reporting and review (title, tags, owner, usage rights...);
- ``identity``: IDs and version labels.

``environment`` mixes classes, so its sub-fields are classified one by one
(``environment.faults``...). A test walks every property of every schema and fails on a
field that is not classified here (tests/contract/test_fields.py), so a new field
cannot reach an agent by accident.

Versioning uses the same split: a change to anything but identity and the configured
governance fields is a content change that needs a case_version bump.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

Class = Literal["agent", "environment", "judge", "governance", "identity"]
CLASSES: tuple[Class, ...] = ("agent", "environment", "judge", "governance", "identity")

# Top-level case fields (every case-type schema) and the sub-fields of ``environment``.
CASE_FIELDS: dict[str, Class] = {
    # identity
    "case_id": "identity",
    "case_version": "identity",
    "dataset_id": "identity",
    "dataset_version": "identity",
    # governance / reporting
    "title": "governance",
    "scenario": "governance",
    "user_task": "governance",
    "ability_tags": "governance",
    "difficulty": "governance",
    "source": "governance",
    "metadata": "governance",
    "business_scenario": "governance",
    # what the agent receives
    "input": "agent",
    "context": "agent",
    "interaction": "agent",
    "generation_config": "agent",
    "prompt": "agent",
    "available_tools": "agent",
    "environment.tools": "agent",
    # what only the environment knows
    "state": "environment",
    "initial_state": "environment",
    "tool_schema": "environment",
    "environment_requirements": "environment",
    "environment.knowledge_base": "environment",
    "environment.effective_at": "environment",
    "environment.permissions": "environment",
    "environment.sandbox": "environment",
    "environment.faults": "environment",
    "user_simulator": "environment",
    # the answer key
    "case_types": "judge",
    "risk_level": "judge",
    "goal": "judge",
    "user_goal": "judge",
    "expected_behavior": "judge",
    "negative_behavior": "judge",
    "rubric": "judge",
    "evaluator_config": "judge",
    "reference": "judge",
    "constraints": "judge",
    "gold_evidence": "judge",
    "context_policy": "judge",
    "citation_requirement": "judge",
    "evaluation_metrics": "judge",
    "expected_tool_sequence": "judge",
    "expected_args": "judge",
    "expected_calls": "judge",
    "expected_result_usage": "judge",
    "forbidden_tools": "judge",
    "side_effect_policy": "judge",
    "trace_requirement": "judge",
    "success_criteria": "judge",
    "failure_criteria": "judge",
    "safety_constraints": "judge",
    "final_state_check": "judge",
    "user_journey": "judge",
    "sop": "judge",
    "policy_constraints": "judge",
    "service_level": "judge",
    "business_success": "judge",
    "audit_requirement": "judge",
    # what `evalcase audit` may expect (may_pass): the audit reads it, agents never do
    "audit": "judge",
}

# Fields of a fixture document and of a dataset manifest.
FIXTURE_FIELDS: dict[str, Class] = {
    "fixture_id": "identity",
    "fixture_version": "identity",
    "kind": "environment",
    "description": "governance",
    "source": "governance",
    "desensitized": "governance",
    "data": "environment",
}
MANIFEST_FIELDS: dict[str, Class] = {
    "dataset_id": "identity",
    "dataset_version": "identity",
    "title": "governance",
    "description": "governance",
    "owner": "governance",
    "agent": "governance",
    "prompts": "agent",
    "suites": "governance",
    "gates": "governance",
    "coverage": "governance",
}

# Case fields the schema describes by sub-field (each sub-field classified above).
SPLIT_FIELDS = frozenset({"environment"})

IDENTITY_FIELDS = frozenset(k for k, v in CASE_FIELDS.items() if v == "identity")


def fields_of(cls: Class) -> frozenset[str]:
    return frozenset(k for k, v in CASE_FIELDS.items() if v == cls)


def classify(name: str) -> Class | None:
    """The class of a case field (``environment.faults`` for sub-fields); None when the
    field is unknown (schemas reject it; the invariant test fails on it)."""
    return CASE_FIELDS.get(name)


def agent_part(case: dict[str, Any]) -> dict[str, Any]:
    """The agent-classified fields of a case, as written (what the AgentView is made of)."""
    out: dict[str, Any] = {}
    for key, value in case.items():
        if key in SPLIT_FIELDS and isinstance(value, dict):
            sub = {k: v for k, v in value.items() if CASE_FIELDS.get(f"{key}.{k}") == "agent"}
            if sub:
                out[key] = sub
        elif CASE_FIELDS.get(key) == "agent":
            out[key] = value
    return out


def part(case: dict[str, Any], cls: Class) -> dict[str, Any]:
    """The fields of one class, as written (sub-fields of split fields flattened to
    ``environment.faults`` keys)."""
    out: dict[str, Any] = {}
    for key, value in case.items():
        if key in SPLIT_FIELDS and isinstance(value, dict):
            for sub_key, sub_value in value.items():
                if CASE_FIELDS.get(f"{key}.{sub_key}") == cls:
                    out[f"{key}.{sub_key}"] = sub_value
        elif CASE_FIELDS.get(key) == cls:
            out[key] = value
    return out


def content_fields(case_keys: Iterable[str], governance_fields: Iterable[str]) -> list[str]:
    """Fields whose change is a content change (needs a case_version bump)."""
    governance = set(governance_fields)
    return sorted(k for k in case_keys if k not in governance and k not in IDENTITY_FIELDS)
