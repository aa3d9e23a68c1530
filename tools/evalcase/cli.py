"""The command line: parse options, call the library, map results to exit codes.

Exit status: 0 no errors (warnings allowed), 1 at least one error, 2 usage or fatal error.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Any, TypeVar

import click

from evalcase import __version__
from evalcase.model import FatalError, Severity

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK, EXIT_FINDINGS, EXIT_FATAL = 0, 1, 2


def fatal_errors(func: F) -> F:
    """Turn FatalError into a message and exit 2; anything unexpected too, without a
    traceback unless EVALCASE_DEBUG is set."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except FatalError as exc:
            click.echo(f"evalcase: error: {exc}", err=True)
            sys.exit(EXIT_FATAL)
        except (click.exceptions.Exit, click.ClickException, SystemExit, KeyboardInterrupt):
            raise
        except Exception as exc:
            if os.environ.get("EVALCASE_DEBUG"):
                raise
            click.echo(
                f"evalcase: internal error: {type(exc).__name__}: {exc}\n"
                "Run again with EVALCASE_DEBUG=1 for details, and please report it.",
                err=True,
            )
            sys.exit(EXIT_FATAL)

    return wrapper  # type: ignore[return-value]


def _root(root: str | None) -> Path:
    from evalcase.config import find_root

    return Path(root).resolve() if root else find_root(Path.cwd())


def _config(root: str | None) -> Any:
    from evalcase.config import load_config

    return load_config(_root(root))


root_option = click.option(
    "--root",
    type=click.Path(file_okay=False, exists=True),
    default=None,
    help="Repository root (default: nearest folder with evalcase.toml, datasets/ or .git).",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="evalcase")
def main() -> None:
    """evalcase: a git-native repository of evaluation cases, with a linter and a runner."""


def _codes(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(c.strip().upper() for v in values for c in v.split(",") if c.strip())


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json", "github", "sarif"]),
    default=None,
    help="Output format (default: text; github inside GitHub Actions).",
)
@click.option(
    "--select", multiple=True, help="Only these rule codes or prefixes (comma-separated)."
)
@click.option(
    "--ignore", multiple=True, help="Skip these rule codes or prefixes (comma-separated)."
)
@click.option("--statistics", is_flag=True, help="Print counts per rule after the findings.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are errors.")
@click.option("--no-cache", is_flag=True, help="Ignore and do not write the lint cache.")
@click.option(
    "--base",
    default=None,
    metavar="REF",
    help="Check version bumps against this git revision (branch, tag or commit).",
)
@click.option(
    "--staged",
    is_flag=True,
    help="Lint what is staged in the git index (the pre-commit hook mode); the base "
    "defaults to PRE_COMMIT_FROM_REF or HEAD.",
)
@click.option(
    "--jobs", type=click.IntRange(min=0), default=None, help="Worker processes (0: one per core)."
)
@root_option
@fatal_errors
def lint(
    paths: tuple[str, ...],
    output_format: str | None,
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    statistics: bool,
    exit_zero: bool,
    no_cache: bool,
    base: str | None,
    staged: bool,
    jobs: int | None,
    root: str | None,
) -> None:
    """Check cases, manifests and fixtures. With no PATHS, the whole repository.

    PATHS narrow what is reported; the whole repository is always the context (IDs,
    fixtures, digests).
    """
    from dataclasses import replace

    from evalcase.lint.api import lint_repository
    from evalcase.reporters import ReportContext, get
    from evalcase.reporters.text import statistics as stats_table

    config = _config(root)
    if select:
        config = replace(config, select=_codes(select))
    if ignore:
        config = replace(config, ignore=config.ignore + _codes(ignore))
    _check_codes(config.select + config.ignore)
    result = lint_repository(
        config,
        paths=list(paths) if paths else None,
        cwd=Path.cwd(),
        base=base,
        staged=staged,
        use_cache=not no_cache,
        jobs=jobs,
    )
    if output_format is None:
        output_format = "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"
    ctx = ReportContext(config.root, result.files_checked, __version__)
    click.echo(get(output_format)(result.findings, ctx), nl=False)
    if statistics:
        click.echo(stats_table(result.findings), nl=False, err=output_format != "text")
    if not exit_zero and result.worst is Severity.ERROR:
        sys.exit(EXIT_FINDINGS)


def _check_codes(codes: tuple[str, ...]) -> None:
    from evalcase.lint.rules import RULES

    for code in codes:
        if code != "ALL" and not any(c.startswith(code) for c in RULES):
            raise FatalError(f"'{code}' matches no rule code (see `evalcase rules`)")


@main.command("rules")
def rules_command() -> None:
    """List every lint rule: code, name, default severity, summary."""
    from evalcase.lint.rules import RULES

    for code, rule in RULES.items():
        click.echo(f"{code}  {rule.name:<28} {rule.severity!s:<8} {rule.summary}")


@main.command("rule")
@click.argument("code")
@fatal_errors
def rule_command(code: str) -> None:
    """Explain one rule (its documentation, with a passing and a failing example)."""
    from evalcase.lint.rules import RULES

    code = code.upper()
    rule = RULES.get(code) or next((r for r in RULES.values() if r.name == code.lower()), None)
    if rule is None:
        raise FatalError(f"no rule '{code}' (see `evalcase rules`)")
    click.echo(
        f"{rule.code} {rule.name} (default severity: {rule.severity}, scope: {rule.scope})\n"
    )
    click.echo(rule.doc.strip())
    click.echo(
        "\nSuppress on one line, with a reason:\n"
        f"    <line>  # evalcase: disable={rule.code} why this is acceptable\n"
        "or for the whole file:\n"
        f"    # evalcase: disable-file={rule.code} why this is acceptable"
    )


if __name__ == "__main__":  # pragma: no cover
    main()
