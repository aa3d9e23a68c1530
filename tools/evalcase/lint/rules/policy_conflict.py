"""Two side-effect policies for the same tool that disagree.

``side_effect_policy`` may be a list, one policy per tool (docs/fields.md). Two entries
for the same tool with different preconditions, confirmation, idempotency keys,
transitions or audit requirements leave the graders to pick one: whichever they pick,
the case means something its author did not write down. Merge them into one policy per
tool. (Two identical entries are reported too: one of them is a copy to delete.)

Passing::

    side_effect_policy:
      - {tool: refund_submit, confirmation_required: true, idempotency_key: [order_id]}
      - {tool: account_change_request, confirmation_required: true, idempotency_key: [user_id]}

Failing::

    side_effect_policy:
      - {tool: refund_submit, confirmation_required: true, idempotency_key: [order_id]}
      - {tool: refund_submit, confirmation_required: false, idempotency_key: [order_id]}
"""

from collections.abc import Iterable
from typing import Any

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of, policies
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC315"
NAME = "policy-conflict"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    first: dict[str, tuple[int, dict[str, Any]]] = {}
    for path, policy in policies(doc):
        tool = policy.get("tool")
        if not isinstance(tool, str):
            continue
        line, col = doc.locate((*path, "tool"))
        if tool not in first:
            first[tool] = (line, policy)
            continue
        other_line, other = first[tool]
        differ = sorted(k for k in policy.keys() | other.keys() if policy.get(k) != other.get(k))
        what = (
            f"disagrees with it on {', '.join(differ)}"
            if differ
            else "repeats it exactly (a copy to delete)"
        )
        yield report(
            doc.path,
            line,
            col,
            f"a second side_effect_policy for {tool!r} (the first is at line {other_line}) "
            f"{what}; graders need one policy per tool: merge them",
        )
