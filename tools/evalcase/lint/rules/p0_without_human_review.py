"""A P0 case without a human review record or a documented reason.

High-risk samples are reviewed by people: a P0 case decides releases on its own (its
gate needs every attempt to pass), so what it expects must have been checked by someone
accountable. A P0 case carries at least one review record with a reviewer and a decision
(``approved`` or ``rejected``; ``needs_revision`` asks for changes, so the review is not
done), written by ``evalcase review-case``, or, while it waits for one,
``metadata.human_review_waiver`` with the documented reason (who decided, until when).
An observation case never counts and never gates, so it may wait for its review.

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

    risk_level: P0
    metadata:
      review_records:               # changes asked for: not a finished review
        - {reviewer: 安全合规组, review_result: needs_revision, case_version: v1}
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.rules.blank_reviewer import blank
from evalcase.lint.semantic import data_of, roles
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC415"
NAME = "p0-without-human-review"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)

_DECIDED = ("approved", "rejected")


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None or data.get("risk_level") != "P0":
        return
    if any(role == "observation" for role, _, _ in roles(doc)):
        return  # never counted, never gates (EC416): a review still asking for changes is fine
    records = doc.get(("metadata", "review_records"))
    if isinstance(records, list) and any(
        isinstance(r, dict)
        and isinstance(r.get("reviewer"), str)
        and r["reviewer"].strip()
        and not blank(r["reviewer"])
        # needs_revision asks for changes: the review is not finished, nothing was decided
        and r.get("review_result") in _DECIDED
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
        "this P0 case has no finished human review (a record whose review_result is approved "
        "or rejected); high-risk cases are reviewed by people "
        "before they gate a release: review it with `evalcase review-case` (it writes "
        "metadata.review_records), or document why not yet in metadata.human_review_waiver",
    )
