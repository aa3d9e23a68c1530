"""`evalcase review-case`: record a review of a case, stating the version it judged."""

from __future__ import annotations

import click

from evalcase.commands.common import config_for, fatal_errors, root_option


@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--reviewer", required=True, help="Who reviewed: a person or reviewing role.")
@click.option(
    "--result",
    required=True,
    type=click.Choice(["approved", "rejected", "needs_revision"]),
    help="The verdict.",
)
@click.option(
    "--for",
    "approved_for",
    multiple=True,
    help="Views an approval covers, comma separated (golden,regression,red_team...); "
    "repeat it to name more: every value given is recorded.",
)
@click.option("--issue-type", default=None, help="What the review found (rejections).")
@click.option("--fix", "required_fix", default=None, help="What must change (rejections).")
@click.option("--date", "reviewed_at", default=None, help="Review date, YYYY-MM-DD (today).")
@root_option
@fatal_errors
def _review(
    path: str,
    reviewer: str,
    result: str,
    approved_for: tuple[str, ...],
    issue_type: str | None,
    required_fix: str | None,
    reviewed_at: str | None,
    root: str | None,
) -> None:
    """Append a review record to a case's metadata.review_records, with the case's
    current case_version (an approval holds for the version it judged only)."""
    from evalcase.authoring.case_review import merge_views, record_review

    written = record_review(
        config_for(root),
        path,
        reviewer=reviewer,
        result=result,
        approved_for=merge_views(approved_for),
        issue_type=issue_type,
        required_fix=required_fix,
        reviewed_at=reviewed_at,
    )
    click.echo(
        f"{written.path}: recorded {written.record['review_result']} by "
        f"{written.record['reviewer']} for {written.case_id} {written.case_version}"
    )


review_command: click.Command = click.command("review-case")(_review)


COMMANDS = (review_command,)
