"""A RAG case that does not say on which date it is set.

Policies change; a RAG case's answer is right on one date and wrong on another (docs/fields.md:
the knowledge base version and the date decide what evidence is in force). The
case states that date in ``environment_requirements.effective_at`` (or
``environment.effective_at``): it tells the run which passages are in force, and lets
lint check that the gold evidence was in force then (EC306). Without it, evidence that
takes effect later, or has been replaced, passes unnoticed.

Passing::

    case_types: [rag]
    environment_requirements:
      corpus_version: refund_policy_2026_07
      effective_at: "2026-07-08"

Failing::

    case_types: [rag]
    environment_requirements:
      corpus_version: refund_policy_2026_07
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC313"
NAME = "rag-effective-at-missing"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    types = data.get("case_types")
    if not isinstance(types, list) or "rag" not in types:
        return
    for block in ("environment_requirements", "environment"):
        value = data.get(block)
        if isinstance(value, dict) and "effective_at" in value:
            return  # a wrong value is the schema's (and EC016's)
    where = "environment_requirements" if "environment_requirements" in data else "case_types"
    line, col = doc.locate_key((where,))
    yield report(
        doc.path,
        line,
        col,
        "this RAG case does not say on which date it is set; add "
        "environment_requirements.effective_at (YYYY-MM-DD): it decides which evidence is "
        "in force, and lets lint check the gold evidence against it",
    )
