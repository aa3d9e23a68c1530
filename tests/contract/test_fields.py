"""Every field of every schema is classified exactly once (agent, environment, judge,
governance, identity), and a new field without a class fails this test."""

from __future__ import annotations

import copy
import json
from typing import Any

from evalcase.contract.fields import (
    CASE_FIELDS,
    CLASSES,
    FIXTURE_FIELDS,
    MANIFEST_FIELDS,
    SPLIT_FIELDS,
)
from tests.helpers import REPO_ROOT

CASE_SCHEMAS = ("case", "llm", "rag", "tool", "agent", "business")


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (REPO_ROOT / "schemas" / f"{name}.schema.json").read_text("utf-8")
    )
    return data


def case_schema_fields(schemas: dict[str, dict[str, Any]]) -> set[str]:
    """Top-level case fields of every case schema; split fields by sub-field."""
    out: set[str] = set()
    for schema in schemas.values():
        for name, body in schema.get("properties", {}).items():
            if name in SPLIT_FIELDS:
                out |= {f"{name}.{sub}" for sub in body.get("properties", {})}
            else:
                out.add(name)
    return out


def unclassified(fields: set[str], table: dict[str, str]) -> list[str]:
    return sorted(f for f in fields if table.get(f) not in CLASSES)


def test_every_case_field_is_classified_exactly_once() -> None:
    schemas = {name: load(name) for name in CASE_SCHEMAS}
    fields = case_schema_fields(schemas)
    assert len(fields) >= 50
    assert unclassified(fields, CASE_FIELDS) == []
    # and the table names no field the schemas do not have (a stale class)
    assert sorted(set(CASE_FIELDS) - fields) == []


def test_fixture_and_manifest_fields_are_classified() -> None:
    assert unclassified(set(load("fixture")["properties"]), FIXTURE_FIELDS) == []
    assert unclassified(set(load("dataset")["properties"]), MANIFEST_FIELDS) == []
    assert set(FIXTURE_FIELDS) == set(load("fixture")["properties"])
    assert set(MANIFEST_FIELDS) == set(load("dataset")["properties"])


def test_a_new_unclassified_field_is_caught() -> None:
    schemas = {name: copy.deepcopy(load(name)) for name in CASE_SCHEMAS}
    schemas["agent"]["properties"]["hint_for_agent"] = {"description": "new", "type": "string"}
    schemas["case"]["properties"]["environment"]["properties"]["secret_seed"] = {
        "description": "new"
    }
    assert unclassified(case_schema_fields(schemas), CASE_FIELDS) == [
        "environment.secret_seed",
        "hint_for_agent",
    ]


def test_the_answer_key_and_environment_are_never_agent_fields() -> None:
    for name in (
        "expected_calls",
        "expected_args",
        "final_state_check",
        "side_effect_policy",
        "case_types",
        "rubric",
    ):
        assert CASE_FIELDS[name] == "judge", name
    for name in ("environment.faults", "environment.permissions", "state", "initial_state"):
        assert CASE_FIELDS[name] == "environment", name
