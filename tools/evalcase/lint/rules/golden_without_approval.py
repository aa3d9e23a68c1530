"""A golden case without a current approval for golden.

The golden view holds the paths that must never regress; a case enters it only when a
review approved it for golden (docs/fields.md, review records, ``approved_for``). The
current approval is the run of approving reviews after the last rejection or request for
revision (see EC402), so a golden case whose latest review rejected it is reported at
that review. The case's ``review_status`` must be ``approved`` as well, and the approval
must be for the case's current ``case_version`` (EC411).

Passing::

    metadata:
      dataset_role: [golden, regression]
      review_status: approved
      review_records:
        - {reviewer: 退款业务专家, review_result: approved, case_version: v1,
           approved_for: [golden, regression]}

Failing::

    metadata:
      dataset_role: golden
      review_status: approved
      review_records:
        - {reviewer: 退款业务专家, review_result: rejected}
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import approval, approved_for_at, data_of, review_verdict, roles
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC403"
NAME = "golden-without-approval"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)

_FIX = "remove golden from dataset_role until a review approves the case for golden"


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    golden = next(((ln, c) for role, ln, c in roles(doc) if role == "golden"), None)
    if golden is None:
        return
    state = approval(doc)
    if not state.approved and state.stale:
        return  # approved since, but for another case_version: EC411 says so
    if state.blocking is not None and data.get("risk_level") in ("P0", "P1"):
        return  # a rejected high-risk case in a gated view: EC413
    if state.blocking is not None:
        verdict, reviewer, line, col = review_verdict(doc, state.blocking)
        yield report(
            doc.path,
            line,
            col,
            f"this golden case's latest review (by {reviewer}) is {verdict!r}; a golden case "
            f"needs an approved review whose approved_for includes golden: {_FIX}",
        )
        return
    if not state.approved:
        yield report(
            doc.path,
            golden[0],
            golden[1],
            "this case is golden but has no review record; a golden case needs an approved "
            "review whose approved_for includes golden (metadata.review_records)",
        )
        return
    if "golden" not in state.approved_for:
        line, col = approved_for_at(doc, state)
        granted = ", ".join(sorted(state.approved_for)) or "nothing"
        yield report(
            doc.path,
            line,
            col,
            f"this golden case is approved for {granted}, not golden; a golden case needs an "
            f"approved review whose approved_for includes golden: {_FIX}",
        )
        return
    status = doc.get(("metadata", "review_status"))
    if isinstance(status, str) and status != "approved":
        line, col = doc.locate(("metadata", "review_status"))
        yield report(
            doc.path,
            line,
            col,
            f"this golden case has review_status {status!r}; a golden case is an approved "
            "case: set review_status to approved (its reviews approve it), or "
            f"{_FIX}",
        )
