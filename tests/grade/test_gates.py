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


@pytest.mark.parametrize(
    ("gate", "cases", "verdict", "why"),
    [
        # m of k per case: 4 of 5 passes each case even with one failure...
        ({"min_pass_rate": 1.0, "case_passes": {"min": 4, "of": 5}},
         [case("a", "ppppf"), case("b", "ppppp")], "pass", "4 of 5 100.00%"),
        # ... 3 of 5 does not.
        ({"min_pass_rate": 1.0, "case_passes": {"min": 4, "of": 5}},
         [case("a", "pppff"), case("b", "ppppp")], "fail", "4 of 5 50.00%"),
        # Only the first K attempts count.
        ({"min_pass_rate": 1.0, "case_passes": {"min": 2, "of": 2}},
         [case("a", "ppf")], "pass", ""),
        # Undecided attempts that could still make the case: pending, not fail.
        ({"min_pass_rate": 1.0, "case_passes": {"min": 4, "of": 5}},
         [case("a", "ppp??")], "pending", "undecided"),
        # Too few attempts to judge: an error that says how to run.
        ({"min_pass_rate": 1.0, "case_passes": {"min": 4, "of": 5}},
         [case("a", "ppp")], "error", "--repeat 5"),
        ({"min_pass_rate": 1.0, "case_passes": {"min": 6, "of": 5}},
         [case("a", "ppppp")], "error", "no case can pass"),
        ({"min_pass_rate": 1.0, "metric": "pass@1", "case_passes": {"min": 1, "of": 1}},
         [case("a", "p")], "error", "replaces metric"),
        # Confidence: 9 of 10 attempts clear 0.8 as a rate, not as a 95% lower bound...
        ({"min_pass_rate": 0.8, "confidence": 0.95},
         [case("a", "ppppp"), case("b", "ppppf")], "fail", "not enough evidence"),
        # ... 40 of 40 do (lower bound 93.7%).
        ({"min_pass_rate": 0.8, "confidence": 0.95},
         [case(c, "pppppppp") for c in "abcde"], "pass", "lower bound"),
        # Over cases for pass^k: 30 of 30 cases all-pass.
        ({"min_pass_rate": 0.9, "metric": "pass^k", "confidence": 0.95},
         [case(f"c{i}", "pp") for i in range(30)], "pass", "30 of 30 cases"),
        # A lower bound that could clear once pending attempts resolve: pending.
        ({"min_pass_rate": 0.8, "confidence": 0.95},
         [case(c, "pppppppp") for c in "abcd"] + [case("e", "pppp????")], "pending", ""),
    ],
)  # fmt: skip
def test_repeat_thresholds_and_confidence(
    gate: dict[str, object], cases: list[CaseFigures], verdict: str, why: str
) -> None:
    result = evaluate({"name": "g", **gate}, cases, SUITES)
    assert result.verdict == verdict, result.reason
    assert why in result.reason


def test_the_noise_statistics() -> None:
    from evalcase.results.noise import fisher_greater, fisher_less, lower_bound, wilson

    # Fisher: 3 of 3 then 0 of 3 is 1/C(6,3); 4/4 then 3/4 is half the tables.
    assert fisher_less(3, 3, 0, 3) == pytest.approx(0.05)
    assert fisher_less(4, 4, 3, 4) == pytest.approx(0.5)
    assert fisher_less(4, 4, 0, 4) == pytest.approx(1 / 70)
    assert fisher_less(2, 4, 2, 4) == pytest.approx(
        (1 * 1 + 4 * 4 + 6 * 6) / 70  # P(X <= 2), hypergeometric(8, 4, 4)
    )
    assert fisher_greater(0, 3, 3, 3) == pytest.approx(0.05)
    assert fisher_less(0, 3, 3, 3) == pytest.approx(1.0)
    # Wilson, against published values (Newcombe 1998, table I: 81/263 -> 0.2553-0.3662).
    low, high = wilson(81, 263)
    assert (round(low, 4), round(high, 4)) == (0.2553, 0.3662)
    assert wilson(0, 10)[0] == 0.0 and 0 < wilson(0, 10)[1] < 0.35
    assert wilson(10, 10)[1] == 1.0 and wilson(10, 10)[0] < 1.0
    assert lower_bound(40, 40, 0.95) == pytest.approx(0.9366, abs=1e-4)
    assert lower_bound(0, 0, 0.95) == 0.0
