"""A tool definition that says ``side_effect: false`` but changes state.

Whether a tool has side effects decides which cases need a ``side_effect_policy``
(EC305), whether the runner snapshots state before each call and what the audit record
holds (docs/fields.md). A tool whose definition declares ``side_effect: false`` while a
response carries ``state_change`` (or the definition names a ``handler`` that may write)
is wrong in one of the two places, and every case using it escapes the side-effect
checks. Set ``side_effect: true``, or remove the state changes.

Passing::

    data:
      name: refund_submit
      side_effect: true
      responses:
        - when: {order_id: ORDER_123}
          result: {status: submitted}
          state_change: {orders.ORDER_123.refund_status: refund_submitted}

Failing::

    data:
      name: refund_submit
      side_effect: false
      responses:
        - when: {order_id: ORDER_123}
          state_change: {orders.ORDER_123.refund_status: refund_submitted}
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC317"
NAME = "side-effect-contradiction"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.FIXTURE)
    if data is None or data.get("kind") != "tool":
        return
    body = data.get("data")
    if not isinstance(body, dict) or body.get("side_effect") is not False:
        return
    changes: list[tuple[str | int, ...]] = []
    responses = body.get("responses")
    if isinstance(responses, list):
        for i, response in enumerate(responses):
            if isinstance(response, dict) and response.get("state_change"):
                changes.append(("data", "responses", i, "state_change"))
    default = body.get("default")
    if isinstance(default, dict) and default.get("state_change"):
        changes.append(("data", "default", "state_change"))
    if not changes:
        return
    line, col = doc.locate(("data", "side_effect"))
    where = ", ".join(f"line {doc.locate_key(p)[0]}" for p in changes[:4])
    yield report(
        doc.path,
        line,
        col,
        f"this tool says side_effect: false but changes state ({where}); a tool that "
        "changes state is a side-effect tool: set side_effect: true (cases offering it then "
        "need a side_effect_policy), or remove the state changes",
    )
