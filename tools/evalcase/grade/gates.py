"""Release gates from the dataset manifest, computed over case figures.

A gate selects cases by ``risk_levels`` and/or ``suite`` (the manifest's suite, selected
exactly as ``evalcase run --suite`` and lint select it: evalcase.suites), measures
``metric`` (pass@1, the default; pass@k; pass^k) and passes at ``min_pass_rate``. Optional
``min_judge_agreement`` requires Cohen's kappa between the judge and people (``evalcase
calibrate``) for every rubric/judge the selected cases rest on. A gate never says yes by
accident: no case selected, an unknown suite or metric is an ``error``; a rate that misses
only because of pending or erroring attempts is ``pending`` / ``error``, not ``pass``.

With repeats, two more requirements (docs/grading.md, "Decisions that know the noise"):

- ``case_passes: {min: M, of: K}``, instead of ``metric``: a case passes the gate when at
  least M of its first K attempts pass; the rate is the share of selected cases that do.
  A selected case with fewer than K attempts makes the gate an ``error`` (run with
  ``--repeat K``).
- ``confidence: C`` (0.95): the one-sided Wilson lower bound of the rate at confidence C
  must clear ``min_pass_rate`` too, over attempts for pass@1 and over cases otherwise;
  a rate that clears the threshold by luck on too few attempts fails ("not enough
  evidence").

Lint EC324 refuses what could never pass (``min`` above ``of``; ``confidence`` with a
``min_pass_rate`` of 1; ``case_passes`` beside ``metric``).

A run of part of a dataset (``--select``, ``--suite``) measures the gates whose cases it
ran. A gate that selects cases of the dataset of which none ran is ``skipped`` (it says
how many it would have measured): it decides nothing and does not fail the run, whose
exit status then follows what ran. A gate that selects no case of the dataset at all is
still an ``error``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from evalcase import suites
from evalcase.grade.aggregate import METRICS, CaseFigures, prompt_grid
from evalcase.grade.noise import lower_bound
from evalcase.grade.spec import as_list

UNDECIDED = ("pending", "error")


@dataclass(frozen=True)
class GateResult:
    name: str
    verdict: str  # pass | fail | error | pending | skipped
    metric: str
    min_pass_rate: float | None
    value: float | None
    cases: int
    failing: tuple[str, ...]
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "verdict": self.verdict,
            "metric": self.metric,
            "min_pass_rate": self.min_pass_rate,
            "value": self.value,
            "cases": self.cases,
            "failing": list(self.failing),
            "reason": self.reason,
        }


def in_suite(case: CaseFigures, wanted: suites.Criteria) -> bool:
    """evalcase.suites' selection: the one lint and ``evalcase run --suite`` make."""
    m = case.meta
    facets = suites.Facets(
        case_id=m.case_id,
        tags=m.tags,
        dataset_roles=m.dataset_roles,
        risk_level=m.risk_level or None,
        case_types=m.case_types,
    )
    return suites.in_suite(facets, wanted)


def _case_passes(raw: Any) -> tuple[int, int] | str:
    """(m, k) of ``case_passes: {min: m, of: k}``, or what is wrong with it."""
    if not isinstance(raw, Mapping):
        return "case_passes must be {min: M, of: K}"
    m, k = raw.get("min"), raw.get("of")
    if not isinstance(m, int) or not isinstance(k, int) or isinstance(m, bool) or m < 1 or k < 1:
        return "case_passes needs whole numbers min >= 1 and of >= 1"
    if m > k:
        return f"case_passes: min {m} > of {k}: no case can pass"
    return m, k


def selection(
    gate: Mapping[str, Any], named: Mapping[str, Any]
) -> Callable[[Sequence[CaseFigures]], list[CaseFigures]] | str:
    """The gate's choice of cases (``risk_levels``, ``suite``; never an observation), or
    what is wrong with it (an unknown or malformed suite)."""
    levels = [str(v) for v in as_list(gate.get("risk_levels"))]
    wanted: suites.Criteria | None = None
    if gate.get("suite") is not None:
        suite = named.get(str(gate["suite"]))
        if not isinstance(suite, Mapping):
            return f"unknown suite {gate['suite']!r}"
        try:
            wanted = suites.criteria(suite, str(gate["suite"]))
        except suites.SuiteError as exc:
            return str(exc)

    def chosen(pool: Sequence[CaseFigures]) -> list[CaseFigures]:
        out = [c for c in pool if not c.meta.observation]
        if levels:
            out = [c for c in out if c.meta.risk_level in levels]
        if wanted is not None:
            out = [c for c in out if in_suite(c, wanted)]
        return out

    return chosen


