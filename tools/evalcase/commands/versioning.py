"""`evalcase tag`, `datasets`, `diff` and `bump`: releases, what each dataset holds,
changelogs between versions, and the version bumps lint asks for."""

from __future__ import annotations

import click

from evalcase.commands.common import config_for, fatal_errors, root_option


@click.command("tag")
@click.argument("dataset")
@click.option(
    "--override-audit",
    "override_audit",
    default=None,
    metavar="REASON",
    help="Release even though counted cases have unresolved audit findings (or, with "
    "[versioning] require_audit, no audit); REASON and the cases are recorded in the tag.",
)
@root_option
@fatal_errors
def tag_command(dataset: str, override_audit: str | None, root: str | None) -> None:
    """Release DATASET: tag HEAD as <dataset_id>@<dataset_version>.

    Refuses unless the working tree is clean, the repository lints clean, the
    manifest's version has no tag yet and no counted case has an unresolved audit
    finding stored by evalcase audit (docs/audit.md). The annotated tag records the case
    count, every case ID with its case_version, and the dataset digest. Tags are never
    moved.
    """
    from evalcase.actions import tag_dataset

    def warn(message: str) -> None:
        click.echo(f"evalcase: warning: {message}", err=True)

    name = tag_dataset(config_for(root), dataset, override_audit=override_audit, warn=warn)
    click.echo(f"created tag {name}")


@click.command("datasets")
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

    rows = list_datasets(config_for(root))
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


@click.command("diff")
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

    log = diff(config_for(root), old, new, use_cache=not no_cache)
    render = {"text": render_text, "md": render_markdown, "json": render_json}[output_format]
    click.echo(render(log), nl=False)


@click.command("bump")
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

    config = config_for(root)
    if base is None and not staged:
        chosen = default_base(config)  # the same base as plain `evalcase lint`
        base = chosen.ref
        if chosen.note:
            click.echo(chosen.note, err=True)
    edits = bump(config, base=base, staged=staged, dry_run=dry_run, use_cache=not no_cache)
    if not edits:
        click.echo("nothing to bump")
        return
    for edit in edits:
        click.echo(f"{edit.path}: {edit.field} {edit.old} -> {edit.new} ({edit.reason})")
    verb = "would bump" if dry_run else "bumped"
    click.echo(f"{verb} {len(edits)} version{'s' * (len(edits) != 1)}")


COMMANDS = (tag_command, datasets_command, diff_command, bump_command)
