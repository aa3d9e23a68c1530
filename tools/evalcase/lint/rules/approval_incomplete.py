"""A case in a gated view that its current approval does not cover.

The golden, risk, red_team and regression views feed release gates (docs/authoring.md), so a case
enters one only when a review approved it for that view (docs/fields.md, review records,
``approved_for``). Each gated view the case is in (``metadata.dataset_role``) must be in
the ``approved_for`` of its current approval: the run of approving reviews of the current
``case_version`` after the last rejection or request for revision. Golden is checked by
EC403, a high-risk case whose review rejected it by EC413, an approval of another version
by EC411.

Passing::

    metadata:
      dataset_role: [regression, red_team]
      review_records:
        - {reviewer: 安全评测组, review_result: approved, case_version: v1,
           approved_for: [regression, red_team]}

Failing::

    metadata:
      dataset_role: [regression, red_team]
      review_records:
        - {reviewer: 安全评测组, review_result: approved, case_version: v1,
           approved_for: [regression]}
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import (
    GATED_ROLES,
    approval,
    approved_for_at,
    data_of,
    review_verdict,
    roles,
)
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC412"
NAME = "approval-incomplete"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)

HIGH_RISK = ("P0", "P1")


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    found = roles(doc)
    gated = [(r, ln, c) for r, ln, c in found if r in GATED_ROLES and r != "golden"]
    if not gated:
        return
    state = approval(doc)
    if state.stale and not state.approved:
        return  # EC411
    if state.blocking is not None:
        if data.get("risk_level") in HIGH_RISK:
            return  # EC413
        verdict, reviewer, line, col = review_verdict(doc, state.blocking)
        names = ", ".join(r for r, _, _ in gated)
        yield report(
            doc.path,
            line,
            col,
            f"this case is in {names} but its latest review (by {reviewer}) is {verdict!r}; "
            "a case in a gated view needs an approval that covers the view: fix the case "
            "and have it approved again, or remove it from the view",
        )
        return
    missing = [(r, ln, c) for r, ln, c in gated if r not in state.approved_for]
    if not missing:
        return
    names = ", ".join(r for r, _, _ in missing)
    if not state.approved:
        _, line, col = missing[0]
        yield report(
            doc.path,
            line,
            col,
            f"this case is in {names} but has no approving review; a case in a gated view "
            "needs a review record with review_result: approved, the current case_version "
            f"and approved_for covering {names}",
        )
        return
    line, col = approved_for_at(doc, state)
    granted = ", ".join(sorted(state.approved_for)) or "nothing"
    yield report(
        doc.path,
        line,
        col,
        f"this case is in {names} but its approval covers {granted}; approved_for must "
        f"cover every gated view the case is in: have {names} approved, or remove the "
        "case from it",
    )
