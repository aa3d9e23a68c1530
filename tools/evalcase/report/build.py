"""report.json: every figure of a graded run, as plain data (schema: schemas/report.schema.json)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from evalcase import __version__
from evalcase.grade.aggregate import rates, slices
from evalcase.grade.awaiting import awaiting
from evalcase.grade.recorded_run import GradedRun

SCHEMA = "evalcase.report/1"
RISK_ORDER = {"P0": 0, "P1": 1, "P2": 2, "P3": 3}


def risk_rank(level: str) -> int:
    return RISK_ORDER.get(level, 9)


def build_report(
    graded: GradedRun,
    *,
    redacted: bool = False,
    audit: Mapping[str, str] | None = None,
    graded_at: str | None = None,
) -> dict[str, Any]:
    """``audit``: case ID -> its audit status (evalcase.audit_facts.store.report_statuses), when
    the dataset was audited; the report then has an ``audit`` section. ``graded_at``: the
    grading's time (evalcase.report.gradings.graded_at_of), else now."""
    record = graded.record
    run = record.run
    raw_dataset = run.get("dataset")
    dataset: Mapping[str, Any] = raw_dataset if isinstance(raw_dataset, Mapping) else {}
    agent = run.get("agent")
    judges = sorted(
        {
            (ln["judge"]["model"], ln["judge"]["prompt_version"], ln["judge"]["rubric"])
            for ln in graded.lines
            if ln.get("judge")
        }
    )
    summary = rates(graded.cases)
    summary["status_counts"] = dict(
        sorted(Counter(c.status for c in graded.cases if not c.meta.observation).items())
    )
    summary["observation_cases"] = sum(1 for c in graded.cases if c.meta.observation)
    waits = awaiting(graded.cases, graded.results)
    summary["pending_checks_pass"] = sum(
        1
        for c in graded.cases
        if not c.meta.observation
        and (w := waits.get((c.meta.case_id, c.meta.case_version))) is not None
        and w.checks_pass
    )
    summary["gates_passed"] = graded.gates_passed
    summary["errored_attempts"] = len(graded.errored)
    summary["ok"] = graded.ok
    summary["no_gates"] = not graded.gates
    summary["gates"] = dict(sorted(Counter(g.verdict for g in graded.gates).items()))
    prompt_of = {(a.case_id, a.attempt or 1): a.prompt for a in record.attempts if a.prompt}
    by_attempt: dict[tuple[str, str, str], list[str]] = {}
    for line in graded.lines:
        if line["verdict"] != "pass":
            prompt = prompt_of.get((str(line["case_id"]), int(line["attempt"])), "")
            by_attempt.setdefault((line["case_id"], line["case_version"], prompt), []).append(
                f"attempt {line['attempt']} {line['grader']}: {line['verdict']}: {line['reason']}"
            )
    order = {"fail": 0, "error": 1, "pending": 2}
    for reasons in by_attempt.values():
        reasons.sort(key=lambda r: order.get(r.split(": ", 2)[1], 3) if ": " in r else 3)
    failing = [c for c in graded.cases if c.status != "pass"]
    failing.sort(key=lambda c: (risk_rank(c.meta.risk_level), c.meta.case_id))
    out: dict[str, Any] = {
        "schema": SCHEMA,
        "run": {
            "run_id": record.run_id,
            "commit": record.commit,
            "dirty": bool(run.get("dirty", False)),
            "dataset_id": graded.dataset.dataset_id,
            "started_at": run.get("started_at"),
            "ended_at": run.get("ended_at"),
            "graded_at": graded_at or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "redacted": redacted,
        },
        "provenance": {
            "commit": record.commit,
            "dataset_id": graded.dataset.dataset_id,
            "dataset_version": str(dataset.get("version") or graded.dataset.version),
            "dataset_digest": str(dataset.get("digest") or graded.dataset.digest),
            "case_versions": {c.meta.case_id: c.meta.case_version for c in graded.cases},
            "case_digests": {c.meta.case_id: c.meta.digest for c in graded.cases},
            "agent": agent if isinstance(agent, str | Mapping) else None,
            "agent_version": run.get("agent_version")
            or next((a.agent_version for a in record.attempts if a.agent_version), None),
            "evalcase_version": __version__,
            "graders": dict(graded.grader_versions),
            "judges": [{"model": m, "prompt_version": p, "rubric": r} for m, p, r in judges],
            "prompts": dict(run.get("prompts") or {}),
            "rendering": (agent.get("rendering") if isinstance(agent, Mapping) else None),
        },
        "summary": summary,
        "gates": [g.to_dict() for g in graded.gates],
        "slices": slices(graded.cases),
        "cases": [c.to_dict() for c in graded.cases],
        "skipped": [s.to_dict() for s in graded.skipped],
        "failing_cases": [
            {
                "case_id": c.meta.case_id,
                "case_version": c.meta.case_version,
                "risk_level": c.meta.risk_level,
                "status": c.status,
                "observation": c.meta.observation,
                "failure_classes": sorted(set(c.failure_classes)),
                "prompt": c.meta.prompt or None,
                "reasons": by_attempt.get((c.meta.case_id, c.meta.case_version, c.meta.prompt), []),
                **(
                    {"awaiting": w.to_dict()}
                    if (w := waits.get((c.meta.case_id, c.meta.case_version))) is not None
                    else {}
                ),
            }
            for c in failing
        ],
        "usage": dict(graded.usage),
        "calibration": list(graded.calibration),
        "attempts": [
            {
                "case_id": r.case_id,
                "case_version": r.case_version,
                "attempt": r.attempt,
                "verdict": r.verdict,
                "score": r.score,
                "failure_class": r.failure_class,
                "prompt": prompt_of.get((r.case_id, r.attempt)),
            }
            for r in graded.results
        ],
    }
    if audit:
        counts = Counter(audit.values())
        out["audit"] = {
            "cases": dict(sorted(audit.items())),
            "counts": dict(sorted(counts.items())),
        }
    return out
