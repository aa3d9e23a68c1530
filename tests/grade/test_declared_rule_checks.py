"""Declared rule checks run (issue 42.4): a case listing ``evaluator_config.rule_checks``
beside a written ``graders`` list without ``trace_rule`` gets the hard ``trace_rule``
grader added, so a run really grades the checks (the agent calling a forbidden tool
fails). Lint accepting such a case is tests/rules/samples/EC327/good/'s."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalcase.contract import graders as graders_of
from evalcase.grade.spec import grader_configs, unrun_rule_checks
from evalcase.index.dataset import load_dataset
from tests.grade.gold_repo import case, write_repo
from tests.helpers import REPO_ROOT, invoke

AGENT = "py:tests.run.agents:scripted"
CANCEL = ["cancel_reservation", {"reservation_id": "EHGLP3"}]
BAGS = ["add_bags", {"reservation_id": "EHGLP3", "bags": 1}]
# Only the cancellation is compared, so state_match passes whatever the bags: the verdict
# is the rule check's.
STATUS_ONLY = {
    "type": "state_match",
    "from_expected_calls": True,
    "paths": ["reservations.EHGLP3.status"],
}
EVALUATOR = {
    "rule_checks": ["no_forbidden_tool"],
    "graders": [{"type": "tool_policy", "hard": False}, {"type": "state_match"}],
    "pass_threshold": 0.5,
}


def _case(case_id: str, script: list[Any]) -> dict[str, Any]:
    return case(
        case_id,
        script,
        forbidden_tools=["add_bags"],
        final_state_check=STATUS_ONLY,
        evaluator_config=EVALUATOR,
    )


def test_a_written_list_without_trace_rule_gets_it_added_hard_and_weightless() -> None:
    evaluator = {"rule_checks": ["no_forbidden_tool"], "graders": [{"type": "tool_policy"}]}
    assert graders_of.implied(evaluator) == (("rule_checks", "trace_rule"),)
    assert graders_of.configured(evaluator) == [
        {"type": "tool_policy"},
        {"type": "trace_rule", "weight": 0.0},
    ]
    # A list that has its trace_rule, soft or not, runs as written.
    written = {"rule_checks": ["x"], "graders": [{"type": "trace_rule", "hard": False}]}
    assert graders_of.implied(written) == ()
    assert graders_of.configured(written) == [{"type": "trace_rule", "hard": False}]


@pytest.mark.slow
def test_a_run_grades_the_declared_checks_beside_a_written_graders_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = write_repo(
        tmp_path / "repo",
        [
            _case("airline_rules_clean_001", [CANCEL]),
            _case("airline_rules_bags_002", [CANCEL, BAGS]),
        ],
    )
    [task, _] = load_dataset(repo, "airline_set").tasks
    [trace_rule] = [c for c in grader_configs(task.judge) if c.type == "trace_rule"]
    assert (trace_rule.hard, trace_rule.weight) == (True, 0.0)
    assert unrun_rule_checks(task.judge) == ()

    monkeypatch.setenv("PYTHONPATH", str(REPO_ROOT))
    proc = invoke("run", "airline_set", "--agent", AGENT, "--progress", "none", cwd=repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # no gates: the run completed
    [found] = (repo / "reports").glob("*/*/grades.jsonl")
    lines = [json.loads(x) for x in found.read_text("utf-8").splitlines()]
    by = {(ln["case_id"], ln["grader"]): ln for ln in lines}
    assert not [ln for ln in lines if ln["grader"] == "(rule_checks)"]
    clean = by[("airline_rules_clean_001", "trace_rule")]
    assert (clean["verdict"], clean["hard"], clean["weight"]) == ("pass", True, 0.0)
    bags = by[("airline_rules_bags_002", "trace_rule")]
    assert bags["verdict"] == "fail"
    assert "no_forbidden_tool: forbidden tool add_bags called" in bags["reason"]
    assert by[("airline_rules_bags_002", "state_match")]["verdict"] == "pass"
    report = json.loads((found.parent / "report.json").read_text("utf-8"))
    verdicts = {a["case_id"]: a["verdict"] for a in report["attempts"]}
    assert verdicts == {"airline_rules_clean_001": "pass", "airline_rules_bags_002": "fail"}


def _grade(evaluator: dict[str, Any], calls: list[str]) -> Any:
    from evalcase.grade.context import GradeContext
    from evalcase.grade.engine import grade_attempt
    from evalcase.grade.spec import judge_spec_from_case

    spec = judge_spec_from_case(
        {
            "case_id": "c",
            "case_version": "v1",
            "forbidden_tools": ["add_bags"],
            "must_include": ["done"],
            "evaluator_config": evaluator,
        }
    )
    attempt = {
        "case_id": "c",
        "status": "completed",
        "calls": [{"tool": t, "args": {}, "step": i + 1} for i, t in enumerate(calls)],
        "output": "done",
    }
    return grade_attempt(spec, attempt, GradeContext())  # type: ignore[arg-type]


def test_the_added_trace_rule_decides_without_moving_the_written_weights_score() -> None:
    evaluator = {"rule_checks": ["no_forbidden_tool"], "graders": [{"type": "must_include"}]}
    clean = _grade(evaluator, ["cancel_reservation"])
    assert (clean.verdict, clean.score) == ("pass", 1.0)
    forbidden = _grade(evaluator, ["add_bags"])
    assert forbidden.verdict == "fail"
    assert [r.grader for r in forbidden.results] == ["must_include", "trace_rule"]


def test_soft_written_graders_still_decide_nothing_beside_the_added_trace_rule() -> None:
    # EC322's case: all written graders soft, no pass_threshold. The added trace_rule
    # (hard) does not make the soft ones count: the attempt is an error, never a pass.
    evaluator = {
        "rule_checks": ["no_forbidden_tool"],
        "graders": [{"type": "must_include", "hard": False}],
    }
    result = _grade(evaluator, ["cancel_reservation"])
    assert result.verdict == "error"
    assert "(none)" in [r.grader for r in result.results]


def test_rule_checks_beside_an_empty_graders_list_run_with_weight_one() -> None:
    evaluator = {"rule_checks": ["no_forbidden_tool"], "graders": []}
    assert graders_of.configured(evaluator) == [{"type": "trace_rule"}]
    result = _grade(evaluator, ["cancel_reservation"])
    assert (result.verdict, result.score) == ("pass", 1.0)
