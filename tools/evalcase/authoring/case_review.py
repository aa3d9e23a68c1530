"""Recording a review of a case: `evalcase review-case`.

A review record says who reviewed, with what result, for which views, and exactly what
was judged: the ``case_id``, the ``case_version`` and the ``content_digest`` of the case's
execution and judging fields, all read from the case itself, never typed by hand. An
approval holds for that case and that content only: a record copied into another case,
or a case edited after its review without a ``case_version`` bump, no longer matches
and lint says so (EC419); after a bump the approval is stale (EC411).

The record is appended to ``metadata.review_records`` and ``metadata.review_status`` is
set to what the record decided (approved, rejected or needs_revision), so the two never
disagree. The file is written in ``evalcase fmt``'s canonical layout (comments and
quoting are kept), so ``fmt --check`` passes on it.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalcase.config import Config
from evalcase.model import FatalError

RESULTS = ("approved", "rejected", "needs_revision")
VIEWS = (
    "golden",
    "iteration",
    "risk",
    "regression",
    "observation",
    "hard_case",
    "red_team",
    "human_review_only",
)


@dataclass(frozen=True)
class ReviewRecord:
    """What was written, and where."""

    path: str
    case_id: str
    case_version: str
    record: dict[str, Any]


def merge_views(values: tuple[str, ...]) -> tuple[str, ...]:
    """The views of every ``--for`` given (each comma separated), in the order first
    named, each once: ``--for golden --for regression`` approves both. No two views
    contradict each other (an approval may cover any set of them), so nothing given is
    dropped."""
    seen: dict[str, None] = {}
    for value in values:
        for view in value.split(","):
            if view.strip():
                seen.setdefault(view.strip(), None)
    return tuple(seen)


def record_review(
    config: Config,
    path: str,
    *,
    reviewer: str,
    result: str,
    approved_for: tuple[str, ...] = (),
    issue_type: str | None = None,
    required_fix: str | None = None,
    reviewed_at: str | None = None,
) -> ReviewRecord:
    """Append a review record for the case at ``path`` (relative to the root or
    absolute), stating the case's current case_version. FatalError on bad input."""
    from evalcase.files import classify
    from evalcase.loader import load
    from evalcase.model import FileKind
    from evalcase.yamlwrite import append_to_list

    file = Path(path)
    if not file.is_absolute():
        file = (Path.cwd() / file) if (Path.cwd() / file).exists() else config.root / file
    try:
        rel = file.resolve().relative_to(config.root.resolve()).as_posix()
    except ValueError:
        raise FatalError(f"{path} is outside the repository ({config.root})") from None
    if classify(rel)[0] is not FileKind.CASE:
        raise FatalError(f"{rel} is not a case file (datasets/<dataset_id>/cases/*.yaml)")
    if not reviewer.strip():
        raise FatalError("--reviewer must name the person or reviewing role")
    if result not in RESULTS:
        raise FatalError(f"--result must be one of {', '.join(RESULTS)}, not {result!r}")
    unknown = [v for v in approved_for if v not in VIEWS]
    if unknown:
        raise FatalError(f"--for: unknown view {unknown[0]!r}; views: {', '.join(VIEWS)}")
    if approved_for and result != "approved":
        raise FatalError("--for names what an approval covers: use it with --result approved")
    if result == "approved" and not approved_for:
        raise FatalError("an approval names the views it covers: add --for (e.g. regression)")
    date = reviewed_at or _dt.date.today().isoformat()
    try:
        _dt.date.fromisoformat(date)
    except ValueError:
        raise FatalError(f"--date {date!r} is not a real date (YYYY-MM-DD)") from None
    try:
        text = file.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FatalError(f"cannot read {rel}: {exc}") from None
    doc = load(rel, text.encode("utf-8"))
    data = doc.data if doc.ok and isinstance(doc.data, dict) else None
    if data is None:
        raise FatalError(f"{rel} does not parse as a case: run `evalcase lint {rel}`")
    version = data.get("case_version")
    case_id = data.get("case_id")
    if not isinstance(version, str) or not isinstance(case_id, str):
        raise FatalError(f"{rel} has no case_id or case_version: a review judges one version")
    if not isinstance(data.get("metadata"), dict):
        raise FatalError(f"{rel} has no metadata mapping to hold review records")
    if "review_records" in data["metadata"] and not isinstance(
        data["metadata"]["review_records"], list
    ):
        raise FatalError(f"{rel}: metadata.review_records is not a list")
    from evalcase.index.digest import reviewed_content_digest

    record: dict[str, Any] = {
        "reviewer": reviewer.strip(),
        "review_result": result,
        "case_id": case_id,
        "case_version": version,
        "content_digest": reviewed_content_digest(data, config.governance_fields),
        "reviewed_at": date,
    }
    if issue_type:
        record["issue_type"] = issue_type
    if required_fix:
        record["required_fix"] = required_fix
    if approved_for:
        record["approved_for"] = list(approved_for)
    new_text = _with_status(append_to_list(text, ("metadata", "review_records"), record), result)
    after = load(rel, new_text.encode("utf-8"))
    if not after.ok or after.get(("metadata", "review_status")) != result:
        raise FatalError(f"{rel}: cannot write the review (please report this file)")
    file.write_text(new_text, "utf-8")
    return ReviewRecord(rel, case_id, version, record)


def _with_status(text: str, status: str) -> str:
    """``text`` with metadata.review_status set to ``status``, in fmt's canonical layout
    (so the next commit's ``fmt --check`` does not rewrite what review-case wrote)."""
    from evalcase.authoring.fmt import canonicalize, format_text
    from evalcase.model import FileKind
    from evalcase.yamlwrite import round_trip_dump, round_trip_load

    data = round_trip_load(text)
    data["metadata"]["review_status"] = status
    canonicalize(data, FileKind.CASE)
    out = round_trip_dump(data)
    formatted, error = format_text(out, "datasets/x/cases/x.yaml")
    return out if error is not None else formatted
