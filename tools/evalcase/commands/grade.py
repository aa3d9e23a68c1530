"""`evalcase grade`, `compare`, `review` and `calibrate`: thin wrappers over evalcase.grade
and evalcase.report. Exit status: 0 all gates pass and no attempt erred, 1 a gate did not
pass or an attempt ended in error (or, for compare
with --fail-on-regression, a case regressed), 2 usage or fatal error."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from evalcase.commands.common import EXIT_FINDINGS, config_for, fatal_errors, root_option

if TYPE_CHECKING:
    from evalcase.config import Config
    from evalcase.contract.gold import Replayer


def _replayer(config: Config) -> Replayer:
    """The runner's replay of expected calls (the gold of from_expected_calls checks),
    with the configuration's tool handlers; imported only when a run is graded."""
    from evalcase.run.gold_replay import configured

    return configured(config.raw.get("run") or {})


redact_option = click.option(
    "--redact/--no-redact",
    default=None,
    help="Mask personal data (phones, ID and card numbers, emails, addresses) in what is "
    "written to reports/ (default: [grade] redact).",
)


def _run_dir(config: Config, ref: str) -> Path:
    """The run folder a RUN reference names (evalcase.results.refs)."""
    from evalcase.model import FatalError
    from evalcase.results.refs import find

    found = find(config, ref)
    if found.run_dir is None:
        raise FatalError(f"run {found.run_id} has a report but no run folder under outputs/")
    return found.run_dir


@click.command("grade")
@click.argument("run_id")
@redact_option
@root_option
@fatal_errors
def grade_command(run_id: str, redact: bool | None, root: str | None) -> None:
    """Re-grade the recorded outputs of RUN_ID (the agent is not called): a new grading in
    reports/<commit>/<run_id>/gradings/<grading_id>/, beside the earlier ones, and the
    run's default report. Exit 1 when a release gate does not pass or any attempt ended
    in error (the agent's, the environment's or a grader's), gates declared or not.
    RUN_ID is a run reference: latest, latest~N, DATASET@vN, a branch or commit..."""
    from evalcase.report.pipeline import grade_and_report, summary_lines

    config = config_for(root)
    outcome = grade_and_report(
        config, _run_dir(config, run_id), redact=redact, replayer=_replayer(config)
    )
    _index(config)
    click.echo("\n".join(summary_lines(outcome)))
    if not outcome.graded.ok:
        sys.exit(EXIT_FINDINGS)


