"""The command line: parse options, call the library, map results to exit codes.

Exit status: 0 no errors (warnings allowed), 1 at least one error, 2 usage or fatal error.
"""

from __future__ import annotations

import gc
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
        except ModuleNotFoundError as exc:
            click.echo(
                f"evalcase: error: the module '{exc.name}' is not installed; install evalcase "
                "with its dependencies (pip install evalcase, or pip install -e . here)",
                err=True,
            )
            sys.exit(EXIT_FATAL)
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
    """evalcase: a git-native repository of evaluation cases, and the linter that guards it."""
    # A command is a short-lived process that builds many small containers (parsed cases,
    # cached facts) and no reference cycles worth collecting: the cyclic collector's
    # passes over them cost a third of a warm lint run. Reference counting still frees
    # everything as usual.
    gc.disable()


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
    help="Check version bumps against this git revision: a tag or commit, or a branch "
    "(its merge base with HEAD, as for a pull request).",
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


@main.command("graders")
def graders_command() -> None:
    """List the grader types and rule checks evaluator_config may name (plugins included)."""
    from evalcase import judging

    sections = (
        ("graders (evaluator_config.graders[].type)", judging.GRADERS, judging.GRADER_GROUP),
        ("rule checks (evaluator_config.rule_checks)", judging.RULE_CHECKS,
         judging.RULE_CHECK_GROUP),
    )  # fmt: skip
    for title, builtin, group in sections:
        click.echo(f"{title}:")
        for name, description in builtin.items():
            click.echo(f"  {name:<38} {description}")
        for name in judging.plugin_names(group):
            if name not in builtin:
                click.echo(f"  {name:<38} (plugin, entry point group {group})")


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


# --- versioning: releases, changelogs, exports, bumps --------------------------------------
@main.command("tag")
@click.argument("dataset")
@root_option
@fatal_errors
def tag_command(dataset: str, root: str | None) -> None:
    """Release DATASET: tag HEAD as <dataset_id>@<dataset_version>.

    Refuses unless the working tree is clean, the repository lints clean and the
    manifest's version has no tag yet. The annotated tag records the case count, every
    case ID with its case_version, and the dataset digest. Tags are never moved.
    """
    from evalcase.actions import tag_dataset

    name = tag_dataset(_config(root), dataset)
    click.echo(f"created tag {name}")


@main.command("datasets")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    help="Output format.",
)
@root_option
@fatal_errors
def datasets_command(output_format: str, root: str | None) -> None:
    """One line per dataset: ID, manifest version, latest tag, case count, status
    (clean, changed since tag, untagged)."""
    import json

    from evalcase.actions import list_datasets

    rows = list_datasets(_config(root))
    if output_format == "json":
        click.echo(json.dumps([r.to_dict() for r in rows], ensure_ascii=False, indent=2))
        return
    if not rows:
        click.echo("no datasets")
        return
    table = [("DATASET", "VERSION", "LATEST TAG", "CASES", "STATUS")] + [
        (r.dataset_id, r.version, r.latest_tag or "-", str(r.cases), r.status) for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(5)]
    for row in table:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


@main.command("diff")
@click.argument("old")
@click.argument("new")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "md", "json"]),
    default="text",
    help="text, md (a pull-request comment) or json.",
)
@click.option("--no-cache", is_flag=True, help="Ignore the lint cache.")
@root_option
@fatal_errors
def diff_command(old: str, new: str, output_format: str, no_cache: bool, root: str | None) -> None:
    """Changelog of a dataset from OLD to NEW: cases added, removed and modified (old ->
    new case_version, fields changed) and fixtures changed.

    Each side is DATASET@vN (a release), DATASET@REV (any commit, branch or tag) or
    DATASET (the working tree); NEW may leave out the dataset (@HEAD).
    """
    from evalcase.actions import diff
    from evalcase.versioning.changelog import render_json, render_markdown, render_text

    log = diff(_config(root), old, new, use_cache=not no_cache)
    render = {"text": render_text, "md": render_markdown, "json": render_json}[output_format]
    click.echo(render(log), nl=False)


@main.command("export")
@click.argument("spec", metavar="DATASET@vN")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write to this file (default: standard output).",
)
@click.option("--no-cache", is_flag=True, help="Ignore the lint cache.")
@root_option
@fatal_errors
def export_command(spec: str, output: str | None, no_cache: bool, root: str | None) -> None:
    """Write a dataset version as JSON Lines, one case a line with its fixtures resolved.

    DATASET@vN is read straight from its release tag, without a checkout; DATASET@REV and
    DATASET (the working tree) work too.
    """
    from evalcase.actions import export_dataset

    result = export_dataset(_config(root), spec, use_cache=not no_cache)
    if result.digest_matches is False:
        click.echo(
            f"evalcase: warning: {result.revision.label} reads back with digest "
            f"{result.digest}, not the one its tag recorded (was it made by another "
            "evalcase version or configuration?)",
            err=True,
        )
    if output is None:
        click.echo(result.jsonl(), nl=False)
    else:
        Path(output).write_text(result.jsonl(), "utf-8")
        click.echo(
            f"wrote {len(result.records)} cases of {result.revision.label} to {output}",
            err=True,
        )


@main.command("bump")
@click.option(
    "--base",
    default=None,
    metavar="REF",
    help="Compare with this revision (default: HEAD); a branch means its merge base.",
)
@click.option(
    "--staged", is_flag=True, help="Compare what is staged in the git index with the base."
)
@click.option("--dry-run", is_flag=True, help="Show the bumps without writing them.")
@click.option("--no-cache", is_flag=True, help="Ignore the lint cache.")
@root_option
@fatal_errors
def bump_command(
    base: str | None, staged: bool, dry_run: bool, no_cache: bool, root: str | None
) -> None:
    """Write the version bumps lint asks for: case_version and fixture_version of changed
    cases and fixtures, dataset_version of released datasets that changed, and the
    manifest's version into changed cases. Edits in place, keeping comments, key order
    and quoting; running it again changes nothing."""
    from evalcase.actions import bump

    edits = bump(_config(root), base=base, staged=staged, dry_run=dry_run, use_cache=not no_cache)
    if not edits:
        click.echo("nothing to bump")
        return
    for edit in edits:
        click.echo(f"{edit.path}: {edit.field} {edit.old} -> {edit.new} ({edit.reason})")
    verb = "would bump" if dry_run else "bumped"
    click.echo(f"{verb} {len(edits)} version{'s' * (len(edits) != 1)}")


from evalcase.commands.review import review_command  # noqa: E402

main.add_command(review_command)


if __name__ == "__main__":  # pragma: no cover
    main()
