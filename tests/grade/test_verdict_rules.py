"""The attempt verdict rules of docs/grading.md, one test each: soft graders never pass an
attempt alone, a person's fail is never outweighed, a pending soft grader does not hold up
a decided verdict, and an explicit pass_threshold is followed."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from evalcase.grade.context import GradeContext, HumanVerdict
from evalcase.grade.engine import attempt_from_lines, grade_attempt, grade_lines
from evalcase.grade.spec import judge_spec_from_case
from tests.grade.attempts import attempt, call

CALLS = {"order": "in_order", "calls": [{"tool": "order_lookup", "args": {"order_id": "O1"}}]}
GOOD = [call(1, "order_lookup", {"order_id": "O1"})]
BAD = [call(1, "order_lookup", {"order_id": "O2"})]
RUBRIC = {"dimensions": [{"name": "polite", "scale": {"min": 1, "max": 5}, "weight": 1}]}


def case(*graders: dict[str, Any], **evaluator: Any) -> Any:
    return judge_spec_from_case(
        {
            "case_id": "sample_case_001",
            "case_version": "v1",
            "expected_calls": CALLS,
            "must_include": ["退款"],
            "rubric": RUBRIC,
            "evaluator_config": {"graders": list(graders), **evaluator},
        }
    )


def verdict(spec: Any, record: dict[str, Any], ctx: GradeContext | None = None) -> str:
    result = grade_attempt(spec, record, ctx or GradeContext())
    # the verdict can be recomputed from grades.jsonl alone, by the same rules
    threshold = (spec.raw.get("evaluator_config") or {}).get("pass_threshold")
    assert attempt_from_lines(grade_lines(result), threshold)[0] == result.verdict
    return result.verdict


def test_soft_graders_alone_never_pass_an_attempt() -> None:
    spec = case({"type": "tool_calls", "hard": False}, {"type": "must_include", "hard": False})
    # tool_calls fails, must_include passes: without a threshold nothing decides
    result = grade_attempt(spec, attempt("可以退款", calls=BAD), GradeContext())
    assert result.verdict == "error"
    assert any("pass_threshold" in r.grade.reason for r in result.results)
    assert verdict(spec, attempt("可以退款", calls=GOOD)) == "error"


def test_an_explicit_pass_threshold_decides_a_soft_case() -> None:
    graders = ({"type": "tool_calls", "hard": False, "weight": 0.7},
               {"type": "must_include", "hard": False, "weight": 0.3})  # fmt: skip
    spec = case(*graders, pass_threshold=0.8)
    assert verdict(spec, attempt("可以退款", calls=BAD)) == "fail"  # score 0.3
    assert verdict(spec, attempt("可以退款", calls=GOOD)) == "pass"  # score 1.0
    assert verdict(case(*graders, pass_threshold=0.6), attempt("好的", calls=GOOD)) == "pass"


def test_a_threshold_also_binds_a_case_with_hard_graders() -> None:
    spec = case(
        {"type": "tool_calls", "weight": 0.5},
        {"type": "must_include", "hard": False, "weight": 0.5},
        pass_threshold=0.9,
    )
    assert verdict(spec, attempt("好的", calls=GOOD)) == "fail"  # hard pass, score 0.5


def test_a_human_fail_is_never_outweighed() -> None:
    spec = case({"type": "tool_calls", "weight": 0.9}, {"type": "human", "hard": False,
                                                        "weight": 0.1})  # fmt: skip
    key = ("sample_case_001", "v1", 1)
    said_fail = GradeContext(human={key: HumanVerdict("fail", "王审核", "2026-07-08")})
    said_pass = GradeContext(human={key: HumanVerdict("pass", "王审核", "2026-07-08")})
    result = grade_attempt(spec, attempt(calls=GOOD), said_fail)
    assert (result.verdict, result.failure_class) == ("fail", "agent_capability")
    assert verdict(spec, attempt(calls=GOOD), said_pass) == "pass"


def test_a_pending_soft_grader_does_not_hold_up_a_decided_verdict() -> None:
    # llm_rubric is pending (no judge configured): an optional judged signal
    spec = case({"type": "tool_calls"}, {"type": "llm_rubric", "hard": False})
    assert verdict(spec, attempt(calls=GOOD)) == "pass"
    assert verdict(spec, attempt(calls=BAD)) == "fail"
    # a hard pending grader does hold it up
    hard = case({"type": "tool_calls"}, {"type": "llm_rubric"})
    assert verdict(hard, attempt(calls=GOOD)) == "pending"


def test_a_soft_grader_that_cannot_grade_is_an_error() -> None:
    spec = case({"type": "tool_calls"}, {"type": "regex", "hard": False})  # no patterns
    assert verdict(spec, attempt(calls=GOOD)) == "error"


def test_declared_rule_checks_run_beside_a_written_list_without_trace_rule() -> None:
    # no_refund_promise is listed and the written list has no trace_rule: the checks
    # imply it (hard, weight 0, issue 42.4), so the promise in the answer fails the attempt
    spec = case({"type": "tool_calls"}, rule_checks=["no_refund_promise"])
    promise = attempt("放心，保证今天到账", calls=GOOD)
    result = grade_attempt(spec, promise, GradeContext())
    assert (result.verdict, result.failure_class) == ("fail", "safety_policy")
    [added] = [r for r in result.results if r.grader == "trace_rule"]
    assert (added.hard, added.weight) == (True, 0.0)
    assert all(r.grader != "(rule_checks)" for r in result.results)
    clean = grade_attempt(spec, attempt("审核结果以短信通知为准", calls=GOOD), GradeContext())
    assert (clean.verdict, clean.score) == ("pass", 1.0)  # the written weights' score
    assert verdict(spec, promise) == "fail"
    # a hard grader's fail decides as before
    assert verdict(spec, attempt("审核结果以短信通知为准", calls=BAD)) == "fail"


def test_a_spec_whose_graders_leave_the_checks_out_is_an_error_never_skipped() -> None:
    # Not a case's (a case's always has its trace_rule): a judge view built otherwise.
    spec = case({"type": "tool_calls"}, rule_checks=["no_refund_promise", "no_forbidden_tool"])
    spec = replace(spec, graders=tuple(g for g in spec.graders if g.type != "trace_rule"))
    promise = attempt("放心，保证今天到账", calls=GOOD)
    result = grade_attempt(spec, promise, GradeContext())
    assert result.verdict == "error"
    assert result.failure_class == "grader_error"
    unrun = [r for r in result.results if r.grade.verdict == "error"]
    assert [r.grader for r in unrun] == ["(rule_checks)"]
    assert "no_refund_promise, no_forbidden_tool" in unrun[0].grade.reason
    assert "{type: trace_rule}" in unrun[0].grade.reason
    assert verdict(spec, promise) == "error"
    # a hard grader's fail still decides (rule 2 before rule 3)
    assert verdict(spec, attempt("放心，保证今天到账", calls=BAD)) == "fail"


def test_soft_written_graders_stay_undecided_beside_the_added_trace_rule() -> None:
    spec = case({"type": "tool_calls", "hard": False}, rule_checks=["no_refund_promise"])
    result = grade_attempt(spec, attempt(calls=GOOD), GradeContext())
    assert result.verdict == "error"
    assert any("pass_threshold" in r.grade.reason for r in result.results)
    assert "trace_rule" in [r.grader for r in result.results]


def implied_case(**evaluator: Any) -> Any:
    """A case in the contract's own form: rule checks and a judge, no graders list."""
    case = {"case_id": "sample_case_001", "case_version": "v1", "rubric": RUBRIC}
    return judge_spec_from_case({**case, "evaluator_config": evaluator})


