"""Grades are frozen data: a verdict, a score, a reason and evidence pointing into the trace."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

Verdict = Literal["pass", "fail", "error", "pending"]
VERDICTS: tuple[Verdict, ...] = ("pass", "fail", "error", "pending")


@dataclass(frozen=True)
class Evidence:
    """Where in the attempt a grader looked: a trace step and/or a dotted path."""

    step: int | None = None
    path: str | None = None
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"step": self.step, "path": self.path}
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class JudgeInfo:
    """Which judge produced an ``llm_rubric`` grade: recorded in every such grade."""

    model: str
    prompt_version: str
    rubric: str

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "prompt_version": self.prompt_version, "rubric": self.rubric}


@dataclass(frozen=True)
class Grade:
    """What one grader decided about one attempt.

    ``kind`` is the failure class a failing grade points at (agent_capability, tool_contract,
    missing_data, safety_policy, grader_error, environment_fault) when the grader knows it.
    """

    verdict: Verdict
    score: float
    reason: str
    evidence: tuple[Evidence, ...] = ()
    kind: str | None = None
    judge: JudgeInfo | None = None
    reviewer: str | None = None
    reviewed_at: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"


def passed(reason: str, *evidence: Evidence, score: float = 1.0, **details: Any) -> Grade:
    return Grade("pass", score, reason, tuple(evidence), details=details)


def failed(
    reason: str,
    *evidence: Evidence,
    kind: str = "agent_capability",
    score: float = 0.0,
    **details: Any,
) -> Grade:
    return Grade("fail", score, reason, tuple(evidence), kind=kind, details=details)


def error(reason: str, *evidence: Evidence, kind: str = "grader_error") -> Grade:
    """The grader could not decide: nothing to grade, bad configuration, a broken judge."""
    return Grade("error", 0.0, reason, tuple(evidence), kind=kind)


def pending(reason: str) -> Grade:
    """Waiting for someone (a judge that is not configured, a person who has not reviewed)."""
    return Grade("pending", 0.0, reason)


@dataclass(frozen=True)
class GraderResult:
    """One grader's grade of one attempt, with how it counts (weight, hard)."""

    grader: str
    version: str
    weight: float
    hard: bool
    grade: Grade
