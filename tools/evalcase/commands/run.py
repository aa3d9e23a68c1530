"""``evalcase run`` and ``evalcase runs``: the thin CLI over :mod:`evalcase.run`."""

from __future__ import annotations

import gc
import sys
import time
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from evalcase.cli import EXIT_FATAL, _config, fatal_errors, root_option

EXIT_GATES = 1


class RichProgress:
    """done, errors so far, elapsed, rate, ETA, on a terminal."""

    def __init__(self, label: str) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.errors = 0
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("errors {task.fields[errors]}"),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self.label = label
        self.task: Any = None
        self.t0 = time.monotonic()
        self.new = 0

    def start(self, total: int, done: int, errors: int) -> None:
        self.errors = errors
        self.progress.start()
        self.task = self.progress.add_task(
            self.label, total=total, completed=done, errors=errors, rate=""
        )

    def advance(self, record: Mapping[str, Any]) -> None:
        self.new += 1
        self.errors += record.get("status") == "error"
        rate = self.new / max(1e-9, time.monotonic() - self.t0)
        self.progress.update(self.task, advance=1, errors=self.errors, rate=f"{rate:.1f}/s")

    def close(self) -> None:
        self.progress.stop()


class PlainProgress:
    """A line per tenth of the run and per error, for logs and CI."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.total = self.done = self.errors = self.new = 0
        self.t0 = time.monotonic()
        self.step = 1

    def _line(self) -> None:
        elapsed = time.monotonic() - self.t0
        rate = self.new / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else 0.0
        click.echo(
            f"{self.label}: {self.done}/{self.total} done, {self.errors} errors, "
            f"{elapsed:.1f}s elapsed, {rate:.1f}/s, ETA {left:.0f}s",
            err=True,
        )

    def start(self, total: int, done: int, errors: int) -> None:
        self.total, self.done, self.errors = total, done, errors
        self.step = max(1, total // 10)
        self._line()

    def advance(self, record: Mapping[str, Any]) -> None:
        self.done += 1
        self.new += 1
        if record.get("status") == "error":
            self.errors += 1
            error = record.get("error") or {}
            click.echo(
                f"  error: {record['case_id']} attempt {record['attempt']}: "
                f"{error.get('kind')}: {str(error.get('message'))[:200]}",
                err=True,
            )
        if self.done % self.step == 0 or self.done == self.total:
            self._line()

    def close(self) -> None:
        return None


def _progress(label: str, mode: str) -> Any:
    if mode == "none":
        from evalcase.run.driver import NoProgress

        return NoProgress()
    if mode == "bar" or (mode == "auto" and sys.stderr.isatty()):
        return RichProgress(label)
    return PlainProgress(label)


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
    "--repeat",
    type=click.IntRange(1, 1000),
    default=None,
    help="Independent attempts per case (pass@k).",
)
@click.option(
    "--concurrency", type=click.IntRange(1, 1024), default=None, help="Attempts running at once."
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Seconds per attempt.",
)
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
@click.option("--executor", default=None, help="Where attempts run: local or ray.")
@click.option(
    "--ray-address",
    default=None,
    help="With --executor ray: the cluster's HOST:PORT (else RAY_ADDRESS, [run.ray] address).",
)
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
@click.option(
    "--progress",
    type=click.Choice(["auto", "bar", "plain", "none"]),
    default="auto",
    show_default=True,
    help="Progress display.",
)
@click.option(
    "--grade/--no-grade",
    "grade",
    default=True,
    show_default=True,
    help="Grade the run and write reports/<commit>/<run_id>/ (exit 1 when a gate fails).",
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
@root_option
@fatal_errors
def run(
    dataset: str | None,
    agent: str | None,
    repeat: int | None,
    concurrency: int | None,
    timeout_s: float | None,
    suites: tuple[str, ...],
    selects: tuple[str, ...],
    allow_dirty: bool,
    skip_invalid: bool,
    resume_id: str | None,
    executor: str | None,
    ray_address: str | None,
    seed: int,
    outputs_dir: str | None,
    progress: str,
    grade: bool,
    redact: bool | None,
    skip_without_agent: bool,
    root: str | None,
) -> None:
    """Run DATASET[@vN|@REV] against an agent and write outputs/<commit>/<run_id>/.

    The runner owns the environment: tools answer as their fixtures declare, faults and
    permissions apply, and every call, result and state change is recorded. Agent
    failures (crash, hang, garbage, oversized replies, unknown tools) are recorded as the
    attempt's error and the run goes on. Exit status: 0 when the run completed (whatever
    the agent did) and every release gate passed, 1 when a gate did not pass, 2 on a usage
    or fatal error. With --no-grade only the run is written (grade it with evalcase grade)."""
    # Runs are long and build many reference cycles (threads, sockets, subprocesses):
    # the lint-only speed setting of switching the cyclic collector off does not apply.
    gc.enable()
    from evalcase.model import FatalError
    from evalcase.run import driver, outputs, source
    from evalcase.run.agents import resolve
    from evalcase.run.executors import Limits, get_executor
    from evalcase.run.select import SelectionError, select

    config = _config(root)
    rc = config.run
    if ray_address and executor not in (None, "ray"):
        raise click.UsageError("--ray-address goes with --executor ray")
    if ray_address:
        executor = "ray"
    out_root = Path(outputs_dir or rc.outputs_dir)
    if not out_root.is_absolute():
        out_root = config.root / out_root
    if resume_id:
        if any(v is not None for v in (agent, repeat, concurrency, timeout_s)) or suites or selects:
            raise FatalError(
                "--resume takes the run's own options; "
                "drop --agent/--repeat/--concurrency/--timeout/--suite/--select"
            )
        folder = outputs.find(out_root, resume_id)
        meta = folder.read_meta()
        loaded = source.reload(config, meta)
        choice = resolve(rc, config.root, meta["agent"].get("name") or meta["agent"]["spec"], None)
        agent_options = choice.options if choice.spec == meta["agent"]["spec"] else {}
        label = f"{resume_id} (resume)"
        result = driver.resume(
            folder, loaded.source, loaded.tasks, agent_options,
            get_executor(
                executor or meta["options"].get("executor", "local"), rc.ray, ray_address
            ),
            _progress(label, progress),
        )  # fmt: skip
    else:
        if not dataset:
            raise click.UsageError("name a DATASET[@vN], or --resume RUN_ID")
        loaded = source.load(config, dataset, allow_dirty=allow_dirty, skip_invalid=skip_invalid)
        for path, whys in loaded.skipped.items():
            click.echo(f"evalcase: skipping {path}: {'; '.join(whys)}", err=True)
        try:
            tasks = select(loaded.tasks, loaded.suites, suites, selects)
        except SelectionError as exc:
            raise FatalError(str(exc)) from None
        if skip_without_agent and not (agent or loaded.manifest_agent or rc.default_agent):
            click.echo(
                f"evalcase: no agent configured for {dataset} (--agent, the manifest's "
                "agent:, or [run] default_agent in evalcase.toml): the run is skipped; lint "
                "still checks every case",
                err=True,
            )
            return
        choice = resolve(rc, config.root, agent, loaded.manifest_agent)
        options = driver.RunOptions(
            agent=choice.spec,
            agent_name=choice.name,
            agent_options=choice.options,
            repeat=repeat or rc.repeat,
            concurrency=concurrency or rc.concurrency,
            timeout_s=timeout_s or rc.timeout_s,
            suites=suites,
            select=selects,
            executor=executor or rc.executor,
            limits=Limits(rc.max_reply_bytes, rc.max_steps),
            seed=seed,
            skipped=loaded.skipped,
        )
        src = loaded.source
        label = f"{src.dataset_id}@{src.dataset_version}"
        result = driver.start(
            out_root,
            src,
            tasks,
            options,
            get_executor(options.executor, rc.ray, ray_address),
            _progress(label, progress),
        )
    try:
        shown = result.path.relative_to(config.root)
    except ValueError:
        shown = result.path
    click.echo(
        f"run {result.run_id}: {result.attempts} attempts ({result.new} new), "
        f"{result.errors} errors -> {shown}"
    )
    if result.status != "completed":
        sys.exit(EXIT_FATAL)
    if grade:
        from evalcase.report.pipeline import grade_and_report, redact_outputs, summary_lines

        if redact is None:
            redact = bool(config.grade.get("redact", False))
        outcome = grade_and_report(config, result.path, redact=redact)
        if redact:
            redact_outputs(result.path)
        click.echo("\n".join(summary_lines(outcome)))
        if not outcome.graded.gates_passed:
            sys.exit(EXIT_GATES)


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
    """List runs: id, commit, dataset@version, agent, attempts, errors, status, when."""
    from evalcase.run import outputs

    config = _config(root)
    out_root = Path(outputs_dir or config.run.outputs_dir)
    if not out_root.is_absolute():
        out_root = config.root / out_root
    rows = []
    for folder in outputs.all_runs(out_root):
        try:
            meta = folder.read_meta()
        except Exception:
            continue
        if dataset and meta["dataset"]["id"] != dataset:
            continue
        rows.append(meta)
    if not rows:
        click.echo(f"no runs under {out_root}")
        return
    rows.sort(key=lambda m: str(m.get("started_at")))
    click.echo(
        f"{'RUN':<24} {'COMMIT':<11} {'DATASET':<32} {'AGENT':<28} "
        f"{'ATTEMPTS':>9} {'ERRORS':>6} {'STATUS':<11} STARTED"
    )
    for m in rows:
        counts = m.get("counts", {})
        ds = f"{m['dataset']['id']}@{m['dataset']['version']}"
        agent = m["agent"].get("name") or m["agent"]["spec"]
        commit = m["commit"][:10] + ("*" if m.get("dirty") else "")
        attempts = f"{counts.get('attempts', 0)}/{m.get('planned', '?')}"
        started = _when(m.get("started_at"))
        click.echo(
            f"{m['run_id']:<24} {commit:<11} {ds:<32} {agent[:28]:<28} "
            f"{attempts:>9} {counts.get('errors', 0):>6} {m.get('status', '?'):<11} {started}"
        )


def _when(text: Any) -> str:
    try:
        return datetime.fromisoformat(str(text)).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return str(text)


COMMANDS = (run, runs)
