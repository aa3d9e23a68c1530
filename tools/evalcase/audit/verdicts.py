"""From graded audit attempts to a case's audit: findings, warnings, status.

**The gold** must pass every hard grader that needs no judge. Each such grader that
fails or errs is a finding (``gold_fails``, naming the grader and its reason: a wrong or
unreachable gold); an attempt the runner ended in error (the gold called a tool the case
does not offer, a limit was crossed) is one too (``gold_error``). Judged graders
(``llm_rubric``, ``human``) are never called by the audit and never count.

**A panel agent**'s attempt verdict (the engine's, the same rules as any run) gives its
outcome:

- ``pass``: the agent **passes** the case: a finding (``panel_passes``) naming the agent,
  the graders that passed it and their reasons, unless the case declares it
  (``audit: {may_pass: [...]}``), which makes it ``declared``;
- ``pending`` with every decided hard grader passing: **not shown to fail**: only the
  judge could fail it. Never a pass: the case's status is ``unproven`` and a warning
  names the agent, unless declared;
- ``fail`` or ``error``: the agent **fails** (an error is never a pass, in a gate or
  here). A ``may_pass`` declaration for an agent that fails is a warning: it can go.

A case's status: ``findings`` when it has any, else ``unproven`` when a panel agent is
not shown to fail, else ``passed``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalcase.audit import GOLD, JUDGED_GRADERS, MUTANTS, PANEL
from evalcase.audit.coverage import criteria, warnings
from evalcase.audit.mutants import Mutant, foreign_skips, redundant
from evalcase.audit_facts.store import FINDINGS, PASSED, UNPROVEN
from evalcase.contract.attempt import AttemptRecord
from evalcase.contract.task import Task
from evalcase.grade.engine import AttemptResult, decides
from evalcase.grade.model import GraderResult

REASON_CHARS = 300  # stored reasons are cut here: facts stay small (bounded records)


def _short(text: str) -> str:
    return text if len(text) <= REASON_CHARS else text[: REASON_CHARS - 1] + "…"


def declared(task: Task) -> tuple[str, ...]:
    """The panel agents the case says may pass (``audit.may_pass``)."""
    audit = (task.judge.raw or {}).get("audit")
    names = audit.get("may_pass") if isinstance(audit, Mapping) else None
    return tuple(str(n) for n in names) if isinstance(names, list) else ()


@dataclass(frozen=True)
class Finding:
    kind: str  # gold_fails, gold_error, panel_passes, drop_passes, collateral_damage
    agent: str
    reason: str
    graders: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "agent": self.agent,
            "reason": _short(self.reason),
            "graders": list(self.graders),
        }


@dataclass(frozen=True)
class CaseAudit:
    task: Task
    outcomes: Mapping[str, str]  # agent -> passes, fails, not_shown_to_fail, declared, skipped
    findings: tuple[Finding, ...]
    warnings: tuple[str, ...]
    agents: Mapping[str, Any] = field(default_factory=dict)  # agent -> verdict and graders
    criteria: tuple[Any, ...] = ()
    mutants: tuple[Mapping[str, Any], ...] = ()  # each mutant: what it changed, its outcome

    @property
    def status(self) -> str:
        if self.findings:
            return FINDINGS
        if any(o == "not_shown_to_fail" for o in self.outcomes.values()):
            return UNPROVEN
        return PASSED

    def to_dict(self) -> dict[str, Any]:
        return {
            "case_id": self.task.case_id,
            "case_version": self.task.case_version,
            "dataset_id": self.task.dataset_id,
            "risk_level": self.task.judge.risk_level,
            "status": self.status,
            "outcomes": dict(self.outcomes),
            "findings": [f.to_dict() for f in self.findings],
            "warnings": list(self.warnings),
            "declared": list(declared(self.task)),
            "agents": dict(self.agents),
            "criteria": [c.to_dict() for c in self.criteria],
            "mutants": [dict(m) for m in self.mutants],
            "redundant_calls": sorted(redundant(self.task)),
        }


def _judged(result: GraderResult) -> bool:
    return result.grader in JUDGED_GRADERS


def _record(result: AttemptResult | None, attempt: Mapping[str, Any] | None) -> dict[str, Any]:
    if result is None:
        return {"verdict": "skipped"}
    out: dict[str, Any] = {
        "verdict": result.verdict,
        "graders": [
            {
                "grader": r.grader,
                "verdict": r.grade.verdict,
                "hard": r.hard,
                "reason": _short(r.grade.reason),
            }
            for r in result.results
        ],
    }
    if attempt is not None and attempt.get("status") == "error":
        error = attempt.get("error") or {}
        out["error"] = _short(f"{error.get('kind')}: {error.get('message')}")
    return out


def gold_findings(result: AttemptResult, attempt: Mapping[str, Any]) -> list[Finding]:
    out = []
    if attempt.get("status") == "error":
        error = attempt.get("error") or {}
        why = f"the run ended in error: {error.get('kind')}: {error.get('message')}"
        out.append(Finding("gold_error", GOLD, why))
    for r in result.results:
        if _judged(r) or not decides(r):
            continue
        if r.grade.verdict in ("fail", "error"):
            why = f"{r.grader} {r.grade.verdict}s: {r.grade.reason}"
            out.append(Finding("gold_fails", GOLD, why, (r.grader,)))
    return out


def panel_outcome(result: AttemptResult) -> str:
    if result.verdict == "pass":
        return "passes"
    if result.verdict == "pending":
        decided = [r for r in result.results if r.hard and r.grade.verdict != "pending"]
        if all(r.grade.verdict == "pass" for r in decided):
            return "not_shown_to_fail"
    return "fails"


def _passing(result: AttemptResult) -> tuple[tuple[str, ...], str]:
    passed = [r for r in result.results if r.grade.verdict == "pass"]
    names = tuple(r.grader for r in passed)
    why = "; ".join(f"{r.grader}: {r.grade.reason}" for r in passed)
    return names, why


def _foreign_took_effect(mutant: Mutant, record: AttemptRecord) -> bool:
    """The foreign write (its tool, its arguments) was made and changed the state: not
    made, refused, failed or a no-op (every write leaves the value as it was: arguments
    drawn from the entity's own fields may), it proves nothing."""
    wanted = dict(mutant.args or {})
    return any(
        c.tool == mutant.tool
        and dict(c.arguments) == wanted
        and c.ok is not False
        and c.error is None
        and any(ch.before != ch.after for ch in c.changes)  # a write of the same value is none
        for c in record.calls
    )


def mutant_findings(
    runs: Sequence[tuple[Mutant, AttemptResult, AttemptRecord]],
) -> tuple[list[Finding], list[str], list[dict[str, Any]]]:
    """Findings, warnings and the stored record of each mutant (module doc)."""
    findings: list[Finding] = []
    notes: list[str] = []
    stored: list[dict[str, Any]] = []
    for mutant, result, record in runs:
        outcome = "fails" if result.verdict in ("fail", "error") else "passes"
        if result.verdict == "pending":
            outcome = panel_outcome(result)
        if (
            mutant.kind == "foreign"
            and outcome != "fails"
            and not _foreign_took_effect(mutant, record)
        ):
            outcome = "inconclusive"
        stored.append({**mutant.to_dict(), "outcome": outcome, **_record(result, None)})
        what = mutant.describe()
        if outcome == "passes":
            names, why = _passing(result)
            if mutant.kind == "drop":
                text = f"{what} passes: the call is not needed, or nothing checks it ({why})"
                findings.append(Finding("drop_passes", MUTANTS, text, names))
            else:
                text = f"{what} passes: no grader sees a write outside the case ({why})"
                findings.append(Finding("collateral_damage", MUTANTS, text, names))
        elif outcome == "not_shown_to_fail":
            notes.append(f"{what} is not shown to fail: only a judged grader could fail it")
        elif outcome == "inconclusive":
            notes.append(f"{what} changed nothing (refused or failed): collateral not tested")
    return findings, notes, stored


def case_audit(
    task: Task,
    results: Mapping[str, AttemptResult | None],
    attempts: Mapping[str, Mapping[str, Any] | None],
    agents: Sequence[str] = (GOLD, *PANEL),
    mutants: Sequence[tuple[Mutant, AttemptResult, AttemptRecord]] | None = None,
) -> CaseAudit:
    """The audit of one case from each agent's graded attempt (None: not run for it)."""
    allowed = set(declared(task))
    findings: list[Finding] = []
    notes: list[str] = []
    outcomes: dict[str, str] = {}
    for agent in agents:
        result = results.get(agent)
        attempt = attempts.get(agent) or {}
        if result is None:
            outcomes[agent] = "skipped"
            continue
        if agent == GOLD:
            found = gold_findings(result, attempt)
            findings += found
            outcomes[agent] = "fails" if found else "passes"
            continue
        outcome = panel_outcome(result)
        if outcome in ("passes", "not_shown_to_fail") and agent in allowed:
            outcomes[agent] = "declared"
            continue
        outcomes[agent] = outcome
        if outcome == "passes":
            names, why = _passing(result)
            findings.append(
                Finding("panel_passes", agent, f"{agent} passes the case: {why}", names)
            )
        elif outcome == "not_shown_to_fail":
            names, why = _passing(result)
            waiting = sorted({r.grader for r in result.results if r.grade.verdict == "pending"})
            notes.append(
                f"{agent} is not shown to fail: every deterministic hard grader passes it"
                f" ({', '.join(names) or 'none decided'}); only {', '.join(waiting)} could"
            )
        elif agent in allowed:
            notes.append(f"may_pass declares {agent}, but {agent} fails the case: it can go")
    stored: list[dict[str, Any]] = []
    if mutants is not None:
        found, more, stored = mutant_findings(mutants)
        findings += found
        notes += more
        outcomes[MUTANTS] = "passes" if found else "fails"
        declared_tools = redundant(task)
        expected = (
            {c.tool for p in task.judge.expected_calls.any_of for c in p.calls}
            if (task.judge.expected_calls)
            else set()
        )
        for tool in sorted(declared_tools - expected):
            notes.append(f"redundant_calls declares {tool}, which no expected call makes")
        notes += foreign_skips(task)
    covered = criteria(task.judge)
    notes += warnings(task.judge, covered)
    records = {a: _record(results.get(a), attempts.get(a)) for a in agents}
    return CaseAudit(task, outcomes, tuple(findings), tuple(notes), records, covered, tuple(stored))
