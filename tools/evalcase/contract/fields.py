"""The split of a case into execution, judging and governance fields (seed 000 12.3.1).

The runner hands an agent only the execution half; graders read the judging half;
reports and governance read the rest. Versioning uses the same split: a change to
execution or judging fields is a content change that needs a case_version bump.
"""

from __future__ import annotations

from typing import Any

IDENTITY_FIELDS = frozenset({"case_id", "case_version", "dataset_id", "dataset_version"})

EXECUTION_FIELDS = frozenset(
    {
        "case_types",
        "input",
        "context",
        "environment",
        # tool
        "user_goal",
        "state",
        "available_tools",
        "tool_schema",
        # agent
        "goal",
        "initial_state",
        "interaction",
        # rag
        "environment_requirements",
        "context_policy",
        # llm
        "generation_config",
        # business
        "business_scenario",
    }
)

JUDGING_FIELDS = frozenset(
    {
        "expected_behavior",
        "negative_behavior",
        "rubric",
        "evaluator_config",
        "risk_level",
        # llm
        "reference",
        "constraints",
        # rag
        "gold_evidence",
        "citation_requirement",
        "evaluation_metrics",
        # tool
        "expected_tool_sequence",
        "expected_args",
        "expected_result_usage",
        "forbidden_tools",
        "side_effect_policy",
        # agent
        "trace_requirement",
        "success_criteria",
        "failure_criteria",
        "safety_constraints",
        "final_state_check",
        # business
        "user_journey",
        "sop",
        "policy_constraints",
        "service_level",
        "business_success",
        "audit_requirement",
    }
)

REPORTING_FIELDS = frozenset(
    {"title", "scenario", "user_task", "ability_tags", "difficulty", "source", "metadata"}
)


def execution_view(case: dict[str, Any]) -> dict[str, Any]:
    """What an agent under test may see: identity plus execution fields, never the answer key."""
    return {
        k: v for k, v in case.items() if k in EXECUTION_FIELDS or k in ("case_id", "case_version")
    }


def judging_view(case: dict[str, Any]) -> dict[str, Any]:
    """What graders need: identity plus judging fields."""
    return {k: v for k, v in case.items() if k in JUDGING_FIELDS or k in IDENTITY_FIELDS}


def content_fields(case_keys: Any, governance_fields: Any) -> list[str]:
    """Fields whose change is a content change (needs a case_version bump)."""
    governance = set(governance_fields)
    return sorted(k for k in case_keys if k not in governance and k not in IDENTITY_FIELDS)
