"""A small airline-like case repository for the gold-state tests: a state fixture, two
tools with state changes (one guarded by a permission), and cases whose final-state check
is ``from_expected_calls``. The agent is ``py:tests.run.agents:scripted``, steered by the
case's own ``context.script`` (the agent's view), never by the answer key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.helpers import commit_all, init_repo

TOOLS: dict[str, dict[str, Any]] = {
    "cancel_reservation": {
        "name": "cancel_reservation",
        "side_effect": True,
        "parameters": {
            "type": "object",
            "properties": {"reservation_id": {"type": "string"}},
            "required": ["reservation_id"],
            "additionalProperties": False,
        },
        "responses": [
            {
                "when": "args.reservation_id in reservations",
                "result": {"status": "cancelled"},
                "state_change": [
                    {"set": "reservations.{args.reservation_id}.status", "value": "cancelled"}
                ],
            },
            {"error": {"code": "not_found", "message": "no such reservation"}},
        ],
    },
    "add_bags": {
        "name": "add_bags",
        "side_effect": True,
        "parameters": {
            "type": "object",
            "properties": {
                "reservation_id": {"type": "string"},
                "bags": {"type": "integer", "minimum": 1},
            },
            "required": ["reservation_id", "bags"],
            "additionalProperties": False,
        },
        "responses": [
            {
                "when": "args.reservation_id in reservations",
                "result": {"ok": True},
                "state_change": [
                    {
                        "increment": "reservations.{args.reservation_id}.bags",
                        "by": 1,
                    }
                ],
            }
        ],
    },
}

STATE = {
    "reservations": {
        "EHGLP3": {"status": "active", "bags": 0, "user": "mia_li_3668"},
        "Q69X3R": {"status": "active", "bags": 1, "user": "mia_li_3668"},
    },
    "users": {"mia_li_3668": {"name": "Mia Li"}},
}


def fixture(fixture_id: str, kind: str, data: Any) -> dict[str, Any]:
    return {
        "fixture_id": fixture_id,
        "fixture_version": "v1",
        "kind": kind,
        "description": f"{fixture_id} for the gold-state tests",
        "source": "synthetic",
        "desensitized": True,
        "data": data,
    }


def case(case_id: str, script: list[Any], **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "case_id": case_id,
        "case_version": "v1",
        "dataset_id": "airline_set",
        "dataset_version": "v1",
        "title": case_id,
        "scenario": "cancellation",
        "user_task": "cancel a reservation",
        "ability_tags": ["tool"],
        "risk_level": "P2",
        "difficulty": "Medium",
        "source": "synthetic",
        "case_types": ["tool"],
        "input": "Please cancel reservation EHGLP3.",
        "user_goal": "the reservation is cancelled",
        "state": {"fixtures": ["airline_db"]},
        "context": {"script": [script]},
        "available_tools": ["cancel_reservation", "add_bags"],
        "expected_calls": {
            "order": "in_order",
            "calls": [{"tool": "cancel_reservation", "args": {"reservation_id": "EHGLP3"}}],
        },
        "final_state_check": {"type": "state_match", "from_expected_calls": True},
        "evaluator_config": {"graders": [{"type": "state_match"}]},
        "metadata": {"dataset_role": "iteration", "tags": ["airline"], "owner": "ai_eval_team"},
    }
    body.update(fields)
    return {k: v for k, v in body.items() if v is not None}  # None: the field is left out


def write_repo(
    root: Path, cases: list[dict[str, Any]], tools: dict[str, dict[str, Any]] | None = None
) -> Path:
    """A committed repository holding ``cases`` in dataset airline_set (``tools``: the
    tool fixtures' data, by name; default TOOLS)."""
    (root / "fixtures" / "tool").mkdir(parents=True)
    (root / "fixtures" / "state").mkdir(parents=True)
    cases_dir = root / "datasets" / "airline_set" / "cases"
    cases_dir.mkdir(parents=True)
    (root / "evalcase.toml").write_text("[run]\nconcurrency = 1\ntimeout_s = 60\n", "utf-8")
    (root / ".gitignore").write_text("/outputs/\n/reports/\n", "utf-8")
    for name, data in (tools or TOOLS).items():
        dump(root / "fixtures" / "tool" / f"{name}.yaml", fixture(name, "tool", data))
    dump(root / "fixtures" / "state" / "airline_db.yaml", fixture("airline_db", "state", STATE))
    dump(
        root / "datasets" / "airline_set" / "dataset.yaml",
        {
            "dataset_id": "airline_set",
            "dataset_version": "v1",
            "title": "airline gold-state cases",
            "description": "from_expected_calls tests",
            "owner": "ai_eval_team",
        },
    )
    for body in cases:
        dump(cases_dir / f"{body['case_id']}.yaml", body)
    init_repo(root)
    commit_all(root, "airline cases")
    return root


def dump(path: Path, value: Any) -> None:
    path.write_text(yaml.safe_dump(value, allow_unicode=True, sort_keys=False), "utf-8")
