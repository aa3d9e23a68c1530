"""Grade a recorded run: outputs/<commit>/<run_id>/{run.json, attempts.jsonl} -> figures.

Nothing here calls the agent: re-grading reads only what the runner recorded, plus the
dataset as it was at the run's commit and any human reviews (``reviews.jsonl``).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evalcase.contract import attempt, records
from evalcase.contract.attempt import AttemptRecord
from evalcase.grade.aggregate import CaseFigures, CaseMeta, calibration, usage
from evalcase.grade.context import GradeContext, HumanVerdict
from evalcase.grade.engine import AttemptResult, grade_attempt, grade_lines
from evalcase.grade.gates import GateResult, evaluate_all
from evalcase.grade.model import GraderResult, error
from evalcase.grade.readers import JSONValue, ReadError, parse
from evalcase.grade.tasks import GradingDataset
from evalcase.model import FatalError

REVIEWS = "reviews.jsonl"


@dataclass(frozen=True)
class DatasetRef:
    id: str = ""


@dataclass(frozen=True)
class RunMeta:
    """What grading reads of run.json (evalcase.grade.readers.parse)."""

    run_id: str = ""
    commit: str = ""
    dataset: DatasetRef = DatasetRef()
    dataset_id: str = ""  # older runs
    # case file -> why --skip-invalid did not run it
    skipped: Mapping[str, JSONValue] = field(default_factory=dict)


@dataclass(frozen=True)
class Review:
    """A line of reviews.jsonl (evalcase.grade.human_verdicts.record writes them)."""

    case_id: str = ""
    case_version: str = ""
    attempt: int = 0
    verdict: str = ""
    reviewer: str = ""
    reviewed_at: str = ""
    reason: str = ""


@dataclass(frozen=True)
class RunRecord:
    run_dir: Path
    run: Mapping[str, Any]
    attempts: tuple[AttemptRecord, ...]
    damaged: tuple[str, ...] = ()  # lines of attempts.jsonl skipped as damaged
    meta: RunMeta | None = None  # run.json read once (None: read from ``run`` on demand)

    @property
    def run_meta(self) -> RunMeta:
        if self.meta is not None:
            return self.meta
        meta = parse(RunMeta, self.run)
        return RunMeta() if isinstance(meta, ReadError) else meta

    @property
    def run_id(self) -> str:
        return self.run_meta.run_id or self.run_dir.name

    @property
    def commit(self) -> str:
        return self.run_meta.commit or self.run_dir.parent.name

    @property
    def dataset_id(self) -> str:
        meta = self.run_meta
        return meta.dataset.id or meta.dataset_id


def read_jsonl(path: Path, damaged: list[records.Damaged] | None = None) -> list[dict[str, Any]]:
    """The objects of a JSONL file, read as the runner reads it (split on newlines only;
    a damaged line skipped and appended to ``damaged``; a torn last line dropped)."""
    try:
        return list(records.read_jsonl(path, damaged))
    except OSError as exc:
        raise FatalError(f"{path}: cannot be read ({exc.strerror})") from exc


def find_run(root: Path, run_id: str) -> Path:
    """outputs/<commit>/<run_id>, or a path to a run directory."""
    direct = Path(run_id)
    if (direct / "attempts.jsonl").is_file():
        return direct.resolve()
    found = sorted((root / "outputs").glob(f"*/{run_id}/attempts.jsonl"))
    if not found:
        raise FatalError(
            f"no run '{run_id}' under {root / 'outputs'} (expected "
            f"outputs/<commit>/{run_id}/attempts.jsonl)"
        )
    if len(found) > 1:
        raise FatalError(
            f"run id '{run_id}' is ambiguous: " + ", ".join(str(f.parent) for f in found)
        )
    return found[0].parent


def read_run(run_dir: Path) -> RunRecord:
    run_json = run_dir / "run.json"
    run: dict[str, Any] = {}
    if run_json.is_file():
        try:
            run = json.loads(run_json.read_text("utf-8"))
        except json.JSONDecodeError as exc:
            raise FatalError(f"{run_json}:{exc.lineno}:{exc.colno}: not JSON ({exc.msg})") from exc
    meta = parse(RunMeta, run)
    if isinstance(meta, ReadError):
        raise FatalError(
            f"{run_json}: {meta} (run.json is written by evalcase run: restore it from "
            "the run's folder or object storage)"
        )
    damaged: list[records.Damaged] = []
    attempts = records.dedup(read_jsonl(run_dir / "attempts.jsonl", damaged))
    typed = tuple(attempt.read(a) for a in attempts)
    return RunRecord(run_dir, run, typed, tuple(map(str, damaged)), meta)


def read_reviews(run_dir: Path) -> dict[tuple[str, str, int], HumanVerdict]:
    path = run_dir / REVIEWS
    out: dict[tuple[str, str, int], HumanVerdict] = {}
    if not path.is_file():
        return out
    for n, line in enumerate(
        read_jsonl(path), 1
    ):  # later lines win: a reviewer may change their mind
        review = parse(Review, line)
        if isinstance(review, ReadError):
            raise FatalError(
                f"{path}: review {n}: {review} (evalcase review writes this file: fix or "
                "remove the line)"
            )
        if review.verdict in ("pass", "fail"):
            key = (review.case_id, review.case_version, review.attempt)
            out[key] = HumanVerdict(
                review.verdict, review.reviewer, review.reviewed_at, review.reason
            )
    return out


@dataclass(frozen=True)
class GradedRun:
    record: RunRecord
    dataset: GradingDataset
    results: tuple[AttemptResult, ...]
    lines: tuple[dict[str, Any], ...]
    cases: tuple[CaseFigures, ...]
    gates: tuple[GateResult, ...]
    calibration: tuple[dict[str, Any], ...]
    usage: Mapping[str, Any]
    grader_versions: Mapping[str, str] = field(default_factory=dict)
    # cases --skip-invalid left out of the run: each counts as an error attempt
    skipped: tuple[SkippedCase, ...] = ()
    # why the configured judge cache was not used (it was inside the work tree)
    judge_warning: str | None = None

    @property
    def gates_passed(self) -> bool:
        """No gate that was measured failed or is undecided (a gate whose cases the
        run's selection left out is skipped: it decides nothing)."""
        return all(g.verdict in ("pass", "skipped") for g in self.gates)

    @property
    def errored(self) -> tuple[str, ...]:
        """Attempts (case_id#n) that ended in error: the runner's (agent or environment)
        or a grader's; and every skipped case."""
        bad = {(a.case_id, a.attempt or 1) for a in self.record.attempts if a.errored}
        bad |= {(r.case_id, r.attempt) for r in self.results if r.verdict == "error"}
        out = [f"{case}#{n}" for case, n in sorted(bad)]
        return tuple(out + [f"{s.case_id} (skipped)" for s in self.skipped])

    @property
    def ok(self) -> bool:
        """What the exit status says: every gate passed and no attempt errored."""
        return self.gates_passed and not self.errored


@dataclass(frozen=True)
class SkippedCase:
    """A case ``--skip-invalid`` did not run: where, which, and why."""

    path: str
    case_id: str
    why: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "case_id": self.case_id, "why": self.why}


