"""``judge_spec_from_case`` reads a case document's judge fields into types
(``CaseJudgeFields``, evalcase.grade.spec): a field of the wrong kind is a ValueError
naming it, never an AttributeError from deep inside."""

from __future__ import annotations

import pytest

from evalcase.grade.spec import judge_spec_from_case


def test_the_judge_fields_of_a_case() -> None:
    spec = judge_spec_from_case({
        "case_id": "c1", "risk_level": "high", "case_types": "refund",
        "forbidden_tools": ["delete_account"], "environment": {"effective_at": "2026-01-01"},
        "evaluator_config": {"graders": [{"type": "must_include"}], "rule_checks": ["r1"],
                             "judge": {"instructions": "be strict"}, "pass_k": 3},
        "trace_requirement": {"rules": ["size(calls) > 0", 7]},
        "rubric": {"fixture_id": "rb", "fixture_version": "v2", "data": {"dimensions": []}},
    })  # fmt: skip
    assert (spec.case_id, spec.case_version, spec.risk_level) == ("c1", "v1", "high")
    assert (spec.case_types, spec.forbidden_tools) == (("refund",), ("delete_account",))
    assert spec.rag["effective_at"] == "2026-01-01"
    assert (spec.rule_checks, spec.judge, spec.pass_k) == (
        ("r1",),
        {"instructions": "be strict"},
        3,
    )
    assert spec.trace_rules == ("size(calls) > 0",)
    assert spec.rubric is not None
    assert (spec.rubric.id, spec.rubric.version, spec.rubric.data) == (
        "rb",
        "v2",
        {"dimensions": []},
    )


@pytest.mark.parametrize(
    ("case", "said"),
    [
        ({"evaluator_config": ["must_include"]},
         "case: evaluator_config: must be an object, not list"),
        ({"environment": "prod"}, "case: environment: must be an object, not str"),
        ({"trace_requirement": ["r"]}, "case: trace_requirement: must be an object, not list"),
        ({"evaluator_config": {"judge": "strict"}},
         "evaluator_config: judge: must be an object, not str"),
    ],
)  # fmt: skip
def test_a_judge_field_of_the_wrong_kind_is_named(case: dict[str, object], said: str) -> None:
    with pytest.raises(ValueError) as caught:
        judge_spec_from_case(case)
    assert str(caught.value) == said
