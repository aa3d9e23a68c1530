"""A tool response whose ``when`` can never match, given the tool's parameter schema.

Arguments are validated against the tool's ``parameters`` before responses are tried, so
a ``when`` that names an argument the schema does not allow, or a value the argument's
schema rejects (a wrong type, a value outside an enum or pattern), describes a call that
never reaches the responses: the rule looks like behaviour but is dead.

Passing (order_id is a string matching ^ORDER_[0-9]+$)::

    responses:
      - when: {order_id: ORDER_2001}

Failing::

    responses:
      - when: {orderid: ORDER_2001}      # no such argument
      - when: {order_id: 2001}           # not a string
"""

from collections.abc import Iterable
from typing import Any

from evalcase.contract.param_schema import first_error
from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of, did_you_mean
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC606"
NAME = "when-never-matches"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def _problem(schema: Any, value: Any) -> str | None:
    if not isinstance(schema, dict | bool):
        return None
    # A broken parameter schema is reported by EC418, on the keyword that is wrong.
    return first_error(schema, value)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.FIXTURE)
    if data is None or data.get("kind") != "tool" or not isinstance(data.get("data"), dict):
        return
    body = data["data"]
    params = body.get("parameters")
    responses = body.get("responses")
    if not isinstance(params, dict) or not isinstance(responses, list):
        return
    properties = params.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    closed = params.get("additionalProperties") is False
    for i, response in enumerate(responses):
        when = response.get("when") if isinstance(response, dict) else None
        if not isinstance(when, dict):
            continue
        for name, value in when.items():
            if name not in properties:
                if closed:
                    line, col = doc.locate_key(("data", "responses", i, "when", name))
                    yield report(
                        doc.path,
                        line,
                        col,
                        f"'when' names argument {name!r}, which the tool's parameters do not "
                        f"allow{did_you_mean(str(name), properties)}; this response never "
                        "matches",
                    )
                continue
            problem = _problem(properties[name], value)
            if problem is not None:
                line, col = doc.locate(("data", "responses", i, "when", name))
                yield report(
                    doc.path,
                    line,
                    col,
                    f"'when' expects {name} = {value!r}, which the tool's parameters reject "
                    f"({problem}); this response never matches",
                )
