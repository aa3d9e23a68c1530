"""Grader and rule-check plugins: those that declare the typed attempt get an ``Observed``;
those written against the attempt as one JSON object keep getting it, for one release,
with a DeprecationWarning (evalcase.plugins.attempt_adapter)."""

from __future__ import annotations

import types
from collections.abc import Mapping
from typing import Any

import pytest

from evalcase import plugins
from evalcase.contract import records
from evalcase.contract.records import Observed
from evalcase.grade.context import GradeContext
from evalcase.grade.engine import grade_attempt
from evalcase.grade.model import Grade, failed, passed
from evalcase.grade.spec import judge_spec_from_case

STATE = {"orders": {"O1": {"status": "open"}}}
RECORD = {
    "case_id": "c", "case_version": "v1", "attempt": 1, "status": "completed", "output": "ok",
    "record_version": 3, "initial_state_digest": records.state_digest(STATE),
    "calls": [{"step": 1, "id": "a", "tool": "close", "args": {"order_id": "O1"},
               "valid": True, "result": None, "error": None,
               "changes": [{"op": "set", "path": "orders.O1.status", "after": "closed"}]}],
}  # fmt: skip


def _legacy_grade(spec: Any, attempt: Any, ctx: Any = None) -> Grade:
    assert isinstance(attempt, Mapping) and not isinstance(attempt, Observed)
    if attempt["initial_state"] == STATE and attempt["calls"][0]["tool"] == "close":
        return passed("the mapping view, as before")
    return failed("not the mapping view")


def _typed_grade(spec: Any, attempt: Observed, ctx: Any = None) -> Grade:
    final = attempt.final_state() or {}
    if attempt.calls[0].tool == "close" and final["orders"]["O1"]["status"] == "closed":
        return passed("the typed attempt")
    return failed("not typed")


def _plugin(monkeypatch: pytest.MonkeyPatch, found: dict[str, object]) -> None:
    def load_plugin(group: str, name: str) -> object:
        if name not in found:
            raise KeyError(name)
        return found[name]

    monkeypatch.setattr(plugins, "load_plugin", load_plugin)


def _grade(graders: list[dict[str, Any]], checks: list[str] | None = None) -> Any:
    evaluator: dict[str, Any] = {"graders": graders}
    if checks:
        evaluator["rule_checks"] = checks
    spec = judge_spec_from_case({"case_id": "c", "evaluator_config": evaluator})
    return grade_attempt(spec, records.observe(RECORD, STATE), GradeContext())


def test_a_plugin_written_against_the_mapping_still_gets_it_with_a_deprecation_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    module = types.ModuleType("acme_graders")
    module.grade = _legacy_grade  # type: ignore[attr-defined]
    _plugin(monkeypatch, {"acme_total": module})
    with pytest.warns(DeprecationWarning, match="ATTEMPT_VIEW"):
        result = _grade([{"type": "acme_total"}])
    (graded,) = [r for r in result.results if r.grader == "acme_total"]
    assert graded.grade.verdict == "pass", graded.grade.reason


@pytest.mark.parametrize("declared", ["flag", "annotation"])
def test_a_plugin_that_declares_the_typed_attempt_gets_observed(
    monkeypatch: pytest.MonkeyPatch, recwarn: pytest.WarningsRecorder, declared: str
) -> None:
    module = types.ModuleType("acme_graders")
    module.grade = _typed_grade  # type: ignore[attr-defined]
    if declared == "flag":
        module.ATTEMPT_VIEW = "observed"  # type: ignore[attr-defined]
    _plugin(monkeypatch, {"acme_total": module})
    result = _grade([{"type": "acme_total"}])
    (graded,) = [r for r in result.results if r.grader == "acme_total"]
    assert graded.grade.verdict == "pass", graded.grade.reason
    assert not [w for w in recwarn if issubclass(w.category, DeprecationWarning)]


def test_a_rule_check_plugin_gets_the_view_it_was_written_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def legacy_check(spec: Any, attempt: Any) -> Grade:
        return _legacy_grade(spec, attempt)

    def typed_check(spec: Any, attempt: Observed) -> Grade:
        return _typed_grade(spec, attempt)

    _plugin(monkeypatch, {"acme_legacy": legacy_check, "acme_typed": typed_check})
    with pytest.warns(DeprecationWarning):
        result = _grade([{"type": "trace_rule"}], ["acme_legacy", "acme_typed"])
    (graded,) = [r for r in result.results if r.grader == "trace_rule"]
    assert graded.grade.verdict == "pass", graded.grade.reason
