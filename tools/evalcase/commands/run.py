"""``evalcase run`` and ``evalcase runs``: the thin CLI over :mod:`evalcase.run`."""

from __future__ import annotations

import contextlib
import gc
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from evalcase.commands.common import (
    EXIT_FATAL,
    concurrency_option,
    config_for,
    executor_option,
    fatal_errors,
    progress_option,
    ray_address_option,
    root_option,
    table,
    timeout_option,
)
from evalcase.commands.progress import progress_display

if TYPE_CHECKING:
    from evalcase.config import Config

EXIT_GATES = 1


@click.command("run")
@click.argument("dataset", required=False)
@click.option(
    "--agent",
    "agent",
    default=None,
    help=(
        "A [run.agents] name or a spec: cmd:PROGRAM, py:mod:func, http://URL, openai:MODEL, "
        "replay:RUN_ID. Default: the manifest's agent, then [run] default_agent."
    ),
)
@click.option(
    "--base-url",
    default=None,
    help="With an openai: agent: the OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 "
    "(overrides base_url and OPENAI_BASE_URL).",
)
@click.option(
    "--repeat",
    type=click.IntRange(1, 1000),
    default=None,
    help="Independent attempts per case (pass@k).",
)
@concurrency_option
@timeout_option
@click.option(
    "--suite", "suites", multiple=True, help="A suite of the manifest (repeatable: union)."
)
@click.option(
    "--select",
    "selects",
    multiple=True,
    help="ID glob or tag:/role:/risk:/type: VALUE (repeatable: union; with --suite: intersection).",
)
@click.option(
    "--prompt",
    "prompt_ids",
    multiple=True,
    help="Prompt fixture IDs (fixtures/prompt/<id>.yaml), comma separated or repeated: every "
    "selected case runs once per prompt. Default: the manifest's prompts, else each case's "
    "own prompt.",
)
@click.option(
    "--allow-dirty", is_flag=True, help="Run uncommitted changes (the run is recorded as dirty)."
)
@click.option(
    "--skip-invalid",
    is_flag=True,
    help="Run the cases that build; list the others in run.json as skipped (default: refuse).",
)
@click.option(
    "--resume",
    "resume_id",
    default=None,
    help="Finish the run RUN_ID without redoing its finished attempts.",
)
@executor_option
@ray_address_option
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Base of the per-attempt seeds."
)
@click.option(
    "--outputs",
    "outputs_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Folder of runs (default [run] outputs_dir, outputs).",
)
@progress_option
@click.option(
    "--grade/--no-grade",
    "grade",
    default=True,
    show_default=True,
    help="Grade the run and write reports/<commit>/<run_id>/ (exit 1 when a gate fails "
    "or an attempt errs).",
)
@click.option(
    "--redact/--no-redact",
    default=None,
    help="Mask personal data in what is written to outputs/ and reports/ (after grading, so "
    "leaks are still caught). Default: [grade] redact.",
)
@click.option(
    "--skip-without-agent",
    is_flag=True,
    help="When no agent is configured (no --agent, no manifest agent:, no [run] "
    "default_agent), say so and exit 0 instead of failing: what CI's smoke job uses, so a "
    "new repository's CI passes on lint until an agent is set up.",
)
@click.option(
    "--publish",
    is_flag=True,
    help="When the run completes, publish it and its grading to [results] remote (as "
    "`evalcase push RUN` does).",
)
@root_option
@fatal_errors
def run(
    root: str | None,
    progress: str,
    grade: bool,
    redact: bool | None,
    publish: bool,
    **options: Any,
) -> None:
    """Run DATASET[@vN|@REV] against an agent and write outputs/<commit>/<run_id>/.

    The runner owns the environment: tools answer as their fixtures declare, faults and
    permissions apply, and every call, result and state change is recorded. Agent
    failures (crash, hang, garbage, oversized replies, unknown tools) are recorded as the
    attempt's error and the run goes on. Exit status: 0 when the run completed, every
    release gate passed and no attempt ended in error (agent, environment or grader;
    a case --skip-invalid left out counts as one), 1 otherwise (with or without
    gates), 2 on a usage or fatal error. With --no-grade only the run is written (grade
    it with evalcase grade)."""
    # Runs are long and build many reference cycles (threads, sockets, subprocesses):
    # the lint-only speed setting of switching the cyclic collector off does not apply.
    gc.enable()
    from evalcase.run.launch import NoAgent, RunRequest, prepare

    config = config_for(root)
    if publish:
        from evalcase.results.remote import remote_of

        remote = remote_of(config, None)  # a missing remote fails before the run, not after
    request = RunRequest(**options)
    if (problem := request.problem()) is not None:
        raise click.UsageError(problem)
    held = _hold_keys(config, request)
    launch = prepare(config, request, _tell)
    if isinstance(launch, NoAgent):
        click.echo(f"evalcase: {launch.message}", err=True)
        return
    if launch.executor != "local":  # a resumed Ray run
        held.close()
    result = _interruptible(
        lambda: launch.execute(progress_display(launch.label, progress)), launch.run_id
    )
    _tell_result(config, result)
    held.close()  # the judge's key, where grading reads it
    if result.status != "completed":
        sys.exit(EXIT_FATAL)
    ok = not grade or _graded_ok(config, result.path, redact)
    if publish:
        _publish(config, remote, result.run_id)
    if not ok:
        sys.exit(EXIT_GATES)


