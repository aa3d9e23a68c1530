"""``evalcase store``, ``history``, ``flaky`` and ``trend``: questions across runs, thin
wrappers over :mod:`evalcase.results`. They need the results store's extra
(a base dependency); without it they exit 2 saying so. Exit status 0
otherwise (``flaky --fail-on-flaky``: 1 when a case is flaky)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from evalcase.commands.common import (
    EXIT_FINDINGS,
    config_for,
    echo_mirror_stats,
    fatal_errors,
    from_remote_option,
    remote_option,
    root_option,
    table,
)

T = TypeVar("T")

format_option = click.option(
    "--format", "output_format", type=click.Choice(["text", "json"]), default="text"
)
dataset_option = click.option("--dataset", default=None, help="Only runs of this dataset.")


def _ask(root: str | None, from_remote: bool, url: str | None, ask: Callable[[Any], T]) -> T:
    """``ask`` the local store, or (``--from-remote``, ``--remote URL``) the store over the
    remote's index (evalcase.results.remote_index); what the remote sync did goes to
    stderr. A damaged local store is set aside and rebuilt, with a warning, and asked
    again (evalcase.results.store.asking)."""
    config = config_for(root)
    if not from_remote and url is None:
        from evalcase.results.store import asking, open_store

        def local(store: Any) -> T:
            answer = ask(store)
            _warn_unreadable(store)
            return answer

        return asking(lambda: open_store(config, warn=warn), local)
    from evalcase.results.remote import remote_of
    from evalcase.results.remote_index import open_remote_store

    with open_remote_store(config, remote_of(config, url)) as (store, stats):
        echo_mirror_stats(stats)
        answer = ask(store)
        _warn_unreadable(store)
    return answer


def warn(message: str) -> None:
    """A warning on stderr (what the store's ``warn`` is told)."""
    click.echo(f"evalcase: warning: {message}", err=True)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def _echo_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=1))


def _warn_unreadable(store: Any) -> None:
    """Files of outputs/ or reports/ the store could not read are left out, and said."""
    problems = store.problems()
    if problems:
        click.echo(
            f"evalcase: warning: {len(problems)} file(s) could not be read and are left out "
            f"(first: {problems[0][0]}: {problems[0][1]}); `evalcase store status` lists them",
            err=True,
        )


@click.group("store")
def store_group() -> None:
    """The results store: an index of every run and grading (derived from outputs/ and
    reports/, rebuilt at any time; .evalcase_cache/results.duckdb)."""


@store_group.command("rebuild")
@format_option
@root_option
@fatal_errors
def store_rebuild(output_format: str, root: str | None) -> None:
    """Delete the store and index every run and grading again."""
    from evalcase.results.store import rebuild, store_path

    config = config_for(root)
    stats = rebuild(config)
    for where, why in stats.problems:
        click.echo(f"evalcase: warning: {where}: left out: {why}", err=True)
    if output_format == "json":
        _echo_json({**stats.to_dict(), "path": str(store_path(config))})
        return
    click.echo(
        f"indexed {stats.runs} runs ({stats.attempts} attempts), {stats.gradings} gradings "
        f"({stats.verdicts} verdicts) in {stats.seconds:.2f}s -> {store_path(config)}"
    )


@store_group.command("status")
@format_option
@root_option
@fatal_errors
def store_status(output_format: str, root: str | None) -> None:
    """Bring the store up to date and say what it holds."""
    from evalcase.results.store import asking, open_store, store_path

    config = config_for(root)

    def status(store: Any) -> tuple[Any, dict[str, int], list[tuple[str, str]]]:
        return store.update(), store.counts(), store.problems()

    stats, counts, problems = asking(lambda: open_store(config, update=False, warn=warn), status)
    path = store_path(config)
    if output_format == "json":
        unreadable = [{"path": p, "why": w} for p, w in problems]
        _echo_json({"path": str(path), "updated": stats.to_dict(), **counts,
                    "unreadable": unreadable})  # fmt: skip
        return
    for where, why in problems:
        click.echo(f"unreadable: {where}: {why}")
    click.echo(
        f"{path}: {counts['runs']} runs, {counts['attempts']} attempts, "
        f"{counts['gradings']} gradings, {counts['verdicts']} verdicts "
        f"({stats.runs} runs and {stats.gradings} gradings indexed just now)"
    )


