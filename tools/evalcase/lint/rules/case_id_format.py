"""A case ID that does not follow ``<domain>_<ability>_<scenario...>_<NNN>`` in lower snake case.

Case IDs are long-lived: reports, regressions, review records and audits refer to them
(docs/versioning.md). One spelling everywhere (lower case, words joined by underscores, a
zero-padded sequence number of at least three digits) keeps them sortable, greppable and
safe as file names on every platform.

Passing::

    case_id: refund_rag_member_points_001

Failing::

    case_id: Refund_RAG_member_points_1
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity
from evalcase.naming import CASE_ID_SHAPE, bad_characters, format_problem, suggest_case_id

CODE = "EC201"
NAME = "case-id-format"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    value = data.get("case_id")
    # Characters outside printable ASCII are EC208's to report.
    if not isinstance(value, str) or not value or bad_characters(value):
        return
    problem = format_problem(value)
    if problem is None:
        return
    suggestion = suggest_case_id(value)
    hint = f" (e.g. {suggestion!r})" if suggestion else " (e.g. 'refund_rag_member_points_001')"
    line, col = doc.locate(("case_id",))
    yield report(
        doc.path,
        line,
        col,
        f"case_id {value!r} is not a valid case ID: {problem}; write it as lower snake case "
        f"{CASE_ID_SHAPE}{hint}",
    )
