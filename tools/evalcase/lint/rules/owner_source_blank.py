"""An ``owner`` or ``source`` that is only whitespace.

Every case, fixture and dataset says who maintains it and where its data comes from
(docs/versioning.md: maintainable; docs/authoring.md: a traceable source). The schema
requires the fields and rejects empty text; this rule catches values that only look
filled in: spaces, full-width spaces, zero-width characters.

Passing::

    source: 线上日志改写
    metadata:
      owner: ai_eval_team

Failing::

    source: "　"          # a full-width space
    metadata:
      owner: "  "
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.loader import Document, Path
from evalcase.model import FileKind, Finding, Severity
from evalcase.naming import is_blank

CODE = "EC406"
NAME = "owner-source-blank"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)

_FIELDS: dict[FileKind, tuple[Path, ...]] = {
    FileKind.CASE: (("source",), ("metadata", "owner")),
    FileKind.FIXTURE: (("source",),),
    FileKind.MANIFEST: (("owner",),),
}


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    kind = ctx.source.kind
    if kind not in _FIELDS or data_of(doc, ctx, kind) is None:
        return
    for path in _FIELDS[kind]:
        value = doc.get(path)
        # Empty text is the schema's to report (EC105).
        if isinstance(value, str) and value and is_blank(value):
            line, col = doc.locate(path)
            field = ".".join(str(p) for p in path)
            what = "who maintains it" if path[-1] == "owner" else "where its data comes from"
            yield report(
                doc.path,
                line,
                col,
                f"{field} is blank (only whitespace or invisible characters); say {what}",
            )
