"""Run references: every command that takes a RUN takes any of these.

=====================  ===========================================================
``20261202T031500Z-a1b2c3``  a run ID (``outputs/<commit>/<run_id>/``)
``outputs/<c>/<id>``    a run folder, a report folder or a report.json path
``latest``              the newest run (by its start time)
``latest~N``            the N-th run before the newest (``latest~0`` is ``latest``)
``DATASET@vN``          the newest run of that dataset version (the release tag's)
``DATASET``             the newest run of that dataset
``main``, ``HEAD~2``,   a branch, tag or commit (a full or abbreviated hash): the
``3f18d1a``             newest run made at that commit
=====================  ===========================================================

They are tried in this order, so a run ID always means that run. Candidates can be
narrowed to one dataset (``dataset``: ``evalcase compare main latest`` looks for the base
among runs of the dataset ``latest`` ran) and to graded runs (``graded``: compare and
the questions across runs need a report). A reference that matches nothing is a
:class:`~evalcase.model.FatalError` that says what was looked for and where.

The runs are listed from their folders (``run.json`` only: cheap, and the folders are the
facts), not from the results store, so references work without the store's extra.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcase.model import FatalError

if TYPE_CHECKING:
    from evalcase.config import Config

_LATEST = re.compile(r"latest(?:~(\d+))?")
_HEX = re.compile(r"[0-9a-f]{7,40}")


@dataclass(frozen=True)
class RunRef:
    """One run, as its folders tell it."""

    run_id: str
    commit: str
    dataset_id: str
    dataset_version: str
    agent: str
    started_at: str
    run_dir: Path | None  # outputs/<commit>/<run_id>, when it is there
    report_dir: Path | None  # reports/<commit>/<run_id>, when the run was graded

    @property
    def report(self) -> Path:
        """The run's default report.json; a FatalError when it was never graded."""
        if self.report_dir is None or not (self.report_dir / "report.json").is_file():
            raise FatalError(
                f"run {self.run_id} has no report (run `evalcase grade {self.run_id}` first)"
            )
        return self.report_dir / "report.json"


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _from_meta(meta: dict[str, Any], run_dir: Path | None, report_dir: Path | None) -> RunRef:
    dataset = meta.get("dataset") if isinstance(meta.get("dataset"), dict) else {}
    agent = meta.get("agent") if isinstance(meta.get("agent"), dict) else {}
    folder = run_dir or report_dir
    assert folder is not None
    return RunRef(
        str(meta.get("run_id") or folder.name),
        str(meta.get("commit") or folder.parent.name),
        str((dataset or {}).get("id") or meta.get("dataset_id") or ""),
        str((dataset or {}).get("version") or meta.get("dataset_version") or ""),
        str((agent or {}).get("name") or (agent or {}).get("spec") or ""),
        str(meta.get("started_at") or ""),
        run_dir,
        report_dir,
    )


def list_runs(outputs: Path, reports: Path) -> list[RunRef]:
    """Every run under ``outputs`` (and every report under ``reports`` whose run folder
    is gone), oldest first."""
    found: dict[str, RunRef] = {}
    for run_json in outputs.glob("*/*/run.json") if outputs.is_dir() else ():
        run_dir = run_json.parent
        report_dir = reports / run_dir.parent.name / run_dir.name
        ref = _from_meta(
            _json(run_json), run_dir, report_dir if (report_dir / "report.json").is_file() else None
        )
        found[ref.run_id] = ref
    for report_json in reports.glob("*/*/report.json") if reports.is_dir() else ():
        if report_json.parent.name in found:
            continue
        report = _json(report_json)
        run = report.get("run") if isinstance(report.get("run"), dict) else {}
        prov = report.get("provenance") if isinstance(report.get("provenance"), dict) else {}
        meta = {**(run or {}), "dataset_version": (prov or {}).get("dataset_version")}
        ref = _from_meta(meta, None, report_json.parent)
        found.setdefault(ref.run_id, ref)
    return sorted(found.values(), key=lambda r: (r.started_at, r.run_id))


