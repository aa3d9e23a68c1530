"""Human review: which attempts wait for a person, and recording what they decided.

Verdicts go to ``outputs/<commit>/<run_id>/reviews.jsonl`` (one line per decision, who and
when; a later line for the same attempt wins), next to what was reviewed, so that any
re-grade of the run includes them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalcase.grade.readers import JSONValue, ReadError, parse
from evalcase.grade.recorded_run import REVIEWS, RunRecord, read_jsonl
from evalcase.grade.trace_events import messages
from evalcase.model import FatalError


@dataclass(frozen=True)
class ReviewItem:
    case_id: str
    case_version: str
    attempt: int
    question: str
    output: str | None
    criteria: tuple[str, ...]


@dataclass(frozen=True)
class Decision:
    """A person's verdict on one attempt (an item of the review file, or typed in)."""

    case_id: str = ""
    case_version: str = ""
    attempt: int = 0
    verdict: str | None = None  # pass | fail; None: skipped
    reason: str = ""
    reviewed_at: str = ""


@dataclass(frozen=True)
class _Graded:
    """What ``items`` reads of a grades.jsonl line."""

    case_id: str = ""
    case_version: str = ""
    attempt: int = 0
    grader: str = ""
    verdict: str = ""


def items(
    record: RunRecord, grades_path: Path, criteria: Mapping[str, Any] | None = None
) -> list[ReviewItem]:
    """Attempts whose ``human`` grade is pending in the run's latest report."""
    if not grades_path.is_file():
        raise FatalError(f"{grades_path} does not exist: grade the run first (evalcase grade)")
    waiting = set()
    for n, raw in enumerate(read_jsonl(grades_path), 1):
        ln = parse(_Graded, raw)
        if isinstance(ln, ReadError):
            raise FatalError(f"{grades_path}: grade {n}: {ln} (re-grade the run: evalcase grade)")
        if ln.grader == "human" and ln.verdict == "pending":
            waiting.add((ln.case_id, ln.case_version, ln.attempt))
    out = []
    for attempt in record.attempts:
        key = (attempt.case_id, attempt.case_version, attempt.attempt or 1)
        if key not in waiting:
            continue
        question = next(
            (str(m.content) for m in messages(attempt.messages) if m.role == "user"),
            "",
        )
        wanted = tuple(str(c) for c in (criteria or {}).get(key[0], ()))
        out.append(ReviewItem(*key, question, attempt.output, wanted))
    return out


def _decision(raw: Decision | Mapping[str, Any], where: str) -> Decision:
    if isinstance(raw, Decision):
        return raw
    read = parse(Decision, raw)
    if isinstance(read, ReadError):
        raise FatalError(f"{where}: {read}")
    return read


def record(
    run_dir: Path,
    decisions: Iterable[Decision | Mapping[str, Any]],
    reviewer: str,
    *,
    base: Path | None = None,
) -> int:
    """Append decisions ({case_id, case_version, attempt, verdict, reason}); returns how many.
    ``base``: the folder ``run_dir`` is checked from (evalcase.atomic.base_for), else
    ``run_dir`` itself: outputs/ is data, and ``reviews.jsonl`` is appended to without
    following a link anywhere on the way (evalcase.atomic.UnsafePath, nothing written)."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = []
    for n, raw in enumerate(decisions):
        d = _decision(raw, f"decision {n}")
        if d.verdict not in ("pass", "fail"):
            continue
        lines.append(
            json.dumps(
                {
                    "case_id": d.case_id,
                    "case_version": d.case_version,
                    "attempt": d.attempt,
                    "verdict": d.verdict,
                    "reason": d.reason,
                    "reviewer": reviewer,
                    "reviewed_at": d.reviewed_at or now,
                },
                ensure_ascii=False,
            )
        )
    if lines:
        from evalcase import scrub

        lines = [scrub.active().text(line) for line in lines]
        from evalcase.atomic import open_file

        path = run_dir / REVIEWS
        with open_file(path, "a", base=run_dir if base is None else base) as f:
            f.write(("\n".join(lines) + "\n").encode("utf-8"))
    return len(lines)


def export_file(path: Path, pending: list[ReviewItem]) -> None:
    """A file a reviewer edits: set each "verdict" to "pass" or "fail" and add a reason."""
    doc = {
        "instructions": 'Set verdict to "pass" or "fail" (leave null to skip) and give a '
        "reason; then run: evalcase review RUN --import THIS_FILE",
        "items": [
            {
                "case_id": i.case_id,
                "case_version": i.case_version,
                "attempt": i.attempt,
                "question": i.question,
                "output": i.output,
                "criteria": list(i.criteria),
                "verdict": None,
                "reason": "",
            }
            for i in pending
        ],
    }
    from evalcase import scrub

    doc = scrub.active().data(doc)  # the outputs shown to a reviewer are an agent's
    path.write_text(json.dumps(doc, ensure_ascii=False, indent=2) + "\n", "utf-8")


@dataclass(frozen=True)
class _ReviewFile:
    items: JSONValue = None  # a list of Decision objects (export_file writes it)


def import_file(path: Path) -> list[Decision]:
    try:
        doc = json.loads(path.read_text("utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise FatalError(f"{path}: cannot read the review file ({exc})") from exc
    read = parse(_ReviewFile, doc) if isinstance(doc, dict) else None
    entries = read.items if isinstance(read, _ReviewFile) else None
    if not isinstance(entries, list):
        raise FatalError(f"{path}: no 'items' list")
    out = []
    for n, item in enumerate(entries):
        if not isinstance(item, dict):
            continue
        decision = _decision(item, f"{path}: items[{n}]")
        if decision.verdict is None:
            continue
        if decision.verdict not in ("pass", "fail"):
            raise FatalError(f'{path}: items[{n}].verdict must be "pass", "fail" or null')
        out.append(decision)
    return out
