"""Authoring commands: init, new, fmt, import, coverage, stats.

Thin: options in, library call, text out, exit status (0 ok, 1 something to fix,
2 usage or fatal error, as everywhere in evalcase).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from evalcase.cli import EXIT_FINDINGS, fatal_errors

root_option = click.option(
    "--root",
    type=click.Path(file_okay=False, exists=True),
    default=None,
    help="Repository root (default: nearest folder with evalcase.toml, datasets/ or .git).",
)


def _root(root: str | None) -> Path:
    from evalcase.config import find_root

    return Path(root).resolve() if root else find_root(Path.cwd())


@click.command("fmt")
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@click.option("--check", is_flag=True, help="Change nothing; exit 1 if a file would change.")
@root_option
@fatal_errors
def fmt_command(paths: tuple[str, ...], check: bool, root: str | None) -> None:
    """Put cases, manifests and fixtures into canonical form (key order, indentation),
    keeping comments, blank lines and every value. With no PATHS: datasets/ and fixtures/."""
    from evalcase.authoring.fmt import format_files

    results = format_files(_root(root), paths, check=check)
    changed = [r for r in results if r.changed]
    failed = [r for r in results if r.error]
    for r in failed:
        click.echo(f"{r.path}: {r.error}", err=True)
    for r in changed:
        click.echo(f"{'would reformat' if check else 'reformatted'} {r.path}")
    unchanged = len(results) - len(changed) - len(failed)
    click.echo(
        f"{len(changed)} file{'s' * (len(changed) != 1)} "
        f"{'would be ' if check else ''}reformatted, {unchanged} unchanged"
        + (f", {len(failed)} left alone" if failed else ""),
        err=True,
    )
    if failed or (check and changed):
        sys.exit(EXIT_FINDINGS)


COMMANDS = (fmt_command,)
