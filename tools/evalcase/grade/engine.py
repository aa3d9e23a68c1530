"""Grade one attempt with every grader its case configures, and combine the verdicts.

An attempt fails when any hard grader fails; otherwise it is an error when any grader
erred, pending when any is pending, else it passes. Soft graders (``hard: false``) only
move the score, the weighted mean of the graders' scores. A case configuring no grader gets
an error, never a pass. An attempt the runner could not complete fails when the agent was at
fault (it exited, hung, lied about JSON, called an unknown tool) and is an error when the
environment was (an adapter or worker was lost). An attempt a reply of which was cut at
the token limit (the record's ``truncated``, from ``finish_reason: length``) fails with
the failure class ``truncated``, whatever the graders said of the cut text: the line
``finish_reason`` in grades.jsonl says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalcase.grade.context import GradeContext
from evalcase.grade.graders import load
from evalcase.grade.model import Attempt, Evidence, Grade, Verdict, error, failed
from evalcase.grade.spec import JudgeSpec, grader_configs

ENVIRONMENT_ERRORS = frozenset({"worker_lost", "adapter"})
TOOL_CONTRACT_ERRORS = frozenset({"unknown_tool", "bad_json", "protocol", "oversized"})
TRUNCATION = "finish_reason"  # the grades.jsonl line of a truncated attempt


@dataclass(frozen=True)
class GraderResult:
    grader: str
    version: str
    weight: float
    hard: bool
    grade: Grade


@dataclass(frozen=True)
class AttemptResult:
    case_id: str
    case_version: str
    attempt: int
    verdict: Verdict
    score: float
    failure_class: str | None
    results: tuple[GraderResult, ...]


def truncation(attempt: Attempt) -> GraderResult | None:
    """A hard failure for an attempt whose reply the model cut at its token limit."""
    if not attempt.get("truncated") or attempt.get("status") == "error":
        return None
    steps = [
        e.get("step")
        for e in attempt.get("trace") or ()
        if isinstance(e, Mapping) and e.get("finish_reason") == "length"
    ]
    return GraderResult(
        TRUNCATION,
        "1",
        1.0,
        True,
        failed(
            "a reply was cut at the token limit (finish_reason: length): not a finished answer",
            *(Evidence(step=s) for s in steps if isinstance(s, int)),
            kind="truncated",
        ),
    )


def run_graders(spec: JudgeSpec, attempt: Attempt, ctx: GradeContext) -> list[GraderResult]:
    results = _configured(spec, attempt, ctx)
    cut = truncation(attempt)
    return results if cut is None else [*results, cut]


def _configured(spec: JudgeSpec, attempt: Attempt, ctx: GradeContext) -> list[GraderResult]:
    configs = grader_configs(spec)
    if not configs:
        return [
            GraderResult(
                "(none)",
                "0",
                1.0,
                True,
                error("the case configures no grader: nothing decides this attempt"),
            )
        ]
    results = []
    for config in configs:
        try:
            grader = load(config.type)
        except Exception as exc:  # an unknown or broken plugin is this grader's error
            results.append(
                GraderResult(
                    config.type,
                    "?",
                    config.weight,
                    config.hard,
                    error(f"grader {config.type!r} unavailable: {exc}"),
                )
            )
            continue
        try:
            grade: Grade = grader.grade(spec, attempt, ctx)
        except Exception as exc:  # a crashing grader must not take the run with it
            grade = error(f"grader crashed: {type(exc).__name__}: {exc}")
        results.append(GraderResult(config.type, grader.version, config.weight, config.hard, grade))
    return results


def combine(attempt: Attempt, results: list[GraderResult]) -> tuple[Verdict, float, str | None]:
    from evalcase.grade.failure import classify

    weights = sum(r.weight for r in results if r.grade.verdict in ("pass", "fail"))
    score = (
        sum(r.weight * r.grade.score for r in results if r.grade.verdict in ("pass", "fail"))
        / weights
        if weights
        else 0.0
    )
    verdict: Verdict
    status_error = attempt.get("status") == "error"
    kind = str((attempt.get("error") or {}).get("kind", "")) if status_error else ""
    if status_error and kind in ENVIRONMENT_ERRORS:
        verdict = "error"
    elif status_error or any(r.hard and r.grade.verdict == "fail" for r in results):
        verdict = "fail"
    elif any(r.grade.verdict == "error" for r in results):
        verdict = "error"
    elif any(r.grade.verdict == "pending" for r in results):
        verdict = "pending"
    else:
        verdict = "pass"
    if status_error:
        score = 0.0
    return verdict, round(score, 6), classify(attempt, results, verdict)


def grade_attempt(spec: JudgeSpec, attempt: Attempt, ctx: GradeContext) -> AttemptResult:
    results = run_graders(spec, attempt, ctx)
    verdict, score, failure = combine(attempt, results)
    return AttemptResult(
        str(attempt.get("case_id", spec.case_id)),
        str(attempt.get("case_version", spec.case_version)),
        int(attempt.get("attempt") or 1),
        verdict,
        score,
        failure,
        tuple(results),
    )


def grade_lines(result: AttemptResult) -> list[dict[str, Any]]:
    """The grades.jsonl lines of one attempt (contract section 8)."""
    lines = []
    for r in result.results:
        g = r.grade
        line: dict[str, Any] = {
            "case_id": result.case_id,
            "case_version": result.case_version,
            "attempt": result.attempt,
            "grader": r.grader,
            "verdict": g.verdict,
            "score": round(g.score, 6),
            "weight": r.weight,
            "hard": r.hard,
            "reason": g.reason,
            "evidence": [e.to_dict() for e in g.evidence],
            "grader_version": r.version,
            "judge": g.judge.to_dict() if g.judge else None,
            "kind": g.kind,
        }
        if g.reviewer:
            line["reviewer"], line["reviewed_at"] = g.reviewer, g.reviewed_at
        if g.details:
            line["details"] = dict(g.details)
        lines.append(line)
    return lines


def attempt_from_lines(lines: list[Mapping[str, Any]]) -> tuple[Verdict, float]:
    """Recompute an attempt's verdict and score from its grades.jsonl lines alone."""
    scored = [ln for ln in lines if ln["verdict"] in ("pass", "fail")]
    weights = sum(float(ln["weight"]) for ln in scored)
    score = (
        sum(float(ln["weight"]) * float(ln["score"]) for ln in scored) / weights if weights else 0.0
    )
    if any(ln.get("hard", True) and ln["verdict"] == "fail" for ln in lines):
        return "fail", round(score, 6)
    if any(ln["verdict"] == "error" for ln in lines):
        return "error", round(score, 6)
    if any(ln["verdict"] == "pending" for ln in lines):
        return "pending", round(score, 6)
    return "pass", round(score, 6)
