"""Release gates from the dataset manifest, computed over case figures.

A gate selects cases by ``risk_levels`` and/or ``suite`` (the manifest's suite, selected
exactly as ``evalcase run --suite`` and lint select it: evalcase.suites), measures
``metric`` (pass@1, the default; pass@k; pass^k) and passes at ``min_pass_rate``. Optional
``min_judge_agreement`` requires Cohen's kappa between the judge and people (``evalcase
calibrate``) for every rubric/judge the selected cases rest on. A gate never says yes by
accident: no case selected, an unknown suite or metric is an ``error``; a rate that misses
only because of pending or erroring attempts is ``pending`` / ``error``, not ``pass``.

A run of part of a dataset (``--select``, ``--suite``) measures the gates whose cases it
ran. A gate that selects cases of the dataset of which none ran is ``skipped`` (it says
how many it would have measured): it decides nothing and does not fail the run, whose
exit status then follows what ran. A gate that selects no case of the dataset at all is
still an ``error``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from evalcase import suites
from evalcase.grade.aggregate import METRICS, CaseFigures
from evalcase.grade.spec import as_list


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

    def result(
        verdict: str,
        reason: str,
        value: float | None = None,
        n: int = 0,
        failing: tuple[str, ...] = (),
    ) -> GateResult:
        return GateResult(name, verdict, metric, minimum, value, n, failing, reason)

    if metric not in METRICS:
        return result("error", f"unknown metric {metric!r} (use {', '.join(METRICS)})")
    if not isinstance(minimum, int | float):
        return result("error", "the gate has no min_pass_rate")
    levels = [str(v) for v in as_list(gate.get("risk_levels"))]
    wanted: suites.Criteria | None = None
    if gate.get("suite") is not None:
        suite = named.get(str(gate["suite"]))
        if not isinstance(suite, Mapping):
            return result("error", f"unknown suite {gate['suite']!r}")
        try:
            wanted = suites.criteria(suite, str(gate["suite"]))
        except suites.SuiteError as exc:
            return result("error", str(exc))

    def chosen(pool: Sequence[CaseFigures]) -> list[CaseFigures]:
        out = [c for c in pool if not c.meta.observation]
        if levels:
            out = [c for c in out if c.meta.risk_level in levels]
        if wanted is not None:
            out = [c for c in out if in_suite(c, wanted)]
        return out

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
    value = round(sum(c.metric(metric) for c in selected) / len(selected), 6)
    failing = tuple(c.meta.case_id for c in selected if c.metric(metric) < 1.0)
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
    if value + 1e-9 >= float(minimum):
        return result(
            "pass",
            f"{metric} {value:.2%} ≥ {float(minimum):.2%} over {len(selected)} cases",
            value,
            len(selected),
            failing,
        )
    unsure = [c for c in selected if c.metric(metric, optimistic=True) > c.metric(metric)]
    optimistic = sum(c.metric(metric, optimistic=True) for c in selected) / len(selected)
    if unsure and optimistic + 1e-9 >= float(minimum):
        verdict = "error" if any("error" in c.verdicts for c in unsure) else "pending"
        return result(
            verdict,
            f"{metric} {value:.2%} < {float(minimum):.2%}, but "
            f"{len(unsure)} case(s) are {verdict}: undecided",
            value,
            len(selected),
            failing,
        )
    return result(
        "fail",
        f"{metric} {value:.2%} < {float(minimum):.2%} over {len(selected)} cases",
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
    """Every gate of the manifest; in a run with several prompts, every gate once per
    prompt (``name [prompt_id@version]``), over that prompt's rows: a prompt that
    misses a gate is not averaged away by another (rows without a prompt, such as the
    cases ``--skip-invalid`` left out, count under every prompt)."""
    named = manifest.get("suites") or {}
    gates = [g for g in as_list(manifest.get("gates")) if isinstance(g, Mapping)]
    prompts = sorted({c.meta.prompt for c in cases if c.meta.prompt})
    if not prompts:
        return [evaluate(g, cases, named, calibration, judged, dataset) for g in gates]
    out = []
    for gate in gates:
        for prompt in prompts:
            rows = [c for c in cases if c.meta.prompt in (prompt, "")]
            result = evaluate(gate, rows, named, calibration, judged, dataset)
            out.append(replace(result, name=f"{result.name} [{prompt}]"))
    return out
