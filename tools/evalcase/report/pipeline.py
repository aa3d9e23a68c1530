"""Grade a recorded run and write its report: what ``evalcase grade`` and ``evalcase run`` do."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from evalcase.atomic import base_for
from evalcase.config import Config
from evalcase.contract.gold import Replayer
from evalcase.grade.context import GradeContext, judge_cache_dir, judge_config_from
from evalcase.grade.gold import GoldStates
from evalcase.grade.recorded_run import GradedRun, RunRecord, grade_run, read_run
from evalcase.grade.tasks import GradingDataset, load_dataset
from evalcase.model import FatalError
from evalcase.report.write import write_report


@dataclass(frozen=True)
class Outcome:
    graded: GradedRun
    report_dir: Path


def context_from(
    config: Config, environ: Mapping[str, str], replayer: Replayer | None = None
) -> GradeContext:
    """The grading context of one run; ``replayer`` (``evalcase.run.gold_replay.replay_expected``,
    given by the command: this layer does not import the runner) computes the gold end
    states of ``final_state_check.from_expected_calls``, once per case."""
    # [grade.judge] is the judge's home; [run.judge] (the runner's placeholder) is read too.
    settings = config.grade.get("judge") or config.run.judge or {}
    work_tree = _work_tree(config.root)
    cache, warning = judge_cache_dir(settings, environ, work_tree)
    judge = judge_config_from(settings, environ, cache, warning)
    gold = GoldStates(replayer) if replayer is not None else None
    return GradeContext(judge=judge, environ=environ, gold=gold)


def _work_tree(root: Path) -> Path:
    """The git work tree holding the case repository (it may be a subfolder), else root."""
    from evalcase import gitio

    top = gitio.find_top(root)
    return top if top is not None else root


def reports_root(config: Config) -> Path:
    return config.root / str(config.grade.get("reports_dir", "reports"))


def grade_and_report(
    config: Config,
    run_dir: Path,
    *,
    redact: bool | None = None,
    environ: Mapping[str, str] | None = None,
    replayer: Replayer | None = None,
    clock: Callable[[], datetime] | None = None,
) -> Outcome:
    """``clock``: the time the grading's ID is made from (a test's own), else now."""
    environ = dict(os.environ) if environ is None else environ
    record = read_run(run_dir)
    if not record.attempts:
        raise FatalError(f"{run_dir}: the run recorded no attempt: nothing to grade")
    dataset_id = record.dataset_id or str(record.attempts[0].legacy.get("dataset_id", ""))
    if not dataset_id:
        raise FatalError(f"{run_dir}/run.json names no dataset")
    commit = record.run.get("commit")
    # A run of a dirty work tree was graded against the work tree; re-grading uses the same.
    at = None if record.run.get("dirty") or not isinstance(commit, str) else commit
    if at is not None:
        from evalcase.versioning.revisions import open_repo

        try:
            at = open_repo(config).rev_parse(at)
        except FatalError as exc:
            raise FatalError(
                f"{run_dir}: the run's commit {at} is not in this repository ({exc}); "
                "grade it where it was run"
            ) from exc
    dataset = load_dataset(config, dataset_id, at)
    graded = grade_run(record, dataset, context_from(config, environ, replayer))
    if redact is None:
        redact = bool(config.grade.get("redact", False))
    out = write_report(
        graded,
        reports_root(config),
        redact=redact,
        environ=environ,
        grade_section=config.grade,
        audit=audit_of(config, record, dataset),
        clock=clock,
        base=base_for(config.root, reports_root(config)),
    )
    return Outcome(graded, out)


def audit_of(config: Config, record: RunRecord, dataset: GradingDataset) -> dict[str, str]:
    """Each run case's audit status, looked up the way lint and ``tag`` do: by the audit key
    of the content that ran (evalcase.audit_facts.store.report_statuses). The dataset the
    run is graded against gives the key of each case whose digest is the one the run
    recorded; a case that changed since (a dirty run) is not audited. {} when the dataset
    was never audited here (no key is computed then)."""
    from evalcase.audit_facts.store import key_for, read_dataset, report_statuses

    cases = record.run.get("cases")
    if not isinstance(cases, Mapping) or read_dataset(config.root, record.dataset_id) is None:
        return {}
    governance = tuple(sorted(config.governance_fields))
    index = dataset.index
    facts = {c.path: c for c in index.cases} if index is not None else {}
    ran: dict[str, str | None] = {}
    for case_id, info in cases.items():
        if not isinstance(info, Mapping):
            continue
        path, digest = dataset.case_digests.get(str(case_id), ("", ""))
        case = facts.get(path)
        ran[str(case_id)] = None  # the content that ran is not the one graded against
        if index is not None and case is not None and digest == info.get("digest"):
            ran[str(case_id)] = key_for(index, case, governance)
    return report_statuses(config.root, record.dataset_id, ran)


def summary_lines(outcome: Outcome) -> list[str]:
    """A short summary table for the terminal."""
    from evalcase.grade.aggregate import rates, slices

    r = rates(outcome.graded.cases)
    damaged = outcome.graded.record.damaged
    warnings = [f"warning: {d}" for d in damaged[:5]]
    if len(damaged) > 5:
        warnings.append(f"warning: … and {len(damaged) - 5} more damaged lines skipped")

    def pct(v: float | None) -> str:
        return "–" if v is None else f"{v * 100:.1f}%"

    lines = [
        *warnings,
        f"{'cases':<10}{'attempts':>10}{'pass@1':>10}{'pass@k':>10}{'pass^k':>10}",
        f"{r['cases']:<10}{r['attempts']:>10}{pct(r['pass@1']):>10}{pct(r['pass@k']):>10}"
        f"{pct(r['pass^k']):>10}",
        "",
    ]
    if r.get("prompts") and r.get("prompt_grid"):
        lines.insert(
            -1,
            f"{r['cases']} cases × {r['prompts']} prompts: {r['case_runs']} case runs "
            "(the rates and the outcomes below are over the case runs; gates per prompt)",
        )
    elif r.get("prompts"):  # each case ran once, some under the prompt fixture they name
        lines.insert(
            -1,
            f"{r['cases']} cases, {r['prompted_cases']} under "
            f"{r['prompts']} prompt{'s' * (r['prompts'] != 1)}",
        )
    by_prompt = slices(outcome.graded.cases)["prompt"]
    if by_prompt:
        lines.insert(-1, "")
        for prompt, rp in by_prompt.items():
            lines.insert(
                -1,
                f"{'prompt ' + prompt:<30}{rp['cases']:>6} cases  pass@1 {pct(rp['pass@1']):>7}"
                f"  pass^k {pct(rp['pass^k']):>7}",
            )
    # Counted cases by status: the same counts as every report's "statuses"; observation
    # cases (shown, never counted) get their own line.
    statuses: dict[str, list[str]] = {}
    observed: list[str] = []
    for case in outcome.graded.cases:
        shown = case.meta.case_id + (f" [{case.meta.prompt}]" if case.meta.prompt else "")
        if case.meta.observation:
            observed.append(f"{shown} {case.status}")
        else:
            statuses.setdefault(case.status, []).append(shown)

    def listed(ids: list[str]) -> str:
        return ", ".join(ids[:6]) + (f", … (+{len(ids) - 6})" if len(ids) > 6 else "")

    for status in ("pass", "fail", "flaky", "error", "pending"):
        ids = statuses.get(status, [])
        if ids:
            note = "  (waiting for a judge or a person)" if status == "pending" else ""
            lines.append(f"{status:<8} {len(ids):>3}  {listed(ids)}{note}")
    lines.extend(pending_lines(outcome))
    if observed:
        lines.append(f"{'observed':<8} {len(observed):>3}  {listed(observed)} (not counted)")
    graded = outcome.graded
    for skip in graded.skipped:
        lines.append(f"skipped       {skip.case_id} ({skip.path}): {skip.why}")
    lines.append("")
    if not graded.gates:
        lines.append("gates: no gates declared (the manifest has none)")
    for gate in graded.gates:
        lines.append(f"gate {gate.name:<22} {gate.verdict.upper():<8} {gate.reason}")
    if graded.errored:
        shown = ", ".join(graded.errored[:6])
        more = f", … (+{len(graded.errored) - 6})" if len(graded.errored) > 6 else ""
        lines.append(
            f"{len(graded.errored)} attempt(s) in error: {shown}{more}; "
            "the run exits 1 until none is"
        )
    if graded.judge_warning:
        lines.append(f"warning: {graded.judge_warning}")
    lines.append("")
    lines.append(f"report: {outcome.report_dir / 'report.html'}{_grading_note(outcome)}")
    return lines


def _grading_note(outcome: Outcome) -> str:
    """Which grading the report shows, and how many earlier ones are kept beside it."""
    from evalcase.report.gradings import list_gradings

    gradings = list_gradings(outcome.report_dir)
    if not gradings:
        return ""
    earlier = len(gradings) - 1
    kept = f"; {earlier} earlier kept in gradings/" if earlier else ""
    return f" (grading {gradings[-1].grading_id}{kept})"


def pending_lines(outcome: Outcome) -> list[str]:
    """Counted pending cases split by what is decided: those that pass every check decided
    so far (still not a pass: the judge or the person may fail them) and those with nothing
    decided yet (evalcase.grade.awaiting)."""
    from evalcase.grade.awaiting import awaiting

    graded = outcome.graded
    counted = [c for c in graded.cases if not c.meta.observation]
    waits = awaiting(counted, graded.results)
    if not waits:
        return []
    ready = sum(1 for w in waits.values() if w.checks_pass)
    undecided = len(waits) - ready
    graders = sorted({g for w in waits.values() for g in w.waiting_for})
    out = [
        f"{'':<8} {ready:>3}  of them pass every check decided so far, waiting for "
        f"{', '.join(graders)}: not counted as pass"
    ]
    if undecided:
        out.append(f"{'':<8} {undecided:>3}  of them have no check decided yet")
    return out


def redact_outputs(run_dir: Path, *, base: Path | None = None) -> None:
    """Mask personal data in a graded run's attempts.jsonl (atomically) and mark the run and
    each attempt as redacted: a later re-grade then reports privacy checks as errors instead
    of passing them on masked text. ``base``: the folder the paths are checked from
    (evalcase.atomic.base_for), so no link under outputs/ is written through."""
    import json

    from evalcase import attempt_check, pii, scrub
    from evalcase.atomic import replacing, write_atomic
    from evalcase.contract import records as strict
    from evalcase.grade.recorded_run import read_jsonl

    scrubber = scrub.active()
    attempts_path = run_dir / "attempts.jsonl"
    records = read_jsonl(attempts_path)
    with replacing(attempts_path, base=base) as handle:
        for record in records:
            masked = {**scrubber.data(pii.redact(record)), "redacted": True}
            attempt_check.check_written(masked)
            handle.write((strict.dumps(masked) + "\n").encode("utf-8"))
    run_json = run_dir / "run.json"
    if run_json.is_file():
        meta = json.loads(run_json.read_text("utf-8"))
        meta = {**scrubber.data(pii.redact(meta)), "redacted": True}
        write_atomic(run_json, strict.dumps(meta, indent=2) + "\n", base=base)
