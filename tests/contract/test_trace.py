"""The trace vocabulary lint checks required_fields against is what the runner records."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from evalcase.contract.trace import EVENT_TYPES, TRACE_FIELDS

RUN = Path(__file__).resolve().parents[2] / "tools" / "evalcase" / "run"


def recorded_event_types() -> set[str]:
    """Every literal event type the runner's code passes to ``Recorder.event``."""
    found: set[str] = set()
    for path in RUN.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "event"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                found.add(node.args[0].value)
    return found


def test_event_types_are_those_the_runner_records() -> None:
    recorded = recorded_event_types()
    assert recorded, "the scan found no Recorder.event call"
    # history turns are recorded under their role (system / user / assistant)
    assert recorded | {"system"} == EVENT_TYPES


def test_every_trace_field_points_at_something_recorded() -> None:
    for name, where in TRACE_FIELDS.items():
        types = set(re.findall(r"\b([a-z_]+)\b(?= /|:| and|$)", where.split("events of type")[-1]))
        if "events of type" in where:
            assert types & EVENT_TYPES, f"{name}: {where}"
