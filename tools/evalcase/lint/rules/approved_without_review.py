"""``review_status: approved`` without a current approving review record.

Approval is a recorded decision, not a flag (docs/fields.md, review records): who
reviewed, with what result, for which views. ``review_records`` run oldest first; the
current approval is the run of approving reviews after the last rejection or request for
revision, so a later ``rejected`` or ``needs_revision`` withdraws an earlier approval
until someone approves again. An approval holds for the ``case_version`` it names (see
EC411).

Passing::

    metadata:
      review_status: approved
      review_records:
        - {reviewer: 退款业务专家, review_result: approved, case_version: v1,
           approved_for: [regression]}

Failing::

    metadata:
      review_status: approved
      review_records:
        - {reviewer: 退款业务专家, review_result: needs_revision}
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import approval, data_of, review_verdict
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC402"
NAME = "approved-without-review"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None or doc.get(("metadata", "review_status")) != "approved":
        return
    state = approval(doc)
    if state.approved or state.stale:
        return  # an approval of another case_version is EC411's
    line, col = doc.locate(("metadata", "review_status"))
    if state.blocking is None:
        reason = "there is no review record"
    else:
        verdict, reviewer, vline, _ = review_verdict(doc, state.blocking)
        reason = f"the latest review (line {vline}, by {reviewer}) is {verdict!r}"
    yield report(
        doc.path,
        line,
        col,
        f"review_status is approved but {reason}; add a review record with "
        "review_result: approved (reviewer, reviewed_at, approved_for), or set review_status "
        "to what the reviews say",
    )
