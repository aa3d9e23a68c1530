"""A side-effect policy without an idempotency key.

A tool that changes business state must not do it twice for one request: a retried
refund, a repeated account change (docs/fields.md, docs/grading.md). The policy's
``idempotency_key`` lists the argument names that identify one request
(``[order_id, item_id, refund_request_id]``); graders and the runner's audit record use
it to tell a retry from a duplicate. A policy without one, or with an empty list, cannot
judge duplicates: name the arguments.

Passing::

    side_effect_policy:
      tool: refund_submit
      confirmation_required: true
      idempotency_key: [order_id, item_id, refund_request_id]

Failing::

    side_effect_policy:
      tool: refund_submit
      confirmation_required: true
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of, policies
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC316"
NAME = "idempotency-key-missing"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    for path, policy in policies(doc):
        key = policy.get("idempotency_key")
        if isinstance(key, list) and any(isinstance(k, str) and k.strip() for k in key):
            continue
        if isinstance(key, str) and key.strip():
            continue
        tool = policy.get("tool")
        at = (*path, "idempotency_key") if "idempotency_key" in policy else (*path, "tool")
        line, col = doc.locate(at) if at[-1] == "idempotency_key" else doc.locate_key(at)
        yield report(
            doc.path,
            line,
            col,
            f"the side_effect_policy for {tool!r} has no idempotency_key; name the arguments "
            "that identify one request (e.g. idempotency_key: [order_id, refund_request_id]) "
            "so a duplicate call can be told from a retry",
        )
