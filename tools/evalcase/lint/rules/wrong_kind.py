"""A file of one kind placed where another kind belongs (a fixture among cases...).

The location decides which schema applies, so a misplaced file would otherwise produce
a wall of missing-field errors. This rule names what the file looks like and where it
belongs.

Passing::

    # datasets/refund_regression_set/cases/refund_eligibility_001.yaml
    case_id: refund_eligibility_001

Failing::

    # datasets/refund_regression_set/cases/order_123.yaml
    fixture_id: order_123
    kind: state
"""

from collections.abc import Iterable

from evalcase.files import looks_like
from evalcase.lint.base import FileContext, reporter
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC014"
NAME = "wrong-kind"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)

_MARKERS = {
    FileKind.CASE: ("case_id", "expected_behavior"),
    FileKind.FIXTURE: ("fixture_id", "fixture_version"),
    FileKind.MANIFEST: ("dataset_version", "description"),
}
_HOMES = {
    FileKind.CASE: "datasets/<dataset_id>/cases/<case_id>.yaml",
    FileKind.FIXTURE: "fixtures/<kind>/<fixture_id>.yaml",
    FileKind.MANIFEST: "datasets/<dataset_id>/dataset.yaml",
}


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    if not doc.ok or ctx.source.kind is FileKind.UNKNOWN:
        return
    actual = looks_like(doc.data)
    expected = ctx.source.kind
    if actual is None or actual is expected:
        return
    yield report(
        doc.path,
        1,
        1,
        f"this file looks like a {actual.value} but sits where a {expected.value} belongs; "
        f"move it to {_HOMES[actual]}",
    )
