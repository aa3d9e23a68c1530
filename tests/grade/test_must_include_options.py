"""must_include's scope, ignore_case and ignore_punctuation, graded on real runs: the
agent is a real py: agent, its tool calls go through the real environment, and the
grader reads the recorded messages (tau2's communicate_info: "1628" said as "$1,628")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalcase.grade.graders.must_include import normalise, option_problems
from tests.grade.gold_repo import case, write_repo
from tests.helpers import REPO_ROOT, invoke

TALK = [
    [
        "Your refund is $1,628 on reservation ehg-lp3.",
        "add_bags",
        {"reservation_id": "EHGLP3", "bags": 1},
    ]
]


def _must(**options: Any) -> dict[str, Any]:
    return {"graders": [{"type": "must_include", "values": ["1628", "EHGLP3"], **options}]}


def _case(case_id: str, **options: Any) -> dict[str, Any]:
    return case(
        case_id,
        [],
        context={"talk": TALK, "final": "Anything else?"},
        final_state_check=None,
        expected_calls=None,
        evaluator_config=_must(**options),
    )


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("must") / "repo"
    root.mkdir()
    return write_repo(
        root,
        [
            _case(
                "airline_say_all_001",
                scope="assistant_messages",
                ignore_case=True,
                ignore_punctuation=True,
            ),
            _case("airline_say_final_002", ignore_case=True, ignore_punctuation=True),
            _case("airline_say_case_003", scope="assistant_messages", ignore_punctuation=True),
            _case("airline_say_plain_004", scope="assistant_messages"),
        ],
    )


def test_options_decide_what_counts_as_said(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    proc = invoke("run", "airline_set", "--agent", "py:tests.grade.agents:talker", cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # no gates: failures exit 0
    found = sorted((repo / "reports").glob("*/*/grades.jsonl"))
    lines = [json.loads(line) for line in found[-1].read_text("utf-8").splitlines()]
    grades = {ln["case_id"]: ln for ln in lines if ln["grader"] == "must_include"}
    assert grades["airline_say_all_001"]["verdict"] == "pass", grades["airline_say_all_001"]
    # The final answer said neither: the default scope looks nowhere else.
    assert grades["airline_say_final_002"]["reason"] == "missing: 1628, EHGLP3"
    # Case matters without ignore_case ("ehg-lp3" is not "EHGLP3"); the amount is found.
    assert grades["airline_say_case_003"]["reason"] == "missing: EHGLP3"
    assert grades["airline_say_plain_004"]["reason"] == "missing: 1628, EHGLP3"


def test_normalisation_and_misuse() -> None:
    flags = {"ignore_case": True, "ignore_punctuation": True}
    assert normalise("＄１，６２８ — EHG LP3!", **flags) == "＄1628ehglp3".replace("＄", "$")
    assert normalise("A-b", ignore_case=False, ignore_punctuation=False) == "A-b"
    problems = option_problems({"scope": "everything", "ignore_case": "yes",
                                "ignore_punctuation": True}, ["--", ["x", " . "]])  # fmt: skip
    assert [p[0] for p in problems] == ["scope", "ignore_case", "values", "values"]
