"""Case types make their fields required; they do not own them (issue 42.5): a tool case
with an agent case's ``initial_state`` and ``final_state_check`` lints without EC102 and
runs with them, the runner starting from that state and state_match checking the end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.grade.gold_repo import case, write_repo
from tests.helpers import REPO_ROOT, invoke

AGENT = "py:tests.run.agents:scripted"
CANCEL = ["cancel_reservation", {"reservation_id": "EHGLP3"}]


@pytest.mark.slow
def test_a_tool_case_runs_with_initial_state_and_final_state_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = case(
        "airline_tool_state_001",
        [CANCEL],
        state=None,
        initial_state={"fixtures": ["airline_db"]},
        final_state_check={
            "type": "state_match",
            "expected": {"reservations.EHGLP3.status": "cancelled"},
            "unchanged": ["users"],
        },
    )
    assert body["case_types"] == ["tool"] and "state" not in body
    repo = write_repo(tmp_path / "repo", [body])
    lint = invoke("lint", "--format", "json", cwd=repo)
    found = json.loads(lint.stdout)
    codes = {(f["code"], f["message"]) for f in found}
    assert not [c for c in codes if c[0] == "EC102"], codes

    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    proc = invoke("run", "airline_set", "--agent", AGENT, "--progress", "none", cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [attempts] = (repo / "outputs").glob("*/*/attempts.jsonl")
    [record] = [json.loads(x) for x in attempts.read_text("utf-8").splitlines()]
    assert record["error"] is None
    assert record["initial_state_digest"]  # the attempt started from a state
    assert record["state_diff"] == [
        {
            "path": "reservations.EHGLP3.status",
            "before": "active",
            "after": "cancelled",
            "op": "set",
        }
    ]
    [grades] = (repo / "reports").glob("*/*/grades.jsonl")
    lines = [json.loads(x) for x in grades.read_text("utf-8").splitlines()]
    [state] = [ln for ln in lines if ln["grader"] == "state_match"]
    assert state["verdict"] == "pass", state
