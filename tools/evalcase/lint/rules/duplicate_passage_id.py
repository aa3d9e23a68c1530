"""A passage ID used twice in one document of a corpus, or a document ID used twice.

Gold evidence names a passage as ``doc_id`` + ``passage_id`` (docs/fields.md); retrieval
metrics and citation checks count hits by the same pair. Two passages with one ID make
evidence ambiguous (which text supports the answer?) and let a wrong passage count as a
hit. Give every document of a corpus its own ``doc_id`` and every passage of a document
its own ``passage_id``.

Passing::

    documents:
      - doc_id: refund_policy_general_001
        passages:
          - {passage_id: p01, text: 七天无理由退货……}
          - {passage_id: p02, text: 质量问题售后……}

Failing::

    documents:
      - doc_id: refund_policy_general_001
        passages:
          - {passage_id: p01, text: 七天无理由退货……}
          - {passage_id: p01, text: 质量问题售后……}
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC209"
NAME = "duplicate-passage-id"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.FIXTURE)
    if data is None or data.get("kind") != "corpus":
        return
    documents = doc.get(("data", "documents"))
    if not isinstance(documents, list):
        return
    doc_seen: dict[str, int] = {}
    for i, document in enumerate(documents):
        if not isinstance(document, dict):
            continue
        doc_id = document.get("doc_id")
        if isinstance(doc_id, str):
            if doc_id in doc_seen:
                line, col = doc.locate(("data", "documents", i, "doc_id"))
                yield report(
                    doc.path,
                    line,
                    col,
                    f"doc_id {doc_id!r} is used again (first at line {doc_seen[doc_id]}); "
                    "evidence names documents by ID: give each document its own doc_id, or "
                    "merge their passages",
                )
            else:
                doc_seen[doc_id] = doc.locate(("data", "documents", i, "doc_id"))[0]
        passages = document.get("passages")
        if not isinstance(passages, list):
            continue
        seen: dict[str, int] = {}
        for j, passage in enumerate(passages):
            pid = passage.get("passage_id") if isinstance(passage, dict) else None
            if not isinstance(pid, str | int) or isinstance(pid, bool):
                continue
            at = ("data", "documents", i, "passages", j, "passage_id")
            key = str(pid)
            if key in seen:
                line, col = doc.locate(at)
                yield report(
                    doc.path,
                    line,
                    col,
                    f"passage_id {key!r} is used twice in document {doc_id!r} (first at line "
                    f"{seen[key]}); gold evidence and citations name passages by ID: give "
                    "each passage its own passage_id",
                )
            else:
                seen[key] = doc.locate(at)[0]
