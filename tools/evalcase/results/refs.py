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
``REF:AGENT``           any of the above, among the runs of agent AGENT only
=====================  ===========================================================

They are tried in this order, so a run ID always means that run. Candidates can be
narrowed to one dataset (``dataset``: ``evalcase compare main latest`` looks for the base
among runs of the dataset ``latest`` ran), to graded runs (``graded``: compare and
the questions across runs need a report) and, for ``compare``, to the runs a comparison
can trust (``usable``, a :class:`Usable`): complete runs (``status: completed``, every
planned attempt recorded, no damaged line), clean ones unless dirty runs are allowed, of
one agent when one is named; ``DATASET@vN`` then also needs the content of the release
tag (the run's dataset digest is the tag's). A run ID or folder always means that run,
dirty or not. A reference that matches nothing is a :class:`~evalcase.model.FatalError`
that says what was looked for and where, and which runs it passed over and why.

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
    dirty: bool = False  # the dataset was read from a work tree with uncommitted changes
    # why the run is not complete ("" when it is): interrupted, attempts missing ...
    incomplete: str = "status unknown"
    dataset_digest: str = ""
    agent_version: str = ""
    select: tuple[str, ...] = ()  # --select patterns
    suites: tuple[str, ...] = ()  # --suite names
    repeat: int = 0  # attempts per case (0: not recorded)

    @property
    def selection(self) -> str:
        """The cases the run chose, as the options said: ``all cases`` or the options."""
        parts = [f"--suite {','.join(self.suites)}"] if self.suites else []
        parts += [f"--select {','.join(self.select)}"] if self.select else []
        return " ".join(parts) or "all cases"

    def describe(self) -> dict[str, Any]:
        """What a comparison's header states of this side."""
        return {
            "run_id": self.run_id,
            "commit": self.commit,
            "dataset_id": self.dataset_id,
            "dataset_version": self.dataset_version,
            "agent": self.agent,
            "agent_version": self.agent_version or None,
            "selection": self.selection,
            "repeat": self.repeat or None,
            "dirty": self.dirty,
            # None: no run folder here to tell (a report whose run folder is gone)
            "complete": None if self.run_dir is None else not self.incomplete,
            "incomplete": self.incomplete or None,
        }

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


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _incomplete(meta: dict[str, Any], run_dir: Path | None) -> str:
    """Why run.json does not show a complete run ("" when it does)."""
    if run_dir is None:
        return "its run folder is not under outputs/"
    status = meta.get("status")
    if status != "completed":
        return f"status {status}" if isinstance(status, str) else "no status in run.json"
    planned = meta.get("planned")
    done = _int(_dict(meta.get("counts")).get("attempts"))
    if isinstance(planned, int) and done < planned:
        return f"{done} of {planned} planned attempts recorded"
    if meta.get("damaged_lines"):
        return "damaged attempt records"
    return ""


