"""The command line: parse options, call the library, map results to exit codes.

Exit status: 0 no errors (warnings allowed), 1 at least one error, 2 usage or fatal error.
"""

from __future__ import annotations

import gc
import importlib
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


def quiet_broken_pipe(status: int = EXIT_OK) -> None:
    """The reader closed the pipe early (``evalcase rules | head -1``): normal use, so
    leave without a message. Standard output is pointed at /dev/null so that the
    interpreter's final flush does not complain either."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(status)


def fatal_errors(func: F) -> F:
    """Turn FatalError into a message and exit 2; anything unexpected too, without a
    traceback unless EVALCASE_DEBUG is set. A closed output pipe ends the command quietly."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except BrokenPipeError:
            quiet_broken_pipe()
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


def _given_root(root: str | None) -> str | None:
    """``--root`` after the subcommand wins; otherwise the one given before it."""
    if root:
        return root
    ctx = click.get_current_context(silent=True)
    while ctx is not None:
        if isinstance(ctx.obj, dict) and ctx.obj.get("root"):
            return str(ctx.obj["root"])
        ctx = ctx.parent
    return None


def _root(root: str | None) -> Path:
    from evalcase.config import find_root

    given = _given_root(root)
    return Path(given).resolve() if given else find_root(Path.cwd())


def _config(root: str | None) -> Any:
    from evalcase.config import load_config

    given = _given_root(root)
    if given:
        return load_config(Path(given).resolve())
    return load_config(_root(None))


ROOT_HELP = (
    "The case repository (the folder holding datasets/ and fixtures/), or a folder whose "
    "evalcase.toml names it. Default: found from the current folder (see docs/configuration.md)."
)

root_option: Callable[[F], F] = click.option(
    "--root",
    type=click.Path(file_okay=False, exists=True),
    default=None,
    metavar="DIR",
    help=ROOT_HELP,
)


# Command groups, one module each (evalcase.commands.<group>), listing their commands in
# COMMANDS.
COMMAND_GROUPS = ("run", "grade", "authoring", "review")


class _Main(click.Group):
    """The top-level group. The command groups' modules are imported when a command of
    theirs is asked for, or the whole list (help, completion): the commit hook runs
    `evalcase lint` on every commit, and importing all of them cost every start."""

    _groups_loaded = False

    def _load_groups(self) -> None:
        if not self._groups_loaded:
            self._groups_loaded = True
            for group in COMMAND_GROUPS:
                for command in importlib.import_module(f"evalcase.commands.{group}").COMMANDS:
                    self.add_command(command)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            self._load_groups()
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        self._load_groups()
        return super().list_commands(ctx)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="evalcase")
@root_option
@click.pass_context
def main(ctx: click.Context, root: str | None) -> None:
    """evalcase: a git-native repository of evaluation cases, and the linter that guards it.

    --root DIR may come before or after the command."""
    ctx.ensure_object(dict)
    if root:
        ctx.obj["root"] = root
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

    from evalcase.lint.api import default_base, lint_repository, staged_sources
    from evalcase.reporters import ReportContext, get
    from evalcase.reporters.text import statistics as stats_table

    config = _config(root)
    if select:
        config = replace(config, select=_codes(select))
    if ignore:
        config = replace(config, ignore=config.ignore + _codes(ignore))
    _check_codes(config.select + config.ignore)
    if no_base and base:
        raise click.UsageError("--base and --no-base contradict each other")
    if base is None and not staged and not no_base:
        base = default_base(config)
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
        staged_text = staged_sources(config, (f.path for f in result.findings))
        shown = {f.path: g.path for f, g in zip(result.findings, findings, strict=True)}
        sources = {shown[p]: data for p, data in staged_text.items() if p in shown}
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


@main.command("rules")
@root_option
@fatal_errors
def rules_command(root: str | None) -> None:
    """List every lint rule: code, name, severity, summary. The severity is the one in
    force in the repository (its configuration may change a rule's default)."""
    from evalcase.lint.rules import RULES

    config = _config(root)
    for code, rule in RULES.items():
        severity = config.severity.get(code, rule.severity)
        click.echo(f"{code}  {rule.name:<28} {severity!s:<8} {rule.summary}")


@main.command("graders")
@root_option
@fatal_errors
def graders_command(root: str | None) -> None:
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
@root_option
@fatal_errors
def rule_command(code: str, root: str | None) -> None:
    """Explain one rule (its documentation, with a passing and a failing example)."""
    from evalcase.lint.rules import RULES

    code = code.upper()
    rule = RULES.get(code) or next((r for r in RULES.values() if r.name == code.lower()), None)
    if rule is None:
        raise FatalError(f"no rule '{code}' (see `evalcase rules`)")
    configured = _config(root).severity.get(rule.code)
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
    "--format",
    "output_format",
    type=click.Choice(["jsonl", "inspect", "openai-evals", "promptfoo"]),
    default="jsonl",
    show_default=True,
    help="jsonl (seed 002 section 11 lines with the resolved case), inspect (Inspect AI "
    "json_dataset), openai-evals (registry samples), promptfoo (tests file).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write to this file (default: standard output).",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Exit 1 when the format could not carry any part of any case (the summary names them).",
)
@click.option("--no-cache", is_flag=True, help="Ignore the lint cache.")
@root_option
@fatal_errors
def export_command(
    spec: str,
    output_format: str,
    output: str | None,
    strict: bool,
    no_cache: bool,
    root: str | None,
) -> None:
    """Write a dataset version for evalcase or another evaluation tool; a summary on
    standard error says what the format carried and what it could not, part by part,
    with the cases concerned.

    DATASET@vN is read straight from its release tag, without a checkout; DATASET@REV and
    DATASET (the working tree) work too.
    """
    from evalcase.authoring.exports import export

    result, rendered = export(_config(root), spec, output_format, use_cache=not no_cache)
    if result.digest_matches is False:
        click.echo(
            f"evalcase: warning: {result.revision.label} reads back with digest "
            f"{result.digest}, not the one its tag recorded (was it made by another "
            "evalcase version or configuration?)",
            err=True,
        )
    if output is None:
        click.echo(rendered.text, nl=False)
    else:
        Path(output).write_text(rendered.text, "utf-8")
        click.echo(
            f"wrote {rendered.cases} cases of {result.revision.label} to {output}",
            err=True,
        )
    click.echo(rendered.summary(output_format), err=True)
    for line in rendered.details():
        click.echo(line, err=True)
    for case_id, why in rendered.not_exported:
        click.echo(f"evalcase: error: {case_id} not exported: {why}", err=True)
    if rendered.not_exported or (strict and rendered.not_carried):
        sys.exit(EXIT_FINDINGS)


@main.command("bump")
@click.option(
    "--base",
    default=None,
    metavar="REF",
    help="Compare with this revision (default: [versioning] base_branch, else HEAD); a "
    "branch means its merge base.",
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
    from evalcase.lint.api import default_base

    config = _config(root)
    if base is None and not staged:
        base = default_base(config)  # the same base as plain `evalcase lint`
    edits = bump(config, base=base, staged=staged, dry_run=dry_run, use_cache=not no_cache)
    if not edits:
        click.echo("nothing to bump")
        return
    for edit in edits:
        click.echo(f"{edit.path}: {edit.field} {edit.old} -> {edit.new} ({edit.reason})")
    verb = "would bump" if dry_run else "bumped"
    click.echo(f"{verb} {len(edits)} version{'s' * (len(edits) != 1)}")


if __name__ == "__main__":  # pragma: no cover
    main()