def skipped_cases(record: RunRecord, dataset: GradingDataset) -> list[tuple[SkippedCase, CaseMeta]]:
    out = []
    for path, whys in sorted(record.run_meta.skipped.items()):
        meta = dataset.unbuilt.get(str(path))
        if meta is None:
            stem = str(path).rsplit("/", 1)[-1].rsplit(".", 1)[0]
            meta = CaseMeta(stem, "?")
        why = "; ".join(str(w) for w in whys) if isinstance(whys, list) else str(whys)
        out.append((SkippedCase(str(path), meta.case_id, why), meta))
    return out


def figures(
    metas: Mapping[tuple[str, str], CaseMeta],
    results: Sequence[AttemptResult],
    prompts: Mapping[tuple[str, int], str] | None = None,
) -> list[CaseFigures]:
    """One row per case and version, and per prompt when attempts ran with prompts
    (``prompts``: (case ID, attempt) -> id@version)."""
    prompts = prompts or {}
    by_case: dict[tuple[str, str, str], list[AttemptResult]] = defaultdict(list)
    for r in results:
        by_case[(r.case_id, r.case_version, prompts.get((r.case_id, r.attempt), ""))].append(r)
    out = []
    for case_id, version, prompt in sorted(by_case):
        attempts = sorted(by_case[(case_id, version, prompt)], key=lambda r: r.attempt)
        key = (case_id, version)
        meta = metas.get(key)
        if meta is None:  # graded against another version of the case: keep its slices
            same = next((m for k, m in metas.items() if k[0] == key[0]), None)
            meta = replace(same, case_version=key[1]) if same else CaseMeta(*key)
        if prompt:
            meta = replace(meta, prompt=prompt)
        out.append(
            CaseFigures(
                meta,
                tuple(a.verdict for a in attempts),
                tuple(a.score for a in attempts),
                tuple(a.failure_class for a in attempts if a.failure_class),
            )
        )
    return out