def test_rule_checks_and_judge_imply_hard_graders_without_a_graders_list() -> None:
    spec = implied_case(rule_checks=["no_refund_promise"], judge={"rubric": "r"})
    result = grade_attempt(spec, attempt("放心，保证今天到账"), GradeContext())
    assert [r.grader for r in result.results] == ["trace_rule", "llm_rubric"]
    assert all(r.hard for r in result.results)
    # the implied trace_rule runs the check: the promise fails the attempt (a hard fail
    # decides although the judge, unconfigured here, is pending)
    assert (result.verdict, result.failure_class) == ("fail", "safety_policy")
    # without the promise the judge still has to judge: pending, never pass
    assert verdict(spec, attempt("审核结果以短信通知为准")) == "pending"
    # rule checks alone imply trace_rule alone, and it decides
    only = implied_case(rule_checks=["no_refund_promise"])
    assert verdict(only, attempt("审核结果以短信通知为准")) == "pass"
    assert verdict(only, attempt("放心，保证今天到账")) == "fail"


def test_a_written_graders_list_is_what_runs_with_the_declared_checks() -> None:
    # an empty written list runs the rule checks alone (their trace_rule, weight 1): the
    # judge section implies no llm_rubric beside a written list
    spec = implied_case(graders=[], rule_checks=["no_refund_promise"], judge={"rubric": "r"})
    result = grade_attempt(spec, attempt("审核结果以短信通知为准"), GradeContext())
    assert [(r.grader, r.weight) for r in result.results] == [("trace_rule", 1.0)]
    assert (result.verdict, result.score) == ("pass", 1.0)
    assert verdict(spec, attempt("放心，保证今天到账")) == "fail"


def test_a_grade_line_of_the_wrong_kind_recomputes_as_an_error() -> None:
    """grades.jsonl is data: its lines are read into ``GradeLine``; a line whose score is
    not a number makes the recomputed verdict an error, never a traceback or a pass."""
    good = {"grader": "tool_calls", "grader_version": "1", "weight": 1.0, "hard": True,
            "verdict": "pass", "score": 1.0, "reason": ""}  # fmt: skip
    assert attempt_from_lines([good]) == ("pass", 1.0)
    assert attempt_from_lines([good, {**good, "grader": "regex", "score": "high"}])[0] == "error"
    assert attempt_from_lines([{**good, "verdict": "great"}])[0] == "error"
