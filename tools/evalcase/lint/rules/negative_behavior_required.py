"""A P0 or P1 case without ``negative_behavior``.

High-risk cases must say what must not happen, not only what should (docs/fields.md):
"never skip identity verification", "never promise an arrival date", "never look up
another user's order". Without it a grader can pass an answer that reaches the right
outcome the forbidden way. The finding is on ``risk_level``; a list of blank items does
not count.

Passing::

    risk_level: P0
    negative_behavior:
      - 未校验身份就修改退款账户。

Failing::

    risk_level: P0
    expected_behavior:
      - 先校验身份再修改退款账户。
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of, string_items
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity
from evalcase.naming import is_blank

CODE = "EC401"
NAME = "negative-behavior-required"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    risk = data.get("risk_level")
    if risk not in ("P0", "P1"):
        return
    items = [text for _, text, _, _ in string_items(doc, ("negative_behavior",))]
    if any(not is_blank(text) for text in items):
        return
    line, col = doc.locate(("risk_level",))
    state = "has only blank items" if items else "is missing"
    yield report(
        doc.path,
        line,
        col,
        f"a {risk} case needs negative_behavior (what must not happen), and it {state}; "
        "list the forbidden behaviours, e.g. skipping identity checks or promising outcomes",
    )
