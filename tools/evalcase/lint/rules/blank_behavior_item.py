"""An empty or whitespace-only item in a behaviour or criteria list.

The lists are expected_behavior, negative_behavior, success_criteria and failure_criteria.

A blank item is usually a leftover from editing and reads as an expectation that
checks nothing; it also makes a list look longer than it is (a P0 case with one
blank negative_behavior item has none, see EC401). A warning: delete the item.

Passing::

    expected_behavior:
      - 识别为质量问题售后。

Failing::

    expected_behavior:
      - 识别为质量问题售后。
      - "  "
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of, string_items
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity
from evalcase.naming import is_blank

CODE = "EC409"
NAME = "blank-behavior-item"
SEVERITY = Severity.WARNING
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)

FIELDS = ("expected_behavior", "negative_behavior", "success_criteria", "failure_criteria")


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    if data_of(doc, ctx, FileKind.CASE) is None:
        return
    for field in FIELDS:
        for i, text, line, col in string_items(doc, (field,)):
            if is_blank(text):
                yield report(
                    doc.path,
                    line,
                    col,
                    f"{field}[{i}] is blank; delete the item or write the behaviour",
                )