@click.command("compare")
@click.argument("base")
@click.argument("new", required=False)
@click.option(
    "--prompts",
    "prompts",
    default=None,
    metavar="A,B",
    help="Compare prompt A's attempts (in BASE) with prompt B's (in NEW, default BASE): "
    "which cases prompt B fixed or regressed.",
)
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text")
@click.option(
    "--fail-on-regression",
    is_flag=True,
    help="Exit 1 when a case regressed (beyond its repeats' noise; a case whose content "
    "changed is `case changed`, a change within noise is neither).",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="With repeats: the largest one-sided Fisher p-value that still calls a case's "
    "change regressed or fixed (docs/grading.md).",
)
@click.option(
    "--require-same-content",
    is_flag=True,
    help="Refuse (exit 2) when the two runs graded different dataset content (digests).",
)
@click.option(
    "--common",
    is_flag=True,
    help="Compare the cases both runs ran, when their case sets differ (else exit 2), and "
    "say how many were left out on each side.",
)
@click.option(
    "--agent",
    "agent",
    default=None,
    metavar="NAME",
    help="References pick only runs of this agent, on both sides (REF:AGENT picks per side).",
)
@click.option(
    "--allow-dirty",
    is_flag=True,
    help="Let references pick dirty runs (made with uncommitted dataset changes) too; a run "
    "named by its ID is compared dirty or not.",
)
@root_option
@fatal_errors
def compare_command(
    base: str,
    new: str | None,
    prompts: str | None,
    output_format: str,
    fail_on_regression: bool,
    alpha: float,
    require_same_content: bool,
    common: bool,
    agent: str | None,
    allow_dirty: bool,
    root: str | None,
) -> None:
    """Compare two graded runs case by case, or two prompts of one run (--prompts A,B).

    BASE and NEW are run references: a run ID, latest, latest~N, DATASET@vN, DATASET, a
    branch, tag or commit (its newest graded run), or a report folder (one grading:
    reports/<commit>/<run_id>/gradings/<grading_id>); REF:AGENT narrows a reference to
    one agent's runs. `evalcase compare main latest` compares the newest run with the
    newest run of the same dataset on main. A reference picks only clean, complete runs
    (--allow-dirty: dirty ones too); a run ID means that run. Exit 2, saying why, when
    BASE and NEW are the same run or ran different cases (--common: the shared ones).
    With repeats, a case is regressed only beyond what its repeats allow (--alpha)."""
    from evalcase.grade.recorded_run import read_jsonl
    from evalcase.report.compare import (
        compare,
        describe_side,
        for_prompt,
        grader_verdicts,
        read_report,
    )
    from evalcase.results.refs import Usable, find_pair

    config = config_for(root)
    if new is None and prompts is None:
        raise click.UsageError("name a NEW run, or compare two prompts of BASE with --prompts A,B")
    usable = Usable(allow_dirty=allow_dirty, agent=agent)
    base_ref, new_ref = find_pair(config, base, new, usable=usable)
    base_path, new_path = base_ref.report, new_ref.report
    base_report = read_report(base_path)
    new_report = base_report if new is None else read_report(new_path)
    # Grader-level verdicts (the report's sibling grades.jsonl) let a pending case regress.
    grades = [
        grader_verdicts(read_jsonl(p.parent / "grades.jsonl"))
        if prompts is None and (p.parent / "grades.jsonl").is_file()
        else None
        for p in (base_path, new_path)
    ]
    if prompts is not None:
        pair = [p.strip() for p in prompts.split(",")]
        if len(pair) != 2 or not all(pair):
            raise click.UsageError(f"--prompts takes two prompt IDs, as in a,b (got {prompts!r})")
        base_report, new_report = for_prompt(base_report, pair[0]), for_prompt(new_report, pair[1])
    result = compare(
        base_report,
        new_report,
        require_same_content=require_same_content,
        base_grades=grades[0],
        new_grades=grades[1],
        alpha=alpha,
        common=common,
        sides=(base_ref.describe(), new_ref.describe()),
    )
    if output_format == "json":
        click.echo(json.dumps(result.to_dict(), ensure_ascii=False, indent=1))
    else:
        for warning in result.warnings:
            click.secho(f"WARNING: {warning}", fg="red", bold=True, err=True)
        click.echo(
            f"base {result.base['run_id']} ({str(result.base['commit'])[:10]})  ->  "
            f"new {result.new['run_id']} ({str(result.new['commit'])[:10]})"
        )
        click.echo(f"  base: {describe_side(result.base)}")
        click.echo(f"  new:  {describe_side(result.new)}")
        if result.left_out:
            shared = len(result.still_passing + result.still_failing + result.regressed
                         + result.fixed + result.within_noise + result.changed_cases
                         + result.pending)  # fmt: skip
            click.echo(
                f"--common: compared the {shared} case(s) both runs ran; left out "
                f"{len(result.left_out['base'])} only in BASE and "
                f"{len(result.left_out['new'])} only in NEW"
            )
        for title, ids in (
            ("regressed", result.regressed),
            ("fixed", result.fixed),
            ("still failing", result.still_failing),
            ("changed within noise", result.within_noise),
            ("case changed", result.changed_cases),
            ("pending (undecided)", result.pending),
            *(
                (
                    ("left out, only in BASE", result.left_out["base"]),
                    ("left out, only in NEW", result.left_out["new"]),
                )
                if result.left_out
                else ()
            ),
        ):
            click.echo(f"{title} ({len(ids)})" + (": " + ", ".join(ids) if ids else ""))
        click.echo("change per slice (pass@1):")
        for key, rows in result.slices.items():
            for value, row in rows.items():
                if row["change"]:
                    click.echo(
                        f"  {key}={value}: {row['base']:.2f} -> {row['new']:.2f} "
                        f"({row['change']:+.2f})"
                    )
        for case, row in result.noise.items():
            click.echo(
                f"  {case}: {row['base']} -> {row['new']} passing, p={row['p']:.3g}: "
                f"{str(row['verdict']).replace('_', ' ')}"
            )
    if fail_on_regression and result.regressed:
        sys.exit(EXIT_FINDINGS)


def _reviewer(given: str | None) -> str:
    return given or os.environ.get("EVALCASE_REVIEWER") or os.environ.get("USER") or "unknown"


