"""``evalcase push`` and ``evalcase pull``: runs to and from the team's object storage
(``[results] remote``, :mod:`evalcase.results.remote`). Exit status: 0 done (a key under
``runs/`` that is no run's, such as one with a ``..`` segment, is skipped with a warning:
nothing published is lost), 1 some file was refused (a damaged manifest, a digest
mismatch, a local file that differs, a run folder that could not be listed whole), 2 usage
or fatal error (no remote configured, the service unreachable or not answering in time)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from evalcase.commands.common import (
    EXIT_FINDINGS,
    config_for,
    fatal_errors,
    remote_option,
    root_option,
)
from evalcase.model import FatalError


@click.command("push")
@click.argument("run_ids", nargs=-1)
@click.option("--all", "push_all", is_flag=True, help="Publish every local run.")
@remote_option
@root_option
@fatal_errors
def push_command(
    run_ids: tuple[str, ...], push_all: bool, url: str | None, root: str | None
) -> None:
    """Publish runs (their outputs and every grading) to the team's object storage.

    Append-only and content-addressed: a file already there is not sent again, nothing is
    overwritten, and any number of CI jobs may publish at once. Credentials come from the
    environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT_URL)."""
    from evalcase.results.remote import folders_of, local_runs, publish_runs, remote_of

    config = config_for(root)
    remote = remote_of(config, url)
    ids = list(run_ids)
    if push_all:
        ids = sorted(set(ids) | set(local_runs(folders_of(config))))
    if not ids:
        raise FatalError("name the runs to publish (run IDs) or pass --all")
    for line in publish_runs(config, remote, ids):
        click.echo(line)


@click.command("pull")
@click.argument("run_ids", nargs=-1)
@click.option("--list", "list_only", is_flag=True, help="List the remote's runs; download nothing.")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text")
@remote_option
@root_option
@fatal_errors
def pull_command(
    run_ids: tuple[str, ...], list_only: bool, output_format: str, url: str | None, root: str | None
) -> None:
    """Fetch published runs (all, or the RUN_IDS given) into outputs/ and reports/.

    Only what the local copy lacks is downloaded; each file is checked against its digest.
    A local file that differs is kept and reported (exit 1). --list reads the remote's
    manifests only: which runs exist, of which dataset and agent, with their pass rates."""
    from evalcase.results.remote import folders_of, list_manifests, pull, remote_of

    config = config_for(root)
    remote = remote_of(config, url)
    listing = list_manifests(remote, list(run_ids) or None)
    for key in listing.skipped:
        click.echo(
            f"evalcase: warning: {remote.url}: skipped key {key}: no run's key, left on "
            "the remote (delete it from the bucket)",
            err=True,
        )
    for problem in listing.damaged:
        click.echo(f"skipped {problem}", err=True)
    runs = listing.runs()
    if run_ids and (missing := sorted(set(run_ids) - set(runs))):
        raise FatalError(f"not on {remote.url}: {', '.join(missing)}")
    if list_only:
        _print_listing(runs, output_format)
        sys.exit(EXIT_FINDINGS if listing.damaged else 0)
    results = pull(remote, folders_of(config), listing.manifests)
    refused = False
    for result in results:
        click.echo(
            f"{result.run_id}: {len(result.written)} file(s) fetched, "
            f"{len(result.present)} already here"
        )
        for problem in result.refused:
            refused = True
            click.echo(f"  refused {problem}", err=True)
    if refused or listing.damaged:
        sys.exit(EXIT_FINDINGS)


def _print_listing(runs: dict[str, list[Any]], output_format: str) -> None:
    rows = []
    for run_id, manifests in sorted(runs.items()):
        newest = manifests[-1]
        rows.append(
            {
                "run_id": run_id,
                "commit": newest.commit,
                "publications": len(manifests),
                "published_at": newest.published_at,
                **dict(newest.summary),
            }
        )
    if output_format == "json":
        click.echo(json.dumps(rows, indent=1, ensure_ascii=False))
        return
    if not rows:
        click.echo("no runs published")
        return
    click.echo(f"{'RUN':<24} {'COMMIT':<11} {'DATASET':<32} {'AGENT':<24} {'PASS@1':>7} PUBLISHED")
    for row in rows:
        dataset = f"{row.get('dataset')}@{row.get('dataset_version')}"
        rate = (row.get("report") or {}).get("pass@1")
        shown = f"{rate:.1%}" if isinstance(rate, int | float) else "-"
        click.echo(
            f"{row['run_id']:<24} {row['commit'][:10]:<11} {dataset[:32]:<32} "
            f"{str(row.get('agent'))[:24]:<24} {shown:>7} {row['published_at']}"
        )


COMMANDS = (push_command, pull_command)