@click.command("history")
@click.argument("case_id")
@dataset_option
@click.option("--newest", is_flag=True, help="Only each run's newest (default) grading.")
@from_remote_option
@remote_option
@format_option
@root_option
@fatal_errors
def history_command(
    case_id: str,
    dataset: str | None,
    newest: bool,
    from_remote: bool,
    url: str | None,
    output_format: str,
    root: str | None,
) -> None:
    """CASE_ID's verdicts over commits, case versions, agents, prompts and gradings. A
    change of the case's own content is marked `case changed`, never a regression."""
    from evalcase.model import FatalError
    from evalcase.results.queries import history

    rows = _ask(
        root, from_remote, url, lambda s: history(s, case_id, dataset=dataset, newest_only=newest)
    )
    if output_format == "json":
        _echo_json({"case_id": case_id, "history": [r.to_dict() for r in rows]})
        return
    if not rows:
        raise FatalError(f"no graded attempt of case {case_id!r} (`evalcase runs` lists runs)")
    header = ("STARTED", "RUN", "COMMIT", "VERSION", "AGENT", "PROMPT", "GRADING", "PASSES",
              "VERDICTS")  # fmt: skip
    cells = [
        (
            r.started_at[:16], r.run_id, r.commit[:10], r.case_version,
            r.agent + (f" {r.agent_version}" if r.agent_version else ""), r.prompt or "-",
            r.grading_id + ("" if r.newest else " (older)"), f"{r.passes}/{len(r.verdicts)}",
            " ".join(r.verdicts),
        )
        for r in rows
    ]  # fmt: skip
    lines = table(header, cells)
    click.echo(lines[0])
    for r, line in zip(rows, lines[1:], strict=True):
        if r.case_changed:
            click.echo(f"  -- case changed: content {r.digest[:12] or r.case_version} --")
        click.echo(line)


@click.command("flaky")
@dataset_option
@click.option(
    "--confidence",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.95,
    show_default=True,
    help="Of the pass rate's interval (Wilson).",
)
@click.option("--fail-on-flaky", is_flag=True, help="Exit 1 when a case is flaky.")
@from_remote_option
@remote_option
@format_option
@root_option
@fatal_errors
def flaky_command(
    dataset: str | None,
    confidence: float,
    fail_on_flaky: bool,
    from_remote: bool,
    url: str | None,
    output_format: str,
    root: str | None,
) -> None:
    """Cases whose verdict changes at the same case content, agent, prompt and
    configuration, with each one's pass rate and an interval."""
    from evalcase.results.queries import flaky

    rows = _ask(root, from_remote, url, lambda s: flaky(s, dataset=dataset, confidence=confidence))
    if output_format == "json":
        _echo_json({"confidence": confidence, "flaky": [r.to_dict() for r in rows]})
    elif not rows:
        click.echo("no flaky case: every case's decided verdicts agree under the same content, "
                   "agent, prompt and configuration")  # fmt: skip
    else:
        header = ("CASE", "AGENT", "PROMPT", "PASSES", "RATE",
                  f"{int(confidence * 100)}% INTERVAL", "RUNS")  # fmt: skip
        cells = [
            (
                r.case_id, r.agent + (f" {r.agent_version}" if r.agent_version else ""),
                r.prompt or "-", f"{r.passes}/{r.attempts}", _pct(r.pass_rate),
                f"{_pct(r.interval[0])}-{_pct(r.interval[1])}", str(r.runs),
            )
            for r in rows
        ]  # fmt: skip
        for line in table(header, cells, right={3, 4, 6}):
            click.echo(line)
    if fail_on_flaky and rows:
        sys.exit(EXIT_FINDINGS)


@click.command("trend")
@click.argument("dataset")
@click.option("--by", type=click.Choice(["commit", "agent"]), default="commit", show_default=True)
@click.option(
    "--slice",
    "slice_key",
    default=None,
    help="Also each value's pass@1 of this slice: risk_level, case_type, ability_tag, "
    "scenario, tool, dataset_role, failure_class, prompt.",
)
@from_remote_option
@remote_option
@format_option
@root_option
@fatal_errors
def trend_command(
    dataset: str,
    by: str,
    slice_key: str | None,
    from_remote: bool,
    url: str | None,
    output_format: str,
    root: str | None,
) -> None:
    """DATASET's pass@1, pass^k, cost and latency per commit or agent (each run's newest
    grading), optionally per slice."""
    from evalcase.grade.aggregate import SLICE_KEYS
    from evalcase.results.queries import trend

    if slice_key is not None and slice_key not in SLICE_KEYS:
        raise click.UsageError(f"--slice {slice_key!r}: one of {', '.join(SLICE_KEYS)}")
    rows = _ask(root, from_remote, url, lambda s: trend(s, dataset, by=by, slice_key=slice_key))
    if output_format == "json":
        _echo_json({"dataset": dataset, "by": by, "trend": [r.to_dict() for r in rows]})
        return
    if not rows:
        click.echo(f"no graded run of {dataset}")
        return
    header = (by.upper(), "FIRST RUN", "RUNS", "ATTEMPTS", "PASS@1", "PASS^K", "COST", "P50 MS")
    lines = table(
        header,
        [
            (
                r.key[:10] if by == "commit" else r.key, r.first_run[:16], str(r.runs),
                str(r.attempts), _pct(r.pass_at_1), _pct(r.pass_hat_k),
                "–" if r.cost is None else f"{r.cost:.4f}",
                "–" if r.latency_ms_p50 is None else f"{r.latency_ms_p50:.0f}",
            )
            for r in rows
        ],
        right={2, 3, 4, 5, 6, 7},
    )  # fmt: skip
    click.echo(lines[0])
    for r, line in zip(rows, lines[1:], strict=True):
        click.echo(line)
        for value, rate in r.slices.items():
            click.echo(f"    {slice_key}={value}: pass@1 {_pct(rate)}")


COMMANDS: tuple[click.Command, ...] = (store_group, history_command, flaky_command, trend_command)