def _hold_keys(config: Config, request: Any) -> contextlib.ExitStack:
    """The keys are read once and kept out of the environment until grading, so that no
    process the run starts (git, CEL workers, agents) inherits one (evalcase.keys). A Ray
    run keeps them there: its workers read them from their environment."""
    from evalcase import keys
    from evalcase.run.launch import key_variables

    held = contextlib.ExitStack()
    click.get_current_context().with_resource(held)
    if not request.ray_address and (request.executor or config.run.executor) == "local":
        held.enter_context(keys.held(key_variables(config)))
    return held


def _tell_result(config: Config, result: Any) -> None:
    try:
        shown = result.path.relative_to(config.root)
    except ValueError:
        shown = result.path
    for line in result.damaged[:5]:
        click.echo(f"evalcase: warning: {line}", err=True)
    click.echo(
        f"run {result.run_id}: {result.attempts} attempts ({result.new} new), "
        f"{result.errors} errors -> {shown}"
    )


def _publish(config: Config, remote: Any, run_id: str) -> None:
    from evalcase.results.remote import publish_runs

    for line in publish_runs(config, remote, [run_id]):
        click.echo(line)


def _tell(message: str) -> None:
    click.echo(f"evalcase: {message}", err=True)


def _graded_ok(config: Config, run_path: Path, redact: bool | None) -> bool:
    """Grade the run just written, write its reports, print their summary: whether every
    gate passed and no attempt erred."""
    from evalcase.report.pipeline import grade_and_report, redact_outputs, summary_lines
    from evalcase.run.gold_replay import configured

    if redact is None:
        redact = bool(config.grade.get("redact", False))
    outcome = grade_and_report(
        config, run_path, redact=redact, replayer=configured(config.raw.get("run") or {})
    )
    if redact:
        from evalcase.atomic import base_for

        # run_path is <outputs>/<commit>/<run_id>: checked from the repository root down.
        redact_outputs(run_path, base=base_for(config.root, run_path.parent.parent))
    from evalcase.results.store import update_quietly

    # The results store, when its extra is installed; a damaged one is rebuilt, and said.
    update_quietly(config, warn=lambda m: _tell(f"warning: {m}"))
    click.echo("\n".join(summary_lines(outcome)))
    return bool(outcome.graded.ok)


def _interruptible(body: Any, run_id: str) -> Any:
    """Run ``body`` with SIGTERM turned into KeyboardInterrupt (as SIGINT is): the driver
    then ends the agents and records ``interrupted``; exit status 130 (SIGINT) or 143."""
    import signal

    received: list[int] = []

    def stop(signum: int, frame: Any) -> None:
        received.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        return body()
    except KeyboardInterrupt:
        click.echo(
            f"evalcase: run {run_id} interrupted; `evalcase run --resume {run_id}` continues it",
            err=True,
        )
        sys.exit(143 if received else 130)
    finally:
        signal.signal(signal.SIGTERM, previous)


@click.command("runs")
@click.option(
    "--outputs",
    "outputs_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Folder of runs (default [run] outputs_dir).",
)
@click.option("--dataset", default=None, help="Only runs of this dataset.")
@root_option
@fatal_errors
def runs(outputs_dir: str | None, dataset: str | None, root: str | None) -> None:
    """List runs: id, commit, dataset@version, agent and version, attempts, errors,
    status, when."""
    from evalcase.run.launch import outputs_root
    from evalcase.run.listing import list_runs

    out_root = outputs_root(config_for(root), outputs_dir)
    rows = list_runs(out_root, dataset)
    if not rows:
        click.echo(f"no runs under {out_root}")
        return
    cells = []
    for m in rows:
        counts = m.get("counts", {})
        status = str(m.get("status", "?")) + (f" ({m['damaged']} damaged)" if m["damaged"] else "")
        cells.append((
            m["run_id"], m["commit"][:10] + ("*" if m.get("dirty") else ""),
            f"{m['dataset']['id']}@{m['dataset']['version']}",
            _agent(m["agent"]),
            f"{counts.get('attempts', 0)}/{m.get('planned', '?')}", str(counts.get("errors", 0)),
            status, _when(m.get("started_at")),
        ))  # fmt: skip
    header = ("RUN", "COMMIT", "DATASET", "AGENT", "ATTEMPTS", "ERRORS", "STATUS", "STARTED")
    for line in table(header, cells, right={4, 5}):
        click.echo(line)


def _agent(agent: Any) -> str:
    """A run's agent as history and flaky show it: its name (else its spec) and version,
    so two runs of one agent at two versions read apart."""
    if not isinstance(agent, dict):
        return "?"
    name = str(agent.get("name") or agent.get("spec") or "?")
    return name + (f" {agent['version']}" if agent.get("version") else "")


def _when(text: Any) -> str:
    try:
        return datetime.fromisoformat(str(text)).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return str(text)


COMMANDS = (run, runs)
