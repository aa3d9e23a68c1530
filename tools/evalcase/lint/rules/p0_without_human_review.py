"""A P0 case without a human review record or a documented reason.

High-risk samples are reviewed by people (seed 000 12.9.4 and 12.9.6): a P0 case decides
releases on its own (its gate needs every attempt to pass), so what it expects must have
been checked by someone accountable. A P0 case carries at least one review record with a
reviewer, or, while it waits for one, ``metadata.human_review_waiver`` with the
documented reason (who decided, until when).

Passing::

    risk_level: P0
    metadata:
      review_records:
        - {reviewer: 安全合规组, review_result: approved, case_version: v1,
           approved_for: [risk, red_team]}

Failing::

    risk_level: P0
    metadata:
      review_status: draft          # no review record, no waiver
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.rules.blank_reviewer import blank
from evalcase.lint.semantic import data_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC415"
NAME = "p0-without-human-review"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None or data.get("risk_level") != "P0":
        return
    records = doc.get(("metadata", "review_records"))
    if isinstance(records, list) and any(
        isinstance(r, dict)
        and isinstance(r.get("reviewer"), str)
        and r["reviewer"].strip()
        and not blank(r["reviewer"])
        for r in records
    ):
        return
    waiver = doc.get(("metadata", "human_review_waiver"))
    if isinstance(waiver, str) and waiver.strip():
        return
    line, col = doc.locate(("risk_level",))
    yield report(
        doc.path,
        line,
        col,
        "this P0 case has no human review record; high-risk cases are reviewed by people "
        "(seed 000 12.9.4): add a review record (metadata.review_records, `evalcase "
        "review`), or document why not yet in metadata.human_review_waiver",
    )
