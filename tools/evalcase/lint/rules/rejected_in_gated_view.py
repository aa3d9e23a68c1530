"""A high-risk case that review rejected or withdrew, still in a gated view.

High-risk cases (P0, P1) go into release gates and compliance evidence (docs/fields.md,
review records); a P0 or P1 case whose latest review is ``rejected`` or ``needs_revision``, or
whose ``review_status`` is ``rejected``, ``needs_revision`` or ``deprecated``, has been
found unclear or wrong. Kept in golden, risk, red_team or regression it would block or
pass releases on an answer key nobody stands behind. Take it out of the gated views
(keep it as ``iteration`` or ``observation`` while it is fixed), or fix it and have it
approved again.

Passing::

    risk_level: P0
    metadata:
      dataset_role: iteration
      review_status: needs_revision

Failing::

    risk_level: P0
    metadata:
      dataset_role: [risk, red_team]
      review_status: rejected
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import GATED_ROLES, approval, data_of, review_verdict, roles
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC413"
NAME = "rejected-in-gated-view"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)

HIGH_RISK = ("P0", "P1")
WITHDRAWN = ("rejected", "needs_revision", "deprecated")


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None or data.get("risk_level") not in HIGH_RISK:
        return
    gated = [(r, ln, c) for r, ln, c in roles(doc) if r in GATED_ROLES]
    if not gated:
        return
    names = ", ".join(r for r, _, _ in gated)
    risk = data.get("risk_level")
    status = doc.get(("metadata", "review_status"))
    if status in WITHDRAWN:
        line, col = doc.locate(("metadata", "review_status"))
        why = f"review_status is {status!r}"
    else:
        state = approval(doc)
        if state.blocking is None or state.stale:
            return  # approved since, for another case_version: EC411
        verdict, reviewer, line, col = review_verdict(doc, state.blocking)
        why = f"its latest review (by {reviewer}) is {verdict!r}"
    yield report(
        doc.path,
        line,
        col,
        f"this {risk} case is in {names} but {why}; a high-risk case that review rejected "
        "or withdrew must not stay in a gated view: move it to iteration or observation "
        "until it is fixed and approved again",
    )