def evaluate(
    gate: Mapping[str, Any],
    cases: Sequence[CaseFigures],
    named: Mapping[str, Any],
    calibration: Sequence[Mapping[str, Any]] = (),
    judged: Mapping[str, set[tuple[str, str]]] | None = None,
    dataset: Sequence[CaseFigures] | None = None,
) -> GateResult:
    """One gate over the run's ``cases``; ``dataset``: every case of the dataset (as
    figures without attempts), to tell a gate the run's selection left out (``skipped``)
    from one that selects nothing (``error``)."""
    name = str(gate.get("name", "gate"))
    metric = str(gate.get("metric", "pass@1"))
    minimum = gate.get("min_pass_rate")
    repeats = None
    if gate.get("case_passes") is not None:
        parsed = _case_passes(gate["case_passes"])
        if isinstance(parsed, str):
            return GateResult(name, "error", metric, None, None, 0, (), parsed)
        if "metric" in gate:
            return GateResult(name, "error", metric, None, None, 0, (),
                              "case_passes replaces metric: give one of them")  # fmt: skip
        repeats = parsed
        metric = f"{parsed[0]} of {parsed[1]}"
    confidence = gate.get("confidence")

    def result(
        verdict: str,
        reason: str,
        value: float | None = None,
        n: int = 0,
        failing: tuple[str, ...] = (),
    ) -> GateResult:
        return GateResult(name, verdict, metric, minimum, value, n, failing, reason)

    if repeats is None and metric not in METRICS:
        return result("error", f"unknown metric {metric!r} (use {', '.join(METRICS)})")
    if not isinstance(minimum, int | float):
        return result("error", "the gate has no min_pass_rate")
    if confidence is not None and (
        not isinstance(confidence, int | float) or not 0 < float(confidence) < 1
    ):
        return result("error", f"confidence {confidence!r} is not between 0 and 1")
    chosen = selection(gate, named)
    if isinstance(chosen, str):
        return result("error", chosen)
    selected = [c for c in chosen(cases) if c.n]
    if not selected:
        ran = {c.meta.case_id for c in cases}
        left_out = [c for c in chosen(dataset or ()) if c.meta.case_id not in ran]
        if left_out:
            return result(
                "skipped",
                f"none of its {len(left_out)} case(s) ran: the run's selection left them "
                "out; run them (or the whole dataset) to measure this gate",
            )
        return result("error", "no case selected: nothing to check")
    if repeats is not None:
        short = [c for c in selected if c.n < repeats[1]]
        if short:
            return result(
                "error",
                f"{len(short)} case(s) have fewer than {repeats[1]} attempts "
                f"({', '.join(c.meta.case_id for c in short[:5])}): the gate counts "
                f"{metric}; run with --repeat {repeats[1]}",
                None,
                len(selected),
            )

    def score(case: CaseFigures, optimistic: bool = False) -> float:
        if repeats is None:
            return case.metric(metric, optimistic=optimistic)
        first = case.verdicts[: repeats[1]]
        passes = sum(1 for v in first if v == "pass" or (optimistic and v in UNDECIDED))
        return 1.0 if passes >= repeats[0] else 0.0

    def evidence(optimistic: bool = False) -> tuple[int, int]:
        """(successes, units) the confidence bound counts: attempts for pass@1, cases
        for every other rate."""
        if repeats is None and metric == "pass@1":
            return (
                sum(
                    sum(1 for v in c.verdicts if v == "pass" or (optimistic and v in UNDECIDED))
                    for c in selected
                ),
                sum(c.n for c in selected),
            )
        return round(sum(score(c, optimistic) for c in selected)), len(selected)

    def clears(rate: float, optimistic: bool = False) -> bool:
        if rate + 1e-9 < float(minimum):
            return False
        if confidence is None:
            return True
        return lower_bound(*evidence(optimistic), float(confidence)) + 1e-9 >= float(minimum)

    value = round(sum(score(c) for c in selected) / len(selected), 6)
    failing = tuple(c.meta.case_id for c in selected if score(c) < 1.0)
    agreement = gate.get("min_judge_agreement")
    if isinstance(agreement, int | float):
        used = set().union(*((judged or {}).get(c.meta.case_id, set()) for c in selected))
        for rubric, model in sorted(used):
            rows = [r for r in calibration if r["rubric"] == rubric and r["judge_model"] == model]
            kappas = [r["kappa"] for r in rows if r["kappa"] is not None]
            if not kappas:
                return result(
                    "error",
                    f"no human calibration for judge {model} on {rubric}",
                    value,
                    len(selected),
                    failing,
                )
            if min(kappas) < agreement:
                return result(
                    "fail",
                    f"judge {model} on {rubric}: kappa {min(kappas):.2f} < {agreement:.2f}",
                    value,
                    len(selected),
                    failing,
                )
    bound = ""
    if confidence is not None:
        low = lower_bound(*evidence(), float(confidence))
        passes, units = evidence()
        unit = "attempts" if repeats is None and metric == "pass@1" else "cases"
        bound = (
            f" (lower bound {low:.2%} at {float(confidence):.0%} confidence, "
            f"{passes} of {units} {unit})"
        )
    if clears(value):
        return result(
            "pass",
            f"{metric} {value:.2%}{bound} ≥ {float(minimum):.2%} over {len(selected)} cases",
            value,
            len(selected),
            failing,
        )
    unsure = [c for c in selected if score(c, True) > score(c)]
    optimistic = sum(score(c, True) for c in selected) / len(selected)
    if unsure and clears(optimistic, True):
        verdict = "error" if any("error" in c.verdicts for c in unsure) else "pending"
        return result(
            verdict,
            f"{metric} {value:.2%}{bound} < {float(minimum):.2%}, but "
            f"{len(unsure)} case(s) are {verdict}: undecided",
            value,
            len(selected),
            failing,
        )
    why = "not enough evidence: " if value + 1e-9 >= float(minimum) else ""
    return result(
        "fail",
        f"{why}{metric} {value:.2%}{bound} < {float(minimum):.2%} over {len(selected)} cases",
        value,
        len(selected),
        failing,
    )


