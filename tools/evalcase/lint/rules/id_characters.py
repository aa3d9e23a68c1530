"""An ID with a character outside printable ASCII (a look-alike letter, an invisible mark).

Spaces, control characters and the path separators ``/`` and ``\\`` are rejected too.

``rеfund_eligibility_001`` with a Cyrillic ``е`` reads exactly like the ASCII ID but is a
different string: references to it fail for no visible reason, and two cases can seem to
share an ID without doing so. Zero-width spaces are invisible altogether, and ``/`` or
``\\`` in an ID would make its file name a path. Case, dataset and fixture IDs and tool
names are therefore printable ASCII without spaces. The finding names each offending
character by code point and Unicode name, with its position (1-based).

Passing::

    case_id: refund_eligibility_001

Failing::

    case_id: rеfund_eligibility_001      # U+0435 CYRILLIC SMALL LETTER IE at position 2
    fixture_id: "order_123\\u200b"         # U+200B ZERO WIDTH SPACE at position 10
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.loader import Document, Path
from evalcase.model import FileKind, Finding, Severity
from evalcase.naming import ascii_form, character_problems

CODE = "EC208"
NAME = "id-characters"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)

_FIELDS: dict[FileKind, tuple[Path, ...]] = {
    FileKind.CASE: (("case_id",), ("dataset_id",)),
    FileKind.MANIFEST: (("dataset_id",),),
    FileKind.FIXTURE: (("fixture_id",),),
}


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    kind = ctx.source.kind
    data = data_of(doc, ctx, kind) if kind in _FIELDS else None
    if data is None:
        return
    paths = list(_FIELDS[kind])
    if kind is FileKind.FIXTURE and data.get("kind") == "tool":
        paths.append(("data", "name"))
    for path in paths:
        value = doc.get(path)
        if not isinstance(value, str):
            continue
        problems = character_problems(value)
        if problems is None:
            continue
        plain = ascii_form(value)
        hint = f" (did you mean {plain!r}?)" if plain and plain != value else ""
        line, col = doc.locate(path)
        yield report(
            doc.path,
            line,
            col,
            f"{'.'.join(str(p) for p in path)} {value!r} contains {problems}; IDs are "
            f"printable ASCII without spaces or path separators{hint}",
        )
