"""Grader options read into a typed options value per grader (``RegexOptions``,
``NoPromiseOptions``): an option of the wrong kind is the grader's ``needs`` answer, so
lint's EC320 and the grade's error say the same words, instead of a pattern made of a
Python repr that grades by chance."""

from __future__ import annotations

from typing import Any

import pytest

from evalcase.grade.context import GradeContext
from evalcase.grade.engine import grade_attempt
from evalcase.grade.graders import needs
from evalcase.grade.spec import judge_spec_from_case
from tests.grade.attempts import attempt


def _spec(**grader: Any) -> Any:
    return judge_spec_from_case({"case_id": "c1", "evaluator_config": {"graders": [grader]}})


@pytest.mark.parametrize(
    ("grader", "said"),
    [
        ({"type": "regex", "must_match": [{"order": 1}]},
         "grader options: must_match[0]: must be a string, not dict"),
        ({"type": "regex", "must_not_match": ["ok", ["x"]]},
         "grader options: must_not_match[1]: must be a string, not list"),
        ({"type": "no_promise", "patterns": [["保证"]]},
         "grader options: patterns[0]: must be a string, not list"),
    ],
)  # fmt: skip
def test_an_option_of_the_wrong_kind_is_named(grader: dict[str, Any], said: str) -> None:
    spec = _spec(**grader)
    assert needs(grader["type"], spec) == said
    result = grade_attempt(spec, attempt("x"), GradeContext())
    graded = next(r for r in result.results if r.grader == grader["type"])
    assert (graded.grade.verdict, graded.grade.reason) == ("error", said)


def test_typed_options_grade_as_before() -> None:
    spec = _spec(type="regex", pattern="ORDER_[0-9]{4}", must_not_match="[0-9]{11}")
    assert grade_attempt(spec, attempt("订单 ORDER_6001"), GradeContext()).verdict == "pass"
    spec = _spec(type="no_promise", preset="refund", patterns=["包您满意"])
    assert grade_attempt(spec, attempt("包您满意"), GradeContext()).verdict == "fail"
    graders = {"graders": [{"type": "regex"}]}
    empty = judge_spec_from_case({"case_id": "c1", "regex": "", "evaluator_config": graders})
    assert needs("regex", empty) is not None


def test_a_recall_threshold_that_is_not_a_number_is_named() -> None:
    """``RecallOptions``: a threshold of the wrong kind is the grader's needs answer, not a
    ValueError while grading."""
    spec = judge_spec_from_case({
        "case_id": "c1", "gold_evidence": [{"doc_id": "d", "passage_id": "p1"}],
        "evaluator_config": {"graders": [{"type": "evidence_recall_at_k", "threshold": "high"}]},
    })  # fmt: skip
    said = "grader options: threshold: must be a number, not 'high'"
    assert needs("evidence_recall_at_k", spec) == said
    result = grade_attempt(spec, attempt("x"), GradeContext())
    graded = next(r for r in result.results if r.grader == "evidence_recall_at_k")
    assert (graded.grade.verdict, graded.grade.reason) == ("error", said)


def test_an_exact_match_flag_that_is_not_a_boolean_is_named() -> None:
    """``ExactOptions``: ``ignore_case: "no"`` was truthy, so it ignored case; now it is
    the grader's needs answer."""
    spec = judge_spec_from_case({
        "case_id": "c1", "reference": "Refund",
        "evaluator_config": {"graders": [{"type": "exact_match", "ignore_case": "no"}]},
    })  # fmt: skip
    said = "grader options: ignore_case: must be true or false, not 'no'"
    assert needs("exact_match", spec) == said
    result = grade_attempt(spec, attempt("refund"), GradeContext())
    graded = next(r for r in result.results if r.grader == "exact_match")
    assert (graded.grade.verdict, graded.grade.reason) == ("error", said)
    flags = {"type": "exact_match", "ignore_case": True, "ignore_whitespace": True}
    spec = judge_spec_from_case(
        {"case_id": "c1", "reference": "Re fund", "evaluator_config": {"graders": [flags]}}
    )
    assert grade_attempt(spec, attempt("refund"), GradeContext()).verdict == "pass"