def resolve(
    ref: str,
    runs: Sequence[RunRef],
    *,
    dataset: str | None = None,
    graded: bool = False,
    rev_parse: Any = None,
) -> RunRef:
    """The run ``ref`` names (see the module documentation). ``rev_parse`` turns a git
    revision into a full commit hash (or raises FatalError); without it, revisions are
    matched as commit hash prefixes only."""
    direct = _direct(ref)
    if direct is not None:
        return direct
    for run in runs:
        if run.run_id == ref:
            return run
    pool = [r for r in runs if (dataset is None or r.dataset_id == dataset)]
    if graded:
        pool = [r for r in pool if r.report_dir is not None]
    kind = " graded" if graded else ""
    scope = f" of dataset {dataset}" if dataset else ""
    if m := _LATEST.fullmatch(ref):
        back = int(m.group(1) or 0)
        if back >= len(pool):
            raise FatalError(
                f"'{ref}': there are {len(pool)}{kind} run(s){scope}, so no run {back} before "
                "the newest"
            )
        return pool[-1 - back]
    name, _, version = ref.partition("@")
    if version and any(r.dataset_id == name for r in pool):
        chosen = [r for r in pool if r.dataset_id == name and r.dataset_version == version]
        if not chosen:
            raise FatalError(f"no{kind} run of {name} at version {version}")
        return chosen[-1]
    if not version and any(r.dataset_id == ref for r in pool):
        return [r for r in pool if r.dataset_id == ref][-1]
    commit = None
    if rev_parse is not None:
        try:
            commit = str(rev_parse(ref))
        except FatalError:
            commit = None
    if commit is not None:
        chosen = [r for r in pool if r.commit == commit]
        if not chosen:
            raise FatalError(
                f"'{ref}' is commit {commit[:12]}, which has no{kind} run{scope}: run it "
                "there first (`evalcase run DATASET` on that commit)"
            )
        return chosen[-1]
    if _HEX.fullmatch(ref):
        chosen = [r for r in pool if r.commit.startswith(ref)]
        if chosen:
            return chosen[-1]
    raise FatalError(
        f"no{kind} run{scope} '{ref}': not a run ID, latest[~N], DATASET[@vN], branch, tag or "
        "commit with a run (`evalcase runs` lists them)"
    )


def _direct(ref: str) -> RunRef | None:
    """A path: a run folder, a report folder or a report.json."""
    path = Path(ref)
    if "/" not in ref and not path.exists():
        return None
    if path.is_file() and path.name == "report.json":
        path = path.parent
    if (path / "attempts.jsonl").is_file():
        meta = _json(path / "run.json")
        return _from_meta(meta, path.resolve(), None)
    if (path / "report.json").is_file():
        report = _json(path / "report.json")
        run = report.get("run") if isinstance(report.get("run"), dict) else {}
        return _from_meta(dict(run or {}), None, path.resolve())
    return None


def folders(config: Config) -> tuple[Path, Path]:
    """The configuration's outputs and reports folders."""
    outputs = Path(config.run.outputs_dir)
    reports = Path(str(config.grade.get("reports_dir", "reports")))
    return (
        outputs if outputs.is_absolute() else config.root / outputs,
        reports if reports.is_absolute() else config.root / reports,
    )


def find(config: Config, ref: str, *, dataset: str | None = None, graded: bool = False) -> RunRef:
    """:func:`resolve` over the repository's runs, git revisions resolved in its
    repository (when it is one)."""
    outputs, reports = folders(config)
    runs = list_runs(outputs, reports)

    def rev_parse(rev: str) -> str:
        from evalcase import gitio

        if gitio.find_top(config.root) is None:
            raise FatalError(f"{config.root} is not a git repository")
        repo = gitio.Repo(config.root)
        try:
            return repo.rev_parse(rev)
        finally:
            repo.close()

    found = resolve(ref, runs, dataset=dataset, graded=graded, rev_parse=rev_parse)
    if found.report_dir is None and found.run_dir is not None:
        report_dir = reports / found.commit / found.run_id
        if (report_dir / "report.json").is_file():
            found = replace(found, report_dir=report_dir)
    if graded:
        found.report  # noqa: B018 - raises the clear error when there is no report
    return found
