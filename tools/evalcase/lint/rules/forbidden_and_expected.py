"""A tool that the answer key both forbids and expects.

``forbidden_tools`` says a call to the tool fails the case; ``expected_calls`` (or
``expected_tool_sequence``, ``expected_args``, ``required_tools``) says the case fails
without it (docs/fields.md, docs/grading.md). Both at once cannot be satisfied: every
attempt fails, whatever the agent does, and the failure says nothing about the agent.
Decide which one the scenario means. A call that is right only under a condition belongs
in ``side_effect_policy.precondition`` or an ``any_of`` alternative, not in both lists.

Passing::

    forbidden_tools: [refund_submit]
    expected_calls:
      calls: [{tool: refund_status_lookup, args: {order_id: ORDER_6002}}]

Failing::

    forbidden_tools: [refund_submit]
    expected_calls:
      calls: [{tool: refund_submit, args: {order_id: ORDER_6002}}]
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of, expected_tools, string_items
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity
from evalcase.schemas import dotted

CODE = "EC314"
NAME = "forbidden-and-expected"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    forbidden = {tool: line for _, tool, line, _ in string_items(doc, ("forbidden_tools",))}
    if not forbidden:
        return
    seen: set[str] = set()
    for tool, path in expected_tools(doc):
        if tool not in forbidden or tool in seen:
            continue
        seen.add(tool)
        line, col = doc.locate(path) if path[-1] != tool else doc.locate_key(path)
        yield report(
            doc.path,
            line,
            col,
            f"{tool!r} is expected ({dotted(path)}) and forbidden (forbidden_tools, line "
            f"{forbidden[tool]}); no attempt can satisfy both: keep the one the scenario "
            "means (a conditional call belongs in side_effect_policy.precondition or an "
            "any_of alternative)",
        )