def evaluate_all(
    manifest: Mapping[str, Any],
    cases: Sequence[CaseFigures],
    calibration: Sequence[Mapping[str, Any]] = (),
    judged: Mapping[str, set[tuple[str, str]]] | None = None,
    dataset: Sequence[CaseFigures] | None = None,
) -> list[GateResult]:
    """Every gate of the manifest.

    In a prompt × case grid (``run --prompt a,b``: some case ran under several prompts,
    evalcase.grade.aggregate.prompt_grid) every gate once per prompt (``name
    [prompt_id@version]``), over that prompt's rows: a prompt that misses a gate is not
    averaged away by another (rows without a prompt, such as the cases ``--skip-invalid``
    left out, count under every prompt).

    Otherwise (each case ran once, under the prompt fixture it names or under none) each
    gate once, over its cases, labelled with a prompt only when every case it measured
    ran under that one prompt: two cases naming ``prompt: intent_labels`` among nine do
    not make the nine cases' gate that prompt's."""
    named = manifest.get("suites") or {}
    gates = [g for g in as_list(manifest.get("gates")) if isinstance(g, Mapping)]
    prompts = sorted({c.meta.prompt for c in cases if c.n and c.meta.prompt})
    if not prompts or not prompt_grid(cases):
        return [_labelled(evaluate(g, cases, named, calibration, judged, dataset), g, cases,
                          named) for g in gates]  # fmt: skip
    out = []
    for gate in gates:
        for prompt in prompts:
            rows = [c for c in cases if c.meta.prompt in (prompt, "")]
            result = evaluate(gate, rows, named, calibration, judged, dataset)
            out.append(replace(result, name=f"{result.name} [{prompt}]"))
    return out


def _labelled(
    result: GateResult,
    gate: Mapping[str, Any],
    cases: Sequence[CaseFigures],
    named: Mapping[str, Any],
) -> GateResult:
    """``result`` named after the one prompt all the cases it measured ran under, if any."""
    chosen = selection(gate, named)
    if isinstance(chosen, str):
        return result
    under = {c.meta.prompt for c in chosen(cases) if c.n}
    if len(under) != 1 or "" in under:
        return result
    return replace(result, name=f"{result.name} [{under.pop()}]")
