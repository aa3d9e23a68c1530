"""An approval of another case_version, or one that does not say which version it approved.

An approval is a decision about one version of a case (docs/fields.md, review records): after
the expected behaviour, rubric, graders or task change, the case carries a new
``case_version`` and the old approval no longer covers it. Each review record states the
``case_version`` it judged; only approvals of the current version count. This also stops
a copied case from carrying approvals it never received under its new version.
Reported for cases that rely on approval: ``review_status: approved`` or a gated view
(golden, risk, red_team, regression). Review the current version and record it
(``evalcase review-case PATH --reviewer NAME --result approved --for golden`` writes the
record with the current case_version).

Passing::

    case_version: v3
    metadata:
      review_records:
        - {reviewer: 退款业务专家, review_result: approved, case_version: v3,
           approved_for: [golden]}

Failing::

    case_version: v3
    metadata:
      review_records:
        - {reviewer: 退款业务专家, review_result: approved, case_version: v2,
           approved_for: [golden]}
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import GATED_ROLES, approval, data_of, roles
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC411"
NAME = "approval-stale"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    gated = [r for r, _, _ in roles(doc) if r in GATED_ROLES]
    if doc.get(("metadata", "review_status")) != "approved" and not gated:
        return
    state = approval(doc)
    if state.approved or not state.stale:
        return
    current = data.get("case_version")
    index = state.stale[-1]
    path = ("metadata", "review_records", index)
    record = doc.get(path)
    assert isinstance(record, dict)
    approved = record.get("case_version")
    where = gated or ["approved"]
    if approved is None:
        line, col = doc.locate(path)
        yield report(
            doc.path,
            line,
            col,
            "this approval does not say which case_version it approved, so it approves no "
            f"version; the case is {current} and relies on approval ({', '.join(where)}): "
            f"add case_version: {current} if this review judged the current version, or "
            "review it again (`evalcase review-case` records the version)",
        )
        return
    line, col = doc.locate((*path, "case_version"))
    yield report(
        doc.path,
        line,
        col,
        f"this approval is for case_version {approved}, but the case is {current}; an "
        "approval holds for the version it judged: review the current version and add a "
        f"record with case_version: {current} (`evalcase review-case`), or drop "
        f"{', '.join(where)} until then",
    )