def _problems(dataset: GradingDataset, case_id: str) -> str:
    found = [f"{path}: {why}" for path, why in dataset.problems.items() if case_id in path]
    return f" (its case file could not be built: {'; '.join(found)})" if found else ""


def judged_by(lines: Sequence[Mapping[str, Any]]) -> dict[str, set[tuple[str, str]]]:
    out: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for line in lines:
        if line.get("judge"):
            out[str(line["case_id"])].add((line["judge"]["rubric"], line["judge"]["model"]))
    return out


def _not_in_dataset(dataset: GradingDataset, record: AttemptRecord) -> AttemptResult:
    return AttemptResult(
        record.case_id,
        record.case_version,
        record.attempt or 1,
        "error",
        0.0,
        "grader_error",
        (
            GraderResult(
                "(none)",
                "0",
                1.0,
                True,
                error(
                    f"case {record.case_id} is not in "
                    f"{dataset.dataset_id} at this commit" + _problems(dataset, record.case_id)
                ),
            ),
        ),
    )


def grade_run(record: RunRecord, dataset: GradingDataset, ctx: GradeContext) -> GradedRun:
    human = {**read_reviews(record.run_dir), **ctx.human}
    ctx = replace(ctx, human=human)

    def one(record: AttemptRecord) -> AttemptResult:
        case = dataset.cases.get(record.case_id)
        if case is None:
            return _not_in_dataset(dataset, record)
        return grade_attempt(case.spec, records.observe(record, case.initial_state), ctx)

    results: list[AttemptResult]
    if ctx.judge.configured and ctx.judge.concurrency > 1 and len(record.attempts) > 1:
        # Judge calls wait on the network: grade attempts on threads, in order.
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(ctx.judge.concurrency, thread_name_prefix="evalcase-grade") as pool:
            results = list(pool.map(one, record.attempts))
    else:
        results = [one(attempt) for attempt in record.attempts]
    lines = [line for r in results for line in grade_lines(r)]
    metas = {(c.meta.case_id, c.meta.case_version): c.meta for c in dataset.cases.values()}
    prompts = {(a.case_id, a.attempt or 1): a.prompt for a in record.attempts if a.prompt}
    cases = figures(metas, results, prompts)
    skipped = skipped_cases(record, dataset)
    run_cases = {c.meta.case_id for c in cases}
    # A skipped case is an error in every gate that selects it: it was not shown to pass.
    cases += [
        CaseFigures(meta, ("error",), (0.0,), ())
        for _, meta in skipped
        if meta.case_id not in run_cases
    ]
    calib = calibration(lines)
    # Every case of the dataset, unrun: a gate whose cases the run's selection left out
    # is skipped, not an error.
    universe = [CaseFigures(meta, (), (), ()) for meta in metas.values()]
    gates = evaluate_all(dataset.manifest, cases, calib, judged_by(lines), universe)
    versions = {str(ln["grader"]): str(ln["grader_version"]) for ln in lines}
    return GradedRun(
        record,
        dataset,
        tuple(results),
        tuple(lines),
        tuple(cases),
        tuple(gates),
        tuple(calib),
        usage(record.attempts),
        dict(sorted(versions.items())),
        tuple(s for s, _ in skipped),
        ctx.judge.cache_warning,
    )
