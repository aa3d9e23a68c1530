"""A review record whose reviewer is blank.

A review is a recorded decision by someone (docs/fields.md, review records): the reviewer names the
person or reviewing role accountable for it. A reviewer that is only spaces, or a
placeholder such as ``-`` or ``?``, is no reviewer, and the record proves nothing. Name
who reviewed.

Passing::

    review_records:
      - {reviewer: 退款业务专家, review_result: approved, case_version: v1}

Failing::

    review_records:
      - {reviewer: "  ", review_result: approved, case_version: v1}
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC414"
NAME = "blank-reviewer"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)

_PLACEHOLDERS = frozenset(
    {"-", "--", "?", "??", "n/a", "na", "none", "null", "tbd", "todo", "无", "待定"}
)


def blank(reviewer: object) -> bool:
    """Whether a reviewer value names nobody (the schema reports a missing or empty one)."""
    if not isinstance(reviewer, str) or reviewer == "":
        return False
    text = reviewer.strip()
    return not text or text.casefold() in _PLACEHOLDERS


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    records = doc.get(("metadata", "review_records"))
    if not isinstance(records, list):
        return
    for i, record in enumerate(records):
        if isinstance(record, dict) and blank(record.get("reviewer")):
            line, col = doc.locate(("metadata", "review_records", i, "reviewer"))
            yield report(
                doc.path,
                line,
                col,
                f"reviewer {record.get('reviewer')!r} names nobody; a review record is a "
                "decision someone is accountable for: name the person or reviewing role",
            )
