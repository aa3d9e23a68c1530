"""Gates and per-case figures on constructed verdicts: a gate never says yes by accident."""

from __future__ import annotations

import pytest

from evalcase.grade.aggregate import CaseFigures, CaseMeta, kappa, rates
from evalcase.grade.gates import evaluate


def case(
    case_id: str,
    verdicts: str,
    risk: str = "P0",
    roles: tuple[str, ...] = ("risk",),
    tags: tuple[str, ...] = (),
) -> CaseFigures:
    meta = CaseMeta(case_id, "v1", risk_level=risk, dataset_roles=roles, tags=tags)
    v = tuple({"p": "pass", "f": "fail", "e": "error", "?": "pending"}[c] for c in verdicts)
    return CaseFigures(meta, v, tuple(1.0 if x == "pass" else 0.0 for x in v), ())


SUITES = {"smoke": {"tags": ["smoke"]}, "empty": {}, "bad": {"tag": ["smoke"]}}


@pytest.mark.parametrize(
    ("gate", "cases", "verdict"),
    [
        (
            {"risk_levels": ["P0"], "min_pass_rate": 1.0, "metric": "pass^k"},
            [case("a", "ppp"), case("b", "ppp")],
            "pass",
        ),
        (
            {"risk_levels": ["P0"], "min_pass_rate": 1.0, "metric": "pass^k"},
            [case("a", "ppp"), case("b", "ppf")],
            "fail",
        ),
        (
            {"risk_levels": ["P0"], "min_pass_rate": 1.0, "metric": "pass@k"},
            [case("a", "ppp"), case("b", "ppf")],
            "pass",
        ),
        (
            {"risk_levels": ["P0"], "min_pass_rate": 0.9},
            [case("a", "pp"), case("b", "p?")],
            "pending",
        ),
        (
            {"risk_levels": ["P0"], "min_pass_rate": 0.9},
            [case("a", "pp"), case("b", "pe")],
            "error",
        ),
        (
            {"risk_levels": ["P0"], "min_pass_rate": 1.0},
            [case("a", "pp"), case("b", "f?")],
            "fail",
        ),  # one definite failure decides
        ({"risk_levels": ["P9"], "min_pass_rate": 0.5}, [case("a", "pp")], "error"),
        (
            {"suite": "smoke", "min_pass_rate": 1.0},
            [case("a", "f"), case("b", "p", tags=("smoke",))],
            "pass",
        ),
        ({"suite": "nope", "min_pass_rate": 1.0}, [case("a", "p")], "error"),
        # A suite without criteria holds every case, for gates as for run and lint
        # (evalcase.suites); a gate on it measures the whole dataset.
        ({"suite": "empty", "min_pass_rate": 1.0}, [case("a", "p"), case("b", "f")], "fail"),
        ({"suite": "empty", "min_pass_rate": 0.5}, [case("a", "p"), case("b", "f")], "pass"),
        ({"suite": "bad", "min_pass_rate": 0.5}, [case("a", "p")], "error"),
        ({"min_pass_rate": 1.0, "metric": "pass@3"}, [case("a", "p")], "error"),
        ({"risk_levels": ["P0"]}, [case("a", "p")], "error"),
        ({"min_pass_rate": 1.0}, [case("a", "f", roles=("observation",)), case("b", "p")], "pass"),
        ({"min_pass_rate": 1.0}, [case("a", "p", roles=("observation",))], "error"),
    ],
)
def test_gate(gate: dict[str, object], cases: list[CaseFigures], verdict: str) -> None:
    result = evaluate({"name": "g", **gate}, cases, SUITES)
    assert result.verdict == verdict, result.reason


def test_judge_agreement_gate() -> None:
    cases = [case("a", "p")]
    judged = {"a": {("rubric@v1", "judge-x")}}
    calibration = [{"rubric": "rubric@v1", "judge_model": "judge-x", "kappa": 0.4}]
    gate = {"name": "g", "min_pass_rate": 1.0, "min_judge_agreement": 0.6}
    assert evaluate(gate, cases, {}, calibration, judged).verdict == "fail"
    assert evaluate(gate, cases, {}, [], judged).verdict == "error"
    good = [{**calibration[0], "kappa": 0.8}]
    assert evaluate(gate, cases, {}, good, judged).verdict == "pass"


def test_case_figures_and_status() -> None:
    flaky = case("a", "pfp")
    assert (flaky.metric("pass@1"), flaky.metric("pass@k"), flaky.metric("pass^k")) == (
        pytest.approx(2 / 3),
        1.0,
        0.0,
    )
    assert flaky.status == "flaky"
    assert case("b", "f?").status == "fail"
    assert case("c", "p?").status == "pending"
    assert case("d", "pe").status == "error"
    r = rates([case("a", "pp"), case("b", "pf"), case("o", "f", roles=("observation",))])
    assert r["cases"] == 2 and r["pass@1"] == 0.75 and r["pass^k"] == 0.5 and r["pass@k"] == 1.0


def test_cohens_kappa() -> None:
    pairs = (
        [("pass", "pass")] * 20
        + [("fail", "fail")] * 15
        + [("pass", "fail")] * 5
        + [("fail", "pass")] * 10
    )
    accuracy, k = kappa(pairs)
    assert accuracy == 0.7
    # expected agreement: 0.5*0.6 + 0.5*0.4 = 0.5 -> kappa = (0.7-0.5)/0.5
    assert k == pytest.approx(0.4)
    assert kappa([]) == (None, None)


def test_a_gate_whose_cases_the_selection_left_out_is_skipped() -> None:
    p0 = {"risk_levels": ["P0"], "min_pass_rate": 1.0}
    p1 = {"risk_levels": ["P1"], "min_pass_rate": 1.0}
    ran = [case("a", "p", risk="P1")]
    dataset = [case("a", "", risk="P1"), case("b", "", risk="P0"), case("c", "", risk="P0")]
    skipped = evaluate(p0, ran, SUITES, dataset=dataset)
    assert (skipped.verdict, skipped.cases) == ("skipped", 0)
    assert "none of its 2 case(s) ran" in skipped.reason
    assert evaluate(p1, ran, SUITES, dataset=dataset).verdict == "pass"
    # a gate that selects no case of the whole dataset is still an error, never skipped
    p2 = {"risk_levels": ["P2"], "min_pass_rate": 1.0}
    assert evaluate(p2, ran, SUITES, dataset=dataset).verdict == "error"
    assert evaluate(p0, ran, SUITES).verdict == "error"  # without the dataset: as before
