"""A tool fixture whose parameter schema is not a valid JSON Schema.

``data.parameters`` is the JSON Schema (2020-12) that every call of the tool is checked
against: by the runner before a response is chosen, by EC304 for ``expected_args`` and by
EC606 for each response's ``when``. A misspelled type, a ``pattern`` that is not a regular
expression or a keyword given the wrong kind of value makes the schema unusable, so the
calls it should check are not checked at all. Each problem is reported on the line of the
keyword that is wrong; fix the keyword (see https://json-schema.org/understanding-json-schema/).

Passing::

    parameters:
      type: object
      properties:
        order_id: {type: string, pattern: "^ORDER_[0-9]+$"}

Failing::

    parameters:
      type: object
      properties:
        order_id: {type: strng}          # not a JSON Schema type
        amount: {minimum: "0"}           # a number, not text
"""

from collections.abc import Iterable

from evalcase.contract.param_schema import problems
from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC418"
NAME = "tool-schema-invalid"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.FIXTURE)
    if data is None or data.get("kind") != "tool" or not isinstance(data.get("data"), dict):
        return
    params = data["data"].get("parameters")
    if params is None:
        return
    for problem in problems(params):
        line, col = doc.locate(("data", "parameters", *problem.path))
        shown = "data.parameters" + "".join(
            f"[{p}]" if isinstance(p, int) else f".{p}" for p in problem.path
        )
        yield report(
            doc.path,
            line,
            col,
            f"{shown} is not a valid JSON Schema: {problem.message}; calls of this tool "
            "cannot be checked until it is fixed",
        )
