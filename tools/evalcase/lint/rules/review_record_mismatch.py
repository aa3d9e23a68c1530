"""A review record that does not belong to this case, or to its current content.

A review judges one case as it was: ``evalcase review-case`` writes the ``case_id`` and
the ``content_digest`` of the case's execution and judging fields (everything but the
identity fields and the governance fields, as versioning counts them) into the record.
Reported:

- a record whose ``case_id`` names another case: it was copied with the case it came
  from (five cases copied from one approved case are not five reviewed cases). Review
  this case (``evalcase review-case PATH``) and drop the copied record;
- a record for the current ``case_version`` whose ``content_digest`` no longer matches:
  the case was edited after the review without a ``case_version`` bump, so the review
  did not see what is there now. Bump the version (``evalcase bump``) and review
  again; a record for an older version is history (EC411 says when an approval is stale).

Records without these fields (written by hand, or before review-case wrote them) are
not bound to anything and are not checked here; ``evalcase review-case`` writes bound ones.

Passing::

    case_id: refund_eligibility_001
    metadata:
      review_records:
        - {reviewer: 退款业务专家, review_result: approved, case_id: refund_eligibility_001,
           case_version: v1, content_digest: 18dcd45ce2952d084be65906, approved_for: [regression]}

Failing::

    case_id: refund_eligibility_002          # copied from refund_eligibility_001
    metadata:
      review_records:
        - {reviewer: 退款业务专家, review_result: approved, case_id: refund_eligibility_001,
           case_version: v1, content_digest: 18dcd45ce2952d084be65906, approved_for: [regression]}
"""

from collections.abc import Iterable

from evalcase.config import DEFAULT_GOVERNANCE_FIELDS
from evalcase.index.digest import reviewed_content_digest
from evalcase.index.facts import field_digests
from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC419"
NAME = "review-record-mismatch"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    records = doc.get(("metadata", "review_records"))
    if not isinstance(records, list):
        return
    case_id, version = data.get("case_id"), data.get("case_version")
    current: str | None = None
    accepted: set[str] = set()
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            continue
        where = ("metadata", "review_records", i)
        named = record.get("case_id")
        if isinstance(named, str) and isinstance(case_id, str) and named != case_id:
            line, col = doc.locate((*where, "case_id"))
            yield report(
                doc.path,
                line,
                col,
                f"this {record.get('review_result', 'review')} record reviewed case {named!r}, "
                f"not {case_id!r}: it was copied with the case; review this case with "
                f"`evalcase review-case {doc.path}` and remove the copied record",
            )
            continue
        stored = record.get("content_digest")
        if not isinstance(stored, str) or record.get("case_version") != version:
            continue
        if current is None:
            digests = field_digests(doc)
            current = reviewed_content_digest(data, ctx.config.governance_fields, digests)
            # A record written before `[versioning] governance_fields` changed holds the
            # digest under the default split: the same content, not an edit (the setting
            # has no memory in the record; see the issue note). Computed once per case.
            default = reviewed_content_digest(data, DEFAULT_GOVERNANCE_FIELDS, digests)
            accepted = {current, default}
        if stored not in accepted:
            line, col = doc.locate((*where, "content_digest"))
            yield report(
                doc.path,
                line,
                col,
                f"the case changed after this {record.get('review_result', 'review')} of "
                f"{version} (content digest {stored}, now {current}) without a case_version "
                f"bump, so the review did not see what is there now: bump case_version "
                f"(`evalcase bump`) and review it again (`evalcase review-case {doc.path}`)",
            )