@click.command("review")
@click.argument("run_id")
@click.option("--reviewer", default=None, help="Who reviews (default: $EVALCASE_REVIEWER, $USER).")
@click.option(
    "--export",
    "export_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the pending items to a file to edit instead of asking here.",
)
@click.option(
    "--import",
    "import_path",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="Record the verdicts of an edited review file.",
)
@root_option
@fatal_errors
def review_command(
    run_id: str,
    reviewer: str | None,
    export_path: str | None,
    import_path: str | None,
    root: str | None,
) -> None:
    """Record human verdicts for the attempts of RUN_ID whose `human` grader is pending,
    then re-grade the run so the report includes them."""
    from evalcase.grade import human_verdicts
    from evalcase.grade.recorded_run import read_run
    from evalcase.report.pipeline import grade_and_report, reports_root, summary_lines

    config = config_for(root)
    run_dir = _run_dir(config, run_id)
    record = read_run(run_dir)
    who = _reviewer(reviewer)
    if import_path:
        decisions = human_verdicts.import_file(Path(import_path))
    else:
        grades = reports_root(config) / record.commit / record.run_id / "grades.jsonl"
        pending = human_verdicts.items(record, grades)
        if not pending:
            click.echo("nothing waits for review in this run")
            return
        if export_path:
            human_verdicts.export_file(Path(export_path), pending)
            click.echo(
                f"wrote {len(pending)} item(s) to {export_path}; edit it, then run "
                f"evalcase review {run_id} --import {export_path}"
            )
            return
        decisions = []
        for n, item in enumerate(pending, 1):
            click.echo(
                f"\n[{n}/{len(pending)}] {item.case_id} {item.case_version} attempt {item.attempt}"
            )
            click.echo(f"user:   {item.question}")
            click.echo(f"answer: {item.output}")
            choice = click.prompt(
                "verdict (p)ass / (f)ail / (s)kip / (q)uit",
                type=click.Choice(["p", "f", "s", "q"]),
                default="s",
            )
            if choice == "q":
                break
            if choice == "s":
                continue
            reason = click.prompt("reason", default="", show_default=False)
            decisions.append(
                human_verdicts.Decision(
                    item.case_id,
                    item.case_version,
                    item.attempt,
                    "pass" if choice == "p" else "fail",
                    reason,
                )
            )
    from evalcase.atomic import base_for

    # run_dir is <outputs>/<commit>/<run_id>: checked from the repository root down.
    base = base_for(config.root, run_dir.parent.parent)
    count = human_verdicts.record(run_dir, decisions, who, base=base)
    click.echo(f"recorded {count} verdict(s) by {who}")
    if count:
        outcome = grade_and_report(config, run_dir, replayer=_replayer(config))
        _index(config)
        click.echo("\n".join(summary_lines(outcome)))


@click.command("calibrate")
@click.argument("runs", nargs=-1, required=True)
@click.option(
    "--min-kappa",
    type=float,
    default=None,
    help="Exit 1 when any rubric/judge pair agrees with people less than this.",
)
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text")
@root_option
@fatal_errors
def calibrate_command(
    runs: tuple[str, ...], min_kappa: float | None, output_format: str, root: str | None
) -> None:
    """Agreement of llm_rubric with human verdicts (accuracy, Cohen's kappa, counts) per
    rubric version and judge model, over the graded RUNS."""
    from evalcase.grade.aggregate import calibration
    from evalcase.grade.recorded_run import read_jsonl
    from evalcase.results.refs import find

    config = config_for(root)
    lines = []
    for run in runs:
        lines += read_jsonl(find(config, run, graded=True).report.parent / "grades.jsonl")
    rows = calibration(lines)
    if output_format == "json":
        click.echo(json.dumps(rows, ensure_ascii=False, indent=1))
    elif not rows:
        click.echo("no attempt has both a human and an llm_rubric verdict")
    else:
        click.echo(
            f"{'rubric':<36}{'judge model':<24}{'prompt':<14}{'n':>5}{'accuracy':>10}"
            f"{'kappa':>8}  counts"
        )
        for r in rows:
            kappa = "–" if r["kappa"] is None else f"{r['kappa']:.3f}"
            counts = " ".join(f"{k}={v}" for k, v in r["counts"].items())
            click.echo(
                f"{r['rubric']:<36}{r['judge_model']:<24}{r['prompt_version']:<14}"
                f"{r['n']:>5}{r['accuracy']:>10.3f}{kappa:>8}  {counts}"
            )
    if min_kappa is not None and (not rows or any((r["kappa"] or 0) < min_kappa for r in rows)):
        click.echo(f"agreement below {min_kappa} (or no pairs to measure)", err=True)
        sys.exit(EXIT_FINDINGS)


def _index(config: Config) -> None:
    """Bring the results store up to date with the new grading, when the store's extra is
    installed (the store is derived: `evalcase store rebuild` recreates it any time)."""
    from evalcase.results.store import update_quietly

    def warn(message: str) -> None:  # a damaged store was set aside and rebuilt
        click.echo(f"evalcase: warning: {message}", err=True)

    update_quietly(config, warn=warn)


COMMANDS: tuple[click.Command, ...] = (
    grade_command,
    compare_command,
    review_command,
    calibrate_command,
)
