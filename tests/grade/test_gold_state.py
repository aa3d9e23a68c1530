"""final_state_check.from_expected_calls end to end: `evalcase run` with a real agent
process and the real environment, then grading against the state the case's expected
calls produce when the grader replays them (faults off, permissions on), once per case."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalcase.config import load_config
from evalcase.grade.context import GradeContext
from evalcase.grade.gold import GoldStates
from evalcase.grade.graders import load
from evalcase.grade.tasks import load_dataset
from evalcase.run.gold_replay import replay_expected
from tests.grade.gold_repo import case, write_repo
from tests.helpers import REPO_ROOT, invoke

AGENT = "py:tests.run.agents:scripted"
CANCEL = ["cancel_reservation", {"reservation_id": "EHGLP3"}]
WRONG = ["cancel_reservation", {"reservation_id": "Q69X3R"}]
BAGS = ["add_bags", {"reservation_id": "EHGLP3", "bags": 1}]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gold") / "repo"
    root.mkdir()
    return write_repo(
        root,
        [
            case("airline_cancel_right_001", [CANCEL]),
            case("airline_cancel_wrong_002", [WRONG]),
            # Only reservations are compared: a change elsewhere is not this check's.
            case(
                "airline_cancel_paths_003",
                [CANCEL, BAGS],
                final_state_check={
                    "type": "state_match",
                    "from_expected_calls": True,
                    "paths": ["reservations.Q69X3R", "users"],
                },
            ),
            # An injected timeout on the agent's call: the gold is still the unfaulted state.
            case(
                "airline_cancel_fault_004",
                [CANCEL],
                environment={"faults": [{"tool": "cancel_reservation", "kind": "timeout"}]},
            ),
            # A permission policy refusing the gold call: the gold cannot be computed.
            case(
                "airline_cancel_denied_005",
                [CANCEL],
                environment={
                    "permissions": {
                        "frozen": {
                            "tools": ["cancel_reservation"],
                            "condition": "false",
                            "error": {"code": "frozen", "message": "account frozen"},
                        }
                    }
                },
            ),
            # Two acceptable plans: each gives a gold state, either may match.
            case(
                "airline_cancel_either_006",
                [WRONG],
                expected_calls={
                    "any_of": [
                        {
                            "calls": [
                                {"tool": "cancel_reservation", "args": {"reservation_id": "EHGLP3"}}
                            ]
                        },
                        {
                            "calls": [
                                {"tool": "cancel_reservation", "args": {"reservation_id": "Q69X3R"}}
                            ]
                        },
                    ]
                },
            ),
        ],
    )


def _grades(repo: Path) -> dict[str, dict[str, Any]]:
    found = sorted((repo / "reports").glob("*/*/grades.jsonl"))
    assert found, list((repo / "reports").rglob("*"))
    lines = [json.loads(line) for line in found[-1].read_text("utf-8").splitlines()]
    return {ln["case_id"]: ln for ln in lines if ln["grader"] == "state_match"}


def test_the_gold_is_what_the_expected_calls_produce(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The test agents live in this checkout's tests/ (run_cli adds the package itself).
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    proc = invoke("run", "airline_set", "--agent", AGENT, cwd=repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the wrong agents fail
    grades = _grades(repo)
    right = grades["airline_cancel_right_001"]
    assert right["verdict"] == "pass", right
    assert "equals the expected calls'" in right["reason"]
    wrong = grades["airline_cancel_wrong_002"]
    assert wrong["verdict"] == "fail"
    assert "reservations.EHGLP3.status is active, gold cancelled" in wrong["reason"]
    assert "reservations.Q69X3R.status is cancelled, gold active" in wrong["reason"]
    assert wrong["evidence"][0]["path"] == "reservations.EHGLP3.status"
    assert grades["airline_cancel_paths_003"]["verdict"] == "pass"
    # The agent's call timed out (nothing changed); the gold is the unfaulted end state.
    faulted = grades["airline_cancel_fault_004"]
    assert faulted["verdict"] == "fail" and "gold cancelled" in faulted["reason"]
    denied = grades["airline_cancel_denied_005"]
    assert denied["verdict"] == "error"
    assert "refused by permission 'frozen'" in denied["reason"]
    either = grades["airline_cancel_either_006"]
    assert either["verdict"] == "pass" and either["reason"].startswith("plan 2:")
    # evalcase grade of the recorded run gives the same verdicts.
    run_id = next((repo / "outputs").glob("*/*")).name
    again = invoke("grade", run_id, cwd=repo)
    assert again.returncode == 1, again.stderr
    assert {k: v["verdict"] for k, v in _grades(repo).items()} == {
        k: v["verdict"] for k, v in grades.items()
    }


def test_the_gold_is_replayed_once_per_case_and_never_without_a_replay(repo: Path) -> None:
    dataset = load_dataset(load_config(repo), "airline_set", None)
    spec = dataset.cases["airline_cancel_wrong_002"].spec
    grader = load("state_match")
    gold = GoldStates(replay_expected)
    ctx = GradeContext(gold=gold)
    initial = {"reservations": {"EHGLP3": {"status": "active", "bags": 0}}}
    attempt = {"initial_state": initial, "final_state": {"reservations": {}}, "calls": []}
    for _ in range(3):
        assert grader.grade(spec, attempt, ctx).verdict == "fail"
    assert gold.replays == 1
    # The grader never takes a gold from the outputs: without a replay it cannot grade.
    lost = grader.grade(spec, {**attempt, "gold_state": attempt["final_state"]}, GradeContext())
    assert lost.verdict == "error" and "cannot replay" in lost.reason


def test_the_gold_replay_calls_a_handler_tool_through_the_configuration() -> None:
    """A gold call to a tool with a ``handler`` runs the function [run.handlers] registers
    (as the runner does), and a name nothing registers makes the gold an error."""
    from evalcase.contract.task import CallPlan, ExpectedCall
    from evalcase.run.gold_replay import configured
    from evalcase.run.spec import EnvSpec, ToolBehaviour

    tool = ToolBehaviour("reserve", True, {}, (), None, "reserve_stock", None)
    env = EnvSpec({"stock": {"O1": 2}}, {"reserve": tool}, (), (), (), (), None)
    plan = CallPlan(order="in_order", calls=(ExpectedCall("reserve", {"order_id": "O1"}),))
    run = {"handlers": {"reserve_stock": "tests.run.handlers:reserve"}}
    gold = configured(run)(env, plan)
    assert gold.state == {"stock": {"O1": 1}}, gold
    unregistered = configured({})(env, plan)
    assert unregistered.state is None and "reserve_stock" in str(unregistered)