def _from_meta(meta: dict[str, Any], run_dir: Path | None, report_dir: Path | None) -> RunRef:
    dataset = _dict(meta.get("dataset"))
    agent = _dict(meta.get("agent"))
    options = _dict(meta.get("options"))
    folder = run_dir or report_dir
    assert folder is not None
    return RunRef(
        str(meta.get("run_id") or folder.name),
        str(meta.get("commit") or folder.parent.name),
        str(dataset.get("id") or meta.get("dataset_id") or ""),
        str(dataset.get("version") or meta.get("dataset_version") or ""),
        str(agent.get("name") or agent.get("spec") or ""),
        str(meta.get("started_at") or ""),
        run_dir,
        report_dir,
        dirty=meta.get("dirty") is not False,
        incomplete=_incomplete(meta, run_dir),
        dataset_digest=str(dataset.get("digest") or meta.get("dataset_digest") or ""),
        agent_version=str(agent.get("version") or meta.get("agent_version") or ""),
        select=_strings(options.get("select")),
        suites=_strings(options.get("suites")),
        repeat=_int(options.get("repeat")),
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


@dataclass(frozen=True)
class Usable:
    """What a reference other than a run ID or folder may pick (``compare``): complete
    runs, clean ones unless ``allow_dirty``, of ``agent`` when one is named."""

    allow_dirty: bool = False
    agent: str | None = None


def _passed_over(run: RunRef, usable: Usable | None, agent: str | None) -> str | None:
    """Why a reference does not pick ``run`` (None when it may)."""
    if agent is not None and run.agent != agent:
        return f"agent {run.agent or '?'}"
    if usable is None:
        return None
    if run.incomplete:
        return f"incomplete: {run.incomplete}"
    if run.dirty and not usable.allow_dirty:
        return "dirty: uncommitted dataset changes, --allow-dirty compares it"
    return None


def _pick(
    what: str,
    chosen: Sequence[RunRef],
    usable: Usable | None,
    agent: str | None,
    *,
    back: int = 0,
    also: Any = None,
    graded: bool = False,
) -> RunRef:
    """The ``back``-th newest of ``chosen`` a reference may pick; else a FatalError that
    names the runs passed over and why (``also``: one more reason, as a function)."""
    fit, over = [], []
    for run in chosen:
        why = _passed_over(run, usable, agent) or (also(run) if also is not None else None)
        if why is None:
            fit.append(run)
        else:
            over.append(f"{run.run_id} ({why})")
    if back < len(fit):
        return fit[-1 - back]
    kind = "" if usable is None else ("complete " if usable.allow_dirty else "clean, complete ")
    kind += "graded " if graded else ""
    of = f" of agent {agent}" if agent is not None else ""
    if back:
        head = f"there are {len(fit)} {kind}run(s){of}{what}, so no run {back} before the newest"
    else:
        head = f"no {kind}run{of}{what}"
    if over:
        shown = "; ".join(over[-5:]) + (f"; and {len(over) - 5} more" if len(over) > 5 else "")
        head += f"; passed over: {shown} (name a run by its ID to compare it anyway)"
    raise FatalError(head)


def resolve(
    ref: str,
    runs: Sequence[RunRef],
    *,
    dataset: str | None = None,
    graded: bool = False,
    rev_parse: Any = None,
    usable: Usable | None = None,
    release_digest: Any = None,
) -> RunRef:
    """The run ``ref`` names (see the module documentation). ``rev_parse`` turns a git
    revision into a full commit hash (or raises FatalError); without it, revisions are
    matched as commit hash prefixes only. ``usable``: only runs a comparison can trust
    (:class:`Usable`); ``release_digest(dataset, version)``: the dataset digest of that
    release tag, or None (then ``DATASET@vN`` goes by the version label alone)."""
    direct = _direct(ref)
    if direct is not None:
        return direct
    for run in runs:
        if run.run_id == ref:
            return run
    agent = usable.agent if usable is not None else None
    if ":" in ref:
        ref, _, named = ref.rpartition(":")
        if not ref or not named:
            raise FatalError(f"'{ref}:{named}': REF:AGENT needs both a reference and an agent")
        agent = named
        for run in runs:
            if run.run_id == ref:
                if run.agent != agent:
                    raise FatalError(f"run {ref} is of agent {run.agent or '?'}, not {agent}")
                return run
    pool = [r for r in runs if (dataset is None or r.dataset_id == dataset)]
    if graded:
        pool = [r for r in pool if r.report_dir is not None]
    kind = " graded" if graded else ""
    scope = f" of dataset {dataset}" if dataset else ""
    if m := _LATEST.fullmatch(ref):
        return _pick(scope, pool, usable, agent, back=int(m.group(1) or 0), graded=graded)
    name, _, version = ref.partition("@")
    if version and any(r.dataset_id == name for r in pool):
        chosen = [r for r in pool if r.dataset_id == name and r.dataset_version == version]
        tagged = None
        if usable is not None and release_digest is not None:
            tagged = release_digest(name, version)

        def untagged(run: RunRef) -> str | None:
            if tagged is None or run.dataset_digest == tagged:
                return None
            return (
                f"content {run.dataset_digest[:12] or '?'} is not the release tag's {tagged[:12]}"
            )

        what = f" of {name} at version {version}"
        return _pick(what, chosen, usable, agent, also=untagged, graded=graded)
    if not version and any(r.dataset_id == ref for r in pool):
        chosen = [r for r in pool if r.dataset_id == ref]
        return _pick(f" of {ref}", chosen, usable, agent, graded=graded)
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
        what = f"{scope} at '{ref}' (commit {commit[:12]})"
        return _pick(what, chosen, usable, agent, graded=graded)
    if _HEX.fullmatch(ref):
        chosen = [r for r in pool if r.commit.startswith(ref)]
        if chosen:
            return _pick(f"{scope} at commit {ref}", chosen, usable, agent, graded=graded)
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


def find(
    config: Config,
    ref: str,
    *,
    dataset: str | None = None,
    graded: bool = False,
    usable: Usable | None = None,
) -> RunRef:
    """:func:`resolve` over the repository's runs, git revisions and release tags resolved
    in its repository (when it is one)."""
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

    def release_digest(dataset_id: str, version: str) -> str | None:
        from evalcase import gitio
        from evalcase.versioning.revisions import releases_of

        if gitio.find_top(config.root) is None:
            return None
        repo = gitio.Repo(config.root)
        try:
            if not repo.has_commits():
                return None
            release = releases_of(config, repo).get(dataset_id, version)
        finally:
            repo.close()
        return release.digest if release is not None else None

    found = _with_run_folder(
        resolve(
            ref,
            runs,
            dataset=dataset,
            graded=graded,
            rev_parse=rev_parse,
            usable=usable,
            release_digest=release_digest,
        ),
        outputs,
    )
    if found.report_dir is None and found.run_dir is not None:
        report_dir = reports / found.commit / found.run_id
        if (report_dir / "report.json").is_file():
            found = replace(found, report_dir=report_dir)
    if graded:
        found.report  # noqa: B018 - raises the clear error when there is no report
    return found


def _with_run_folder(found: RunRef, outputs: Path) -> RunRef:
    """A run named by its report folder, with what its run folder says (when it is here)."""
    run_json = outputs / found.commit / found.run_id / "run.json"
    if found.run_dir is not None or not run_json.is_file():
        return found
    return _from_meta(_json(run_json), run_json.parent, found.report_dir)


def find_pair(
    config: Config, base: str, new: str | None, *, usable: Usable | None = None
) -> tuple[RunRef, RunRef]:
    """The graded runs ``compare BASE NEW`` compares: NEW first, then BASE among the
    runs of NEW's dataset. A FatalError when both are the same grading of the same run,
    however each is named (a run ID, a reference, a grading's folder: a run compared with
    itself shows no change, whatever it did). Without ``new``: BASE
    twice (two prompts of one run)."""
    new_ref = find(config, base if new is None else new, graded=True, usable=usable)
    if new is None:
        return new_ref, new_ref
    base_ref = find(config, base, dataset=new_ref.dataset_id or None, graded=True, usable=usable)
    if base_ref.run_id == new_ref.run_id and _grading(base_ref.report) == _grading(new_ref.report):
        raise FatalError(
            f"BASE '{base}' and NEW '{new}' are the same run, {new_ref.run_id} (commit "
            f"{new_ref.commit[:10]}): a run compared with itself shows no change. Name the "
            "run to compare against (a run ID, latest~1, a branch with its own run)"
        )
    return base_ref, new_ref


def _grading(report: Path) -> str:
    """Which grading a report.json is: its ``grading_id`` (the run's default report.json
    is a copy of its newest grading's), else its own path (a report from before gradings)."""
    grading = _dict(_json(report).get("grading")).get("grading_id")
    return str(grading) if grading else str(report.resolve())
