"""A case that cannot be judged as written: nothing configured, or tool arguments left to
an LLM judge.

A case must be judgeable: its ``evaluator_config`` says how. Reported:

- an empty ``evaluator_config`` (no graders, no rule checks, no judge);
- expected tool arguments that no script grades: arguments are checked by scripts
  (tool arguments are checked by scripts), so a case that states arguments and grades
  with ``llm_rubric`` needs a ``tool_calls`` grader too.

A grader that is configured but has nothing to grade (``state_match`` without
``final_state_check``, ``regex`` without patterns...) is EC320's, which asks the grader
itself.

Passing::

    final_state_check: {expected: {orders.ORDER_6001.refund_status: refund_submitted}}
    evaluator_config:
      graders: [{type: state_match, weight: 0.5}, {type: llm_rubric, weight: 0.5}]

Failing::

    expected_args: {refund_submit: {order_id: ORDER_6001}}
    evaluator_config:
      graders: [{type: llm_rubric}]     # the arguments are left to the judge
"""

from collections.abc import Iterable
from typing import Any

from evalcase.contract import graders as graders_of
from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of, expects_arguments
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC318"
NAME = "not-judgeable"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def _why(graders: list[Any]) -> str:
    """The actual cause when a grader looks like it was meant to check the calls."""
    from evalcase.judging import RENAMED_GRADERS, known_graders

    known = known_graders()
    for grader in graders:
        kind = grader.get("type") if isinstance(grader, dict) else None
        if not isinstance(kind, str) or kind in known:
            continue
        if kind in RENAMED_GRADERS:
            return f" (grader {kind!r} was renamed to {RENAMED_GRADERS[kind]!r}, see EC307)"
        return f" (grader {kind!r} is not a known grader, see EC307)"
    return " (only the LLM judge grades this case)"


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    config = data.get("evaluator_config")
    if not isinstance(config, dict):
        return  # missing or wrong type: the schema's
    found = config.get("graders")
    graders: list[Any] = found if isinstance(found, list) else []
    # What runs: the written list, else the graders rule_checks and judge imply.
    runs = graders_of.configured(config)
    if not graders and not config.get("rule_checks") and not config.get("judge"):
        line, col = doc.locate_key(("evaluator_config",))
        yield report(
            doc.path,
            line,
            col,
            "evaluator_config names no grader, rule check or judge: nothing can judge this "
            "case; add the graders that compare an attempt with its answer key",
        )
        return
    types = [g["type"] for g in runs if isinstance(g, dict) and isinstance(g.get("type"), str)]
    if expects_arguments(doc) and "tool_calls" not in types and "llm_rubric" in types:
        where = ("expected_calls",) if "expected_calls" in data else ("expected_args",)
        line, col = doc.locate_key(where)
        yield report(
            doc.path,
            line,
            col,
            f"the case states tool arguments but no tool_calls grader checks them{_why(graders)}; "
            "arguments are checked by a script, not left to the judge: add a "
            "{type: tool_calls} grader",
        )
