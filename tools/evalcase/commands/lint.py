"""`evalcase lint`, `rules`, `rule` and `graders`: the linter and what it and the graders
know. Exit status: 0 no errors (warnings allowed), 1 at least one error, 2 usage or
fatal error."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from evalcase import __version__
from evalcase.commands.common import (
    EXIT_FINDINGS,
    EXIT_OK,
    config_for,
    fatal_errors,
    quiet_broken_pipe,
    root_option,
    split_words,
)
from evalcase.model import FatalError, Severity


@click.command("lint")
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
    "--no-base",
    is_flag=True,
    help="Do not compare with a base revision (skips EC501-EC504; release checks still run).",
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
    no_base: bool,
    staged: bool,
    jobs: int | None,
    root: str | None,
) -> None:
    """Check cases, manifests and fixtures. With no PATHS, the whole repository.

    PATHS narrow what is reported; the whole repository is always the context (IDs,
    fixtures, digests). In a git repository the version bumps are checked against HEAD
    (or [versioning] base_branch), as the commit hook checks them; --no-base skips that.
    """
    from dataclasses import replace

    from evalcase.lint.api import StagedSources, default_base, lint_repository
    from evalcase.lint.reporters import ReportContext, get
    from evalcase.lint.reporters.text import statistics as stats_table

    config = config_for(root)
    if select:
        config = replace(config, select=split_words(select, upper=True))
    if ignore:
        config = replace(config, ignore=config.ignore + split_words(ignore, upper=True))
    _check_codes(config.select + config.ignore)
    if no_base and base:
        raise click.UsageError("--base and --no-base contradict each other")
    if base is None and not staged and not no_base:
        chosen = default_base(config)
        base = chosen.ref
        if chosen.note:
            click.echo(chosen.note, err=True)
    if staged and any(Path(p).name in ("evalcase.toml", "pyproject.toml") for p in paths):
        paths = ()  # pre-commit passed a changed configuration: it concerns every file
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
    display_root, findings = _as_git_paths(config.root, result.findings)
    sources = None
    if staged:
        # Quote what the positions come from: the staged blobs, not the work tree.
        sources = StagedSources(
            config, {g.path: f.path for f, g in zip(result.findings, findings, strict=True)}
        )
    ctx = ReportContext(display_root, result.files_checked, __version__, sources)
    status = EXIT_FINDINGS if not exit_zero and result.worst is Severity.ERROR else EXIT_OK
    hint = _cli_hint(findings, config.root) if staged else ""
    try:
        click.echo(get(output_format)(findings, ctx), nl=False)
        if hint:
            click.echo(hint, err=True)
        if statistics:
            click.echo(stats_table(result.findings), nl=False, err=output_format != "text")
        sys.stdout.flush()
    except BrokenPipeError:
        # Output cut short (`evalcase lint | head`) does not turn errors into a pass.
        quiet_broken_pipe(status)
    finally:
        if sources is not None:
            sources.close()
    sys.exit(status)


def _as_git_paths(root: Path, findings: list[Any]) -> tuple[Path, list[Any]]:
    """Findings with paths relative to the top of the git repository when the cases live
    in a subfolder of it (``evals/datasets/...``): the paths pre-commit, editors and
    GitHub annotations use. Outside git, or at its top, paths stay as they are."""
    from dataclasses import replace

    from evalcase.gitio import find_top

    top = find_top(root)
    if top is None or top == root.resolve():
        return root, findings
    prefix = root.resolve().relative_to(top).as_posix() + "/"
    moved = [
        replace(
            f,
            path=prefix + f.path,
            related=tuple((prefix + p, line, col) for p, line, col in f.related),
        )
        for f in findings
    ]
    return top, moved


def _cli_hint(findings: list[Any], root: Path) -> str:
    """Under a pre-commit hook built from the published hooks, evalcase lives in
    pre-commit's own environment, not on the user's PATH: say how to run the
    `evalcase bump` the findings ask for."""
    if os.environ.get("PRE_COMMIT") != "1" or not any(
        "evalcase bump" in f.message for f in findings
    ):
        return ""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path("~/.cache").expanduser())
    store = Path(os.environ.get("PRE_COMMIT_HOME") or cache / "pre-commit").resolve()
    if not Path(sys.prefix).resolve().is_relative_to(store):
        return ""  # a `language: system` hook: evalcase is installed where the user runs it
    where = "" if root.resolve() == Path.cwd().resolve() else f" --root {os.path.relpath(root)}"
    return (
        "hint: this hook runs evalcase from pre-commit's own environment, which is not on "
        "your PATH. Run the bump with that environment:\n"
        f"    {sys.executable} -m evalcase bump{where}\n"
        "or install the command line for good, at the rev: of your .pre-commit-config.yaml:\n"
        '    pip install "evalcase @ git+<the repo: URL>@<rev>"'
    )


def _check_codes(codes: tuple[str, ...]) -> None:
    from evalcase.lint.rules import RULES

    for code in codes:
        if code != "ALL" and not any(c.startswith(code) for c in RULES):
            raise FatalError(f"'{code}' matches no rule code (see `evalcase rules`)")


@click.command("rules")
@root_option
@fatal_errors
def rules_command(root: str | None) -> None:
    """List every lint rule: code, name, severity, summary. The severity is the one in
    force in the repository (its configuration may change a rule's default)."""
    from evalcase.lint.rules import RULES

    config = config_for(root)
    for code, rule in RULES.items():
        severity = config.severity.get(code, rule.severity)
        click.echo(f"{code}  {rule.name:<28} {severity!s:<8} {rule.summary}")


@click.command("graders")
@root_option
@fatal_errors
def graders_command(root: str | None) -> None:
    """List the grader types and rule checks evaluator_config may name (plugins included)."""
    from evalcase import plugins
    from evalcase.grade import names

    sections = (
        ("graders (evaluator_config.graders[].type)", names.GRADERS, plugins.GRADER_GROUP),
        ("rule checks (evaluator_config.rule_checks)", names.RULE_CHECKS,
         plugins.RULE_CHECK_GROUP),
    )  # fmt: skip
    for title, builtin, group in sections:
        click.echo(f"{title}:")
        for name, description in builtin.items():
            click.echo(f"  {name:<38} {description}")
        for name in plugins.plugin_names(group):
            if name not in builtin:
                click.echo(f"  {name:<38} (plugin, entry point group {group})")


@click.command("rule")
@click.argument("code")
@root_option
@fatal_errors
def rule_command(code: str, root: str | None) -> None:
    """Explain one rule (its documentation, with a passing and a failing example)."""
    from evalcase.lint.rules import RULES

    code = code.upper()
    rule = RULES.get(code) or next((r for r in RULES.values() if r.name == code.lower()), None)
    if rule is None:
        raise FatalError(f"no rule '{code}' (see `evalcase rules`)")
    configured = config_for(root).severity.get(rule.code)
    here = f", here: {configured} ([lint] severity)" if configured is not None else ""
    click.echo(
        f"{rule.code} {rule.name} (default severity: {rule.severity}{here}, scope: {rule.scope})\n"
    )
    click.echo(rule.doc.strip())
    click.echo(
        "\nSuppress on one line, with a reason:\n"
        f"    <line>  # evalcase: disable={rule.code} why this is acceptable\n"
        "or for the whole file:\n"
        f"    # evalcase: disable-file={rule.code} why this is acceptable"
    )


COMMANDS = (lint, rules_command, rule_command, graders_command)
