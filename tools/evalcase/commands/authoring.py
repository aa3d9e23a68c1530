"""Authoring commands: init, new, fmt, import, export, coverage, stats.

Thin: options in, library call, text out, exit status (0 ok, 1 something to fix,
2 usage or fatal error, as everywhere in evalcase).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from evalcase.commands.common import (
    EXIT_FINDINGS,
    config_for,
    fatal_errors,
    root_dir,
    root_option,
    split_words,
)

if TYPE_CHECKING:
    from evalcase.config import Config


@click.command("fmt")
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@click.option("--check", is_flag=True, help="Change nothing; exit 1 if a file would change.")
@root_option
@fatal_errors
def fmt_command(paths: tuple[str, ...], check: bool, root: str | None) -> None:
    """Put cases, manifests and fixtures into canonical form (key order, indentation),
    keeping comments, blank lines and every value. With no PATHS: datasets/ and fixtures/."""
    from evalcase.authoring.fmt import format_files

    results = format_files(root_dir(root), paths, check=check)
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


@click.command("init")
@click.argument("directory", type=click.Path(file_okay=False))
@click.option(
    "--domain",
    "domains",
    multiple=True,
    help="Business domain(s) of your case IDs, comma-separated (asked for when omitted "
    "on a terminal; default: support).",
)
@click.option(
    "--ability",
    "abilities",
    multiple=True,
    help="Abilities under evaluation, comma-separated (asked for when omitted on a "
    "terminal; default: order,refund,policy).",
)
@click.option("--owner", default="ai_eval_team", show_default=True, help="Owning team.")
@click.option("--hooks-repo", default=None, help="Where pre-commit and CI take evalcase from.")
@click.option("--hooks-rev", default=None, help="The commit or tag of --hooks-repo to pin.")
@fatal_errors
def init_command(
    directory: str,
    domains: tuple[str, ...],
    abilities: tuple[str, ...],
    owner: str,
    hooks_repo: str | None,
    hooks_rev: str | None,
) -> None:
    """Start a new repository of evaluation cases in DIRECTORY: layout, evalcase.toml
    with your vocabularies, an example dataset, schemas with the editor mapping,
    pre-commit hooks, a CI workflow and .gitignore. Overwrites nothing."""
    from evalcase.authoring import init

    interactive = sys.stdin.isatty()
    if not domains:
        domains = (
            (click.prompt("Business domains (comma-separated)", default="support"),)
            if interactive
            else init.DEFAULT_DOMAINS
        )
    if not abilities:
        abilities = (
            (click.prompt("Abilities under evaluation", default="order,refund,policy"),)
            if interactive
            else init.DEFAULT_ABILITIES
        )
    hooks = init.default_hooks()
    if hooks_repo or hooks_rev:
        hooks = init.Hooks(hooks_repo or hooks.repo, hooks_rev or hooks.rev)
    result = init.init_repository(
        Path(directory), split_words(domains), split_words(abilities), owner, hooks
    )
    click.echo(f"created {len(result.files)} files in {result.root}")
    click.echo(f"  example dataset {result.dataset_id}, case {result.case_id}")
    click.echo(f"  hooks from {result.hooks.repo} at {result.hooks.rev}")
    warning = result.hooks.unshared_warning()
    if warning:
        click.echo(warning, err=True)
    click.echo(
        "next: cd into it, `git init -b main` (the branch evalcase.toml compares with), "
        "`pre-commit install`, then "
        f"`evalcase new {result.dataset_id} --type tool --scenario {result.example_stem}`"
    )


@click.command("new")
@click.argument("dataset")
@click.option("--type", "case_types", default=None, help="Case types, e.g. tool,agent.")
@click.option(
    "--scenario",
    default=None,
    help="ID stem <domain>_<ability>_<words>, e.g. refund_account_change; evalcase adds "
    "the next free number.",
)
@click.option(
    "--from",
    "from_case",
    default=None,
    metavar="CASE_ID",
    help="Copy execution fields from this case (a draft: no approvals, no golden role).",
)
@root_option
@fatal_errors
def new_command(
    dataset: str,
    case_types: str | None,
    scenario: str | None,
    from_case: str | None,
    root: str | None,
) -> None:
    """Write a new draft case with every required field of its types; what a person must
    decide is a TODO: placeholder that lint reports until it is filled."""
    from evalcase.authoring.new import new_case, parse_types

    config = config_for(root)
    types = parse_types(case_types) if case_types else None
    made = new_case(config, dataset, case_types=types, stem=scenario, from_case=from_case)
    click.echo(f"wrote {made.path.relative_to(config.root).as_posix()}")
    click.echo(
        f"{made.placeholders} placeholder{'s' * (made.placeholders != 1)} to fill "
        "(`evalcase lint` lists them by field, EC451)",
        err=True,
    )


@click.command("new-dataset")
@click.argument("dataset_id")
@click.option("--owner", default="ai_eval_team", show_default=True, help="Owning team.")
@click.option("--title", default=None, help="One-line title (default: the ID in words).")
@root_option
@fatal_errors
def new_dataset_command(dataset_id: str, owner: str, title: str | None, root: str | None) -> None:
    """Write datasets/DATASET_ID/dataset.yaml (a manifest lint accepts) and its cases/
    folder; then add cases with `evalcase new DATASET_ID`."""
    from evalcase.authoring.new_dataset import new_dataset

    config = config_for(root)
    made = new_dataset(config, dataset_id, owner, title)
    click.echo(f"wrote {made.manifest.relative_to(config.root).as_posix()}")
    domain = config.domains[0] if config.domains else "support"
    ability = config.abilities[0] if config.abilities else "order"
    click.echo(
        f"next: `evalcase new {dataset_id} --type tool --scenario {domain}_{ability}_first_case`"
        " (an ID stem <domain>_<ability>_<words>, the first two words from [naming])",
        err=True,
    )


@click.command("import")
@click.argument("file", metavar="PATH", type=click.Path(exists=True, dir_okay=True))
@click.option("--dataset", required=True, help="The dataset the draft cases go into.")
@click.option(
    "--scenario",
    default=None,
    help="ID stem for the new cases (default: the dataset's usual <domain>_<ability> "
    "with bad_case).",
)
@click.option("--type", "case_types", default=None, help="Case types of the drafts.")
@click.option(
    "--skip-invalid",
    is_flag=True,
    help="Import the good lines, list the others (offline files; of traces, spans that "
    "cannot be used are always skipped and listed).",
)
@click.option(
    "--allow-personal-data",
    is_flag=True,
    help="Write even though personal data was found (lint will still report it); from "
    "traces: keep it instead of replacing it by placeholders.",
)
@click.option("--dry-run", is_flag=True, help="Report what would happen; write nothing.")
@root_option
@fatal_errors
def import_command(
    file: str,
    dataset: str,
    scenario: str | None,
    case_types: str | None,
    skip_invalid: bool,
    allow_personal_data: bool,
    dry_run: bool,
    root: str | None,
) -> None:
    """Import production bad cases as draft observation cases with placeholders for
    their expectations: OpenTelemetry traces (OTLP/JSON or protobuf, a file or the
    folder `evalcase collect` writes; each conversation a case, its recorded tool
    results fixtures, personal data replaced by placeholders), or offline JSONL
    (schemas/offline-case.schema.json) or CSV with the same columns."""
    from evalcase.authoring.import_ import plan_import, write
    from evalcase.authoring.new import parse_types
    from evalcase.authoring.traces import is_trace_input

    config = config_for(root)
    if is_trace_input(Path(file)):
        _import_traces(
            config,
            Path(file),
            dataset,
            scenario,
            parse_types(case_types) if case_types else (),
            allow_personal_data,
            dry_run,
        )
        return
    plan = plan_import(
        config,
        Path(file),
        dataset,
        stem=scenario,
        case_types=parse_types(case_types) if case_types else (),
        skip_invalid=skip_invalid,
        allow_personal_data=allow_personal_data,
    )
    for problem in plan.invalid:
        click.echo(f"{file}:{problem.line}: invalid: {problem.message}", err=True)
    for found in plan.personal:
        click.echo(
            f"{file}:{found.line}: personal data ({found.kind}) in {found.field}: {found.masked}",
            err=True,
        )
    for line, external, existing in plan.duplicates:
        click.echo(f"{file}:{line}: skipped {external}: duplicate of {existing}")
    blocked = plan.blocked
    if blocked is not None:
        hint = "--skip-invalid" if blocked == "an invalid line" else "--allow-personal-data"
        click.echo(
            f"nothing written: {blocked} (fix the file, or pass {hint})",
            err=True,
        )
        sys.exit(EXIT_FINDINGS)
    written = plan.planned if dry_run else write(plan)
    for item in written:
        rel = item.path.relative_to(config.root).as_posix()
        click.echo(
            f"{'would write' if dry_run else 'wrote'} {rel} (line {item.line}, {item.external_id})"
        )
    click.echo(
        f"{len(written)} imported, {len(plan.duplicates)} duplicate(s) skipped, "
        f"{len(plan.invalid)} invalid line(s) skipped; drafts with role observation: "
        "fill their TODO: placeholders and have them reviewed",
        err=True,
    )


def _import_traces(
    config: Config,
    path: Path,
    dataset: str,
    scenario: str | None,
    case_types: tuple[str, ...],
    allow_personal_data: bool,
    dry_run: bool,
) -> None:
    from evalcase.authoring.traces import plan_trace_import, write_trace_plan

    plan = plan_trace_import(
        config,
        path,
        dataset,
        stem=scenario,
        case_types=case_types,
        allow_personal_data=allow_personal_data,
    )
    for skipped in plan.skipped:
        span = f" span {skipped.span_id}" if skipped.span_id else ""
        click.echo(f"{skipped.where}: skipped{span}: {skipped.reason}", err=True)
    for note in plan.notes:
        click.echo(f"note: {note}", err=True)
    verb = "replaced" if plan.redacted else "kept (--allow-personal-data)"
    for found in plan.replaced:
        shown = f" by {found.placeholder}" if plan.redacted else ""
        click.echo(f"personal data ({found.kind}) {verb} in {found.where}: {found.masked}{shown}")
    for conversation, case_id in plan.already:
        click.echo(f"{conversation.where}: {conversation.key} already imported as {case_id}")
    for conversation, case_id in plan.duplicates:
        click.echo(f"{conversation.where}: {conversation.key} skipped: duplicate of {case_id}")
    if not plan.conversations:
        click.echo(
            f"nothing written: no conversation in {path} ({plan.spans} span(s); a conversation "
            "needs a model call or agent span with a user message)",
            err=True,
        )
        sys.exit(EXIT_FINDINGS)
    written = [*plan.fixtures, *(c.file for c in plan.cases)]
    if not dry_run:
        write_trace_plan(config, plan)
    for item in written:
        rel = item.path.relative_to(config.root).as_posix()
        click.echo(f"{'would write' if dry_run else 'wrote'} {rel} ({item.what})")
    if not written:
        click.echo("nothing new: every conversation was imported before", err=True)
        return
    kept = "replaced by placeholders" if plan.redacted else "kept"
    click.echo(
        f"{len(plan.cases)} case(s) from {plan.conversations} conversation(s) in "
        f"{plan.spans} span(s), {len(plan.fixtures)} tool fixture(s), "
        f"{len(plan.replaced)} piece(s) of personal data {kept}; drafts with role "
        "observation: fill their TODO: placeholders and have them reviewed",
        err=True,
    )


@click.command("export")
@click.argument("spec", metavar="DATASET@vN")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["jsonl", "inspect", "openai-evals", "promptfoo"]),
    default="jsonl",
    show_default=True,
    help="jsonl (offline JSONL lines, schemas/offline-case.schema.json, with the resolved "
    "case), inspect (Inspect AI json_dataset), openai-evals (registry samples for "
    "Includes), promptfoo (a config: prompts and tests).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False),
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

    result, rendered = export(config_for(root), spec, output_format, use_cache=not no_cache)
    if result.digest_matches is False:
        click.echo(
            f"evalcase: warning: {result.revision.label} reads back with digest "
            f"{result.digest}, not the one its tag recorded (was it made by another "
            "evalcase version or configuration?)",
            err=True,
        )
    from evalcase.commands.common import echo_output, write_output

    if output is None:
        echo_output(rendered.text)
    else:
        write_output(output, rendered.text)
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


@click.command("coverage")
@click.argument("dataset")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "md", "json", "html"]),
    default="text",
    show_default=True,
    help="Output format.",
)
@click.option("-o", "--output", type=click.Path(dir_okay=False), default=None, help="File.")
@root_option
@fatal_errors
def coverage_command(
    dataset: str, output_format: str, output: str | None, root: str | None
) -> None:
    """The coverage matrix of DATASET: approved cases per cell of the manifest's coverage
    dimensions, observation cases and drafts apart, required cells marked; exit 1 when
    a required cell has no approved case."""
    from evalcase.authoring.coverage import RENDERERS, compute

    cov = compute(config_for(root), dataset)
    text = RENDERERS[output_format](cov)
    from evalcase.commands.common import echo_output, write_output

    if output is None:
        echo_output(text)
    else:
        write_output(output, text)
        click.echo(f"wrote {output}", err=True)
    if cov.gaps:
        sys.exit(EXIT_FINDINGS)


@click.command("stats")
@click.argument("datasets", nargs=-1)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "md", "json"]),
    default="text",
    show_default=True,
    help="Output format.",
)
@root_option
@fatal_errors
def stats_command(datasets: tuple[str, ...], output_format: str, root: str | None) -> None:
    """Cases per dataset, type, risk level, role, review status, owner and source (all
    datasets, or those named)."""
    from evalcase.authoring.stats import RENDERERS, collect
    from evalcase.model import FatalError

    config = config_for(root)
    known = {p.name for p in (config.root / "datasets").glob("*") if p.is_dir()}
    unknown = [d for d in datasets if d not in known]
    if unknown:
        raise FatalError(f"no dataset {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    click.echo(RENDERERS[output_format](collect(config, datasets)), nl=False)


COMMANDS = (
    fmt_command,
    init_command,
    new_command,
    new_dataset_command,
    import_command,
    export_command,
    coverage_command,
    stats_command,
)
