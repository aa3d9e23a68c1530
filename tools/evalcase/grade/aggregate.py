"""Figures over attempts: per case pass@1 / pass@k / pass^k, slices, usage, calibration.

A case with n recorded attempts and c passing ones has pass@1 = c/n, pass@k = 1 when any of
its k = n attempts passed and pass^k = 1 when every one did (the stable pass rate over
cases is the mean of pass^k). Observation cases are graded and shown but never counted in a
rate (docs/grading.md). Error and pending attempts are not passes.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalcase.contract.attempt import AttemptRecord

SLICE_KEYS = (
    "risk_level",
    "case_type",
    "ability_tag",
    "scenario",
    "tool",
    "dataset_role",
    "failure_class",
    "prompt",
)
METRICS = ("pass@1", "pass@k", "pass^k")


@dataclass(frozen=True)
class CaseMeta:
    case_id: str
    case_version: str
    title: str = ""
    risk_level: str = ""
    case_types: tuple[str, ...] = ()
    ability_tags: tuple[str, ...] = ()
    scenario: str = ""
    tools: tuple[str, ...] = ()
    dataset_roles: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    digest: str = ""
    prompt: str = ""  # id@version when the case ran with a prompt fixture: one row per prompt

    @property
    def observation(self) -> bool:
        return "observation" in self.dataset_roles

    def to_dict(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "case_version": self.case_version,
            "title": self.title,
            "risk_level": self.risk_level,
            "case_types": list(self.case_types),
            "ability_tags": list(self.ability_tags),
            "scenario": self.scenario,
            "tools": list(self.tools),
            "dataset_roles": list(self.dataset_roles),
            "tags": list(self.tags),
            "digest": self.digest,
            "observation": self.observation,
            "prompt": self.prompt or None,
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> CaseMeta:
        return cls(
            raw["case_id"],
            raw["case_version"],
            raw.get("title", ""),
            raw.get("risk_level", ""),
            tuple(raw.get("case_types", ())),
            tuple(raw.get("ability_tags", ())),
            raw.get("scenario", ""),
            tuple(raw.get("tools", ())),
            tuple(raw.get("dataset_roles", ())),
            tuple(raw.get("tags", ())),
            raw.get("digest", ""),
            raw.get("prompt") or "",
        )


@dataclass(frozen=True)
class CaseFigures:
    meta: CaseMeta
    verdicts: tuple[str, ...]  # per attempt, in attempt order
    scores: tuple[float, ...]
    failure_classes: tuple[str, ...]

    @property
    def n(self) -> int:
        return len(self.verdicts)

    @property
    def passes(self) -> int:
        return sum(1 for v in self.verdicts if v == "pass")

    def metric(self, name: str, *, optimistic: bool = False) -> float:
        """pass@1, pass@k or pass^k; ``optimistic`` counts undecided attempts as passes
        (what the figure could still become once pending and erroring attempts resolve)."""
        if not self.n:
            return 0.0
        passes = self.passes
        if optimistic:
            passes += sum(1 for v in self.verdicts if v in ("pending", "error"))
        if name == "pass@1":
            return passes / self.n
        if name == "pass@k":
            return 1.0 if passes else 0.0
        if name == "pass^k":
            return 1.0 if passes == self.n else 0.0
        raise KeyError(name)

    @property
    def status(self) -> str:
        """pass (every attempt), fail (none passed), flaky (some did), else error / pending."""
        if self.n and self.passes == self.n:
            return "pass"
        if "fail" in self.verdicts:
            return "flaky" if self.passes else "fail"
        if "error" in self.verdicts:
            return "error"
        return "pending"

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.meta.to_dict(),
            "attempts": self.n,
            "passed": self.passes,
            "verdicts": list(self.verdicts),
            "scores": list(self.scores),
            "status": self.status,
            "pass@1": round(self.metric("pass@1"), 6),
            "pass@k": self.metric("pass@k"),
            "pass^k": self.metric("pass^k"),
            "failure_classes": sorted(set(self.failure_classes)),
        }


def slice_values(case: CaseFigures, key: str) -> tuple[str, ...]:
    m = case.meta
    values: Sequence[str] = {
        "risk_level": (m.risk_level,) if m.risk_level else (),
        "case_type": m.case_types,
        "ability_tag": m.ability_tags,
        "scenario": (m.scenario,) if m.scenario else (),
        "tool": m.tools,
        "dataset_role": m.dataset_roles,
        "failure_class": tuple(sorted(set(case.failure_classes))),
        "prompt": (m.prompt,) if m.prompt else (),
    }[key]
    return tuple(dict.fromkeys(values))


def rates(cases: Iterable[CaseFigures]) -> dict[str, Any]:
    """The figures of a set of case rows. A run with several prompts has one row per
    case and prompt: ``cases`` counts cases (each once), ``prompts`` the prompts,
    ``prompted_cases`` the cases that ran under one, ``prompt_grid`` whether some case
    ran under several (:func:`prompt_grid`) and ``case_runs`` the rows; the rates and the
    outcome counts are over the rows (a case may pass under one prompt and fail under
    another; per prompt: the ``prompt`` slice, and in a grid each gate is measured per
    prompt)."""
    counted = [c for c in cases if not c.meta.observation and c.n]
    out: dict[str, Any] = {
        "cases": len({(c.meta.case_id, c.meta.case_version) for c in counted}),
        "attempts": sum(c.n for c in counted),
    }
    prompts = {c.meta.prompt for c in counted if c.meta.prompt}
    if prompts:
        out["prompts"] = len(prompts)
        out["case_runs"] = len(counted)
        out["prompted_cases"] = len(
            {(c.meta.case_id, c.meta.case_version) for c in counted if c.meta.prompt}
        )
        out["prompt_grid"] = prompt_grid(counted)
    for name in METRICS:
        out[name] = (
            round(sum(c.metric(name) for c in counted) / len(counted), 6) if counted else None
        )
    out["stable_pass_rate"] = out["pass^k"]
    # Cases by outcome, each apart (a pending case is not a failing one): pass, fail
    # (fail and flaky), pending, error add up to "cases" ("case_runs" with prompts).
    out["passed"] = sum(1 for c in counted if c.status == "pass")
    out["failed"] = sum(1 for c in counted if c.status in ("fail", "flaky"))
    out["pending"] = sum(1 for c in counted if c.status == "pending")
    out["errors"] = sum(1 for c in counted if c.status == "error")
    return out


def prompt_grid(cases: Iterable[CaseFigures]) -> bool:
    """Whether the rows are a prompt × case grid (``run --prompt a,b``): some case ran
    under more than one prompt. Cases that each ran once, some under the prompt fixture
    they name (``prompt:``) and some under none, are no grid: one row per case."""
    seen: dict[tuple[str, str], str] = {}
    for c in cases:
        if not c.n:
            continue
        key = (c.meta.case_id, c.meta.case_version)
        if seen.setdefault(key, c.meta.prompt) != c.meta.prompt:
            return True
    return False


def slices(cases: Sequence[CaseFigures]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for key in SLICE_KEYS:
        groups: dict[str, list[CaseFigures]] = defaultdict(list)
        for case in cases:
            for value in slice_values(case, key):
                groups[value].append(case)
        out[key] = {value: rates(members) for value, members in sorted(groups.items())}
    return out


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100)."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def usage(attempts: Sequence[AttemptRecord]) -> dict[str, Any]:
    prompt = [a.usage.prompt_tokens for a in attempts]
    completion = [a.usage.completion_tokens for a in attempts]
    costs = [a.usage.cost for a in attempts]
    latency = [float(a.latency_ms) for a in attempts]
    tokens = [p + c for p, c in zip(prompt, completion, strict=True)]
    known = [float(c) for c in costs if isinstance(c, int | float)]
    return {
        "attempts": len(attempts),
        "prompt_tokens": sum(prompt),
        "completion_tokens": sum(completion),
        "tokens": sum(tokens),
        "tokens_p50": percentile(tokens, 50),
        "tokens_p90": percentile(tokens, 90),
        "cost": round(sum(known), 6) if known else None,
        "cost_known_attempts": len(known),
        "latency_ms_total": sum(latency),
        "latency_ms_p50": percentile(latency, 50),
        "latency_ms_p90": percentile(latency, 90),
        "latency_ms_p99": percentile(latency, 99),
        "latency_ms_max": max(latency) if latency else None,
    }


def kappa(pairs: Sequence[tuple[str, str]]) -> tuple[float | None, float | None]:
    """(accuracy, Cohen's kappa) of (human, judge) pass/fail pairs."""
    n = len(pairs)
    if not n:
        return None, None
    agree = sum(1 for h, j in pairs if h == j) / n
    labels = ("pass", "fail")
    expected = sum(
        (sum(1 for h, _ in pairs if h == lab) / n) * (sum(1 for _, j in pairs if j == lab) / n)
        for lab in labels
    )
    if expected >= 1.0:
        return round(agree, 6), (1.0 if agree == 1.0 else 0.0)
    return round(agree, 6), round((agree - expected) / (1 - expected), 6)


@dataclass
class Calibration:
    rubric: str
    model: str
    prompt_version: str
    pairs: list[tuple[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        accuracy, k = kappa(self.pairs)
        counts = {
            f"human_{h}_judge_{j}": sum(1 for p in self.pairs if p == (h, j))
            for h in ("pass", "fail")
            for j in ("pass", "fail")
        }
        return {
            "rubric": self.rubric,
            "judge_model": self.model,
            "prompt_version": self.prompt_version,
            "n": len(self.pairs),
            "accuracy": accuracy,
            "kappa": k,
            "counts": counts,
        }


def calibration(grade_lines: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Agreement of llm_rubric with human verdicts on the same attempts."""
    human: dict[tuple[str, str, int], str] = {}
    judged: dict[tuple[str, str, int], Mapping[str, Any]] = {}
    for line in grade_lines:
        key = (line["case_id"], line["case_version"], int(line["attempt"]))
        if line["grader"] == "human" and line["verdict"] in ("pass", "fail"):
            human[key] = line["verdict"]
        elif (
            line["grader"] == "llm_rubric"
            and line["verdict"] in ("pass", "fail")
            and line.get("judge")
        ):
            judged[key] = line
    groups: dict[tuple[str, str, str], Calibration] = {}
    for key, line in sorted(judged.items()):
        if key not in human:
            continue
        j = line["judge"]
        group = (j["rubric"], j["model"], j["prompt_version"])
        groups.setdefault(group, Calibration(*group)).pairs.append((human[key], line["verdict"]))
    return [c.to_dict() for _, c in sorted(groups.items())]
