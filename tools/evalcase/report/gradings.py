"""Gradings are versioned, never overwritten.

Each ``evalcase grade RUN`` (and the grading ``evalcase run`` and ``evalcase review`` do)
adds one grading beside the earlier ones::

    reports/<commit>/<run_id>/
      gradings/<grading_id>/grading.json      who graded how: id, time, configuration digest,
                                              grader versions, judge models and prompt versions
      gradings/<grading_id>/grades.jsonl      the grading's files, as written that time
      gradings/<grading_id>/report.json|md|html
      grading.json, grades.jsonl, report.*    a copy of the newest grading: the default,
                                              at the paths reports always had

A grading ID sorts by time, to the microsecond, and a sequence number
(``20261202T031500_123456Z-0003``: the run's third grading). Both are chosen under the
lock on the run's report folder (below): the time is the clock's, or one microsecond
after the newest earlier grading's when the clock is not ahead of it (two gradings in one
microsecond, a clock set back), and the sequence one more than the newest earlier one's.
So a grading made after another always sorts after it, and the newest grading is the last
one: gradings are ordered by ``(graded_at, grading_id)``, never by chance. IDs from before
(``20261202T031500Z-1a2b3c``: seconds and a random suffix) are read as they are, with
sequence 0; within one second they order by their suffix, which is why new IDs have none.

A re-grade while the judge was down adds a grading full of
``grader_error``; the good one before it stays in ``gradings/`` (and in the results
store), and every report says which grading it shows (``grading`` in report.json, the
header line of report.md and report.html).

Two gradings of one run at once (two CI jobs, a `grade` beside a `review`) each add their
folder; a grading is made, from its ID to its default copy, under a lock on the run's
report folder (``.default.lock``), and the default copy is written only by the newest
grading, so it is always one grading's files whole, the newest's.

A report written before gradings were versioned has no ``gradings/`` folder: it is read as
one grading with the ID ``unversioned``.

The configuration digest (``config_digest``) covers what decides verdicts besides the
attempts: each grader's version, the judges (model, prompt version) the grading asked, and
the ``[grade]`` section of the configuration. Two gradings with the same digest of the same
run should agree; verdicts that differ under different digests are the graders' doing, not
the agent's (``evalcase flaky`` keeps them apart).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

GRADINGS_DIR = "gradings"
GRADING_FILE = "grading.json"
UNVERSIONED = "unversioned"


@dataclass(frozen=True)
class Grading:
    """One grading of a run: where its files are and how it was made."""

    grading_id: str
    graded_at: str
    config_digest: str
    graders: Mapping[str, str]
    judges: tuple[Mapping[str, str], ...]
    path: Path  # the folder holding its report.json and grades.jsonl

    def to_dict(self) -> dict[str, Any]:
        return {
            "grading_id": self.grading_id,
            "graded_at": self.graded_at,
            "config_digest": self.config_digest,
            "graders": dict(self.graders),
            "judges": [dict(j) for j in self.judges],
        }


# New IDs: time to the microsecond and a sequence; IDs of before: seconds and a random suffix.
_ID = re.compile(r"(\d{8}T\d{6})(?:_(\d{6})Z-(\d{4,})|Z-[0-9a-f]+)")
_ID_TIME = "%Y%m%dT%H%M%S"


def id_parts(grading_id: str) -> tuple[datetime, int] | None:
    """The time and sequence number of a grading ID (sequence 0 and whole seconds for the
    IDs of before: ``20261202T031500Z-1a2b3c``); None for another name (``unversioned``)."""
    match = _ID.fullmatch(grading_id)
    if match is None:
        return None
    try:
        when = datetime.strptime(match.group(1), _ID_TIME).replace(tzinfo=UTC)
    except ValueError:
        return None
    if match.group(2) is None:
        return when, 0
    return when.replace(microsecond=int(match.group(2))), int(match.group(3))


def new_grading_id(earlier: Sequence[str] = (), now: datetime | None = None) -> str:
    """The ID of a new grading of a run whose gradings are ``earlier`` (their IDs, read
    under the run's lock): later than every one of them, whatever the clock says (module
    documentation). ``now``: the clock's time (a test gives its own)."""
    when = (now or datetime.now(UTC)).astimezone(UTC)
    sequence = 0
    for parts in filter(None, (id_parts(g) for g in earlier)):
        if parts[0] >= when:
            when = parts[0] + timedelta(microseconds=1)
        sequence = max(sequence, parts[1])
    return f"{when.strftime(_ID_TIME)}_{when.microsecond:06d}Z-{sequence + 1:04d}"


def graded_at_of(grading_id: str) -> str:
    """The ``graded_at`` of a grading with this ID (to the second, as reports show it):
    the same time, so ``(graded_at, grading_id)`` orders gradings as their IDs do."""
    parts = id_parts(grading_id)
    when = parts[0] if parts is not None else datetime.now(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def order_key(grading: Grading) -> tuple[str, str]:
    """The one order of a run's gradings, oldest first (the results store sorts the same
    columns the same way)."""
    return (grading.graded_at, grading.grading_id)


def config_digest(
    graders: Mapping[str, str], judges: Sequence[Mapping[str, str]], grade_section: Any
) -> str:
    """What decides verdicts besides the attempts (see the module's documentation)."""
    blob = json.dumps(
        {
            "graders": dict(sorted(graders.items())),
            "judges": sorted((str(j.get("model")), str(j.get("prompt_version"))) for j in judges),
            "grade": grade_section,
        },
        sort_keys=True,
        default=str,
    ).encode()
    return hashlib.blake2b(blob, digest_size=8).hexdigest()


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _from_meta(meta: Mapping[str, Any], folder: Path) -> Grading:
    judges = meta.get("judges")
    graders = meta.get("graders")
    return Grading(
        str(meta.get("grading_id") or folder.name),
        str(meta.get("graded_at") or ""),
        str(meta.get("config_digest") or ""),
        {str(k): str(v) for k, v in graders.items()} if isinstance(graders, dict) else {},
        tuple(
            {str(k): str(v) for k, v in j.items()}
            for j in (judges if isinstance(judges, list) else ())
            if isinstance(j, dict)
        ),
        folder,
    )


def list_gradings(report_dir: Path) -> list[Grading]:
    """Every grading of one run's report folder, oldest first (the last is the default).
    A folder from before gradings were versioned is one grading, ``unversioned``."""
    out = []
    root = report_dir / GRADINGS_DIR
    if root.is_dir():
        for folder in sorted(p for p in root.iterdir() if p.is_dir() and "." not in p.name):
            meta = _read(folder / GRADING_FILE)
            if meta is not None and (folder / "report.json").is_file():
                out.append(_from_meta(meta, folder))
    if not out and (report_dir / "report.json").is_file():
        report = _read(report_dir / "report.json") or {}
        run = report.get("run") if isinstance(report.get("run"), dict) else {}
        prov = report.get("provenance") if isinstance(report.get("provenance"), dict) else {}
        out.append(
            Grading(
                UNVERSIONED,
                str((run or {}).get("graded_at") or ""),
                "",
                dict((prov or {}).get("graders") or {}),
                tuple((prov or {}).get("judges") or ()),
                report_dir,
            )
        )
    return sorted(out, key=order_key)


def find_grading(report_dir: Path, grading_id: str) -> Grading | None:
    """One grading by its ID (or a unique prefix of it)."""
    found = [g for g in list_gradings(report_dir) if g.grading_id.startswith(grading_id)]
    return found[0] if len(found) == 1 else None
