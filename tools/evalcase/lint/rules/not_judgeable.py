"""A case that cannot be judged as written: nothing configured, or a grader with nothing
to grade, or tool arguments left to an LLM judge.

A case must be judgeable: its ``evaluator_config`` says how. Reported:

- an empty ``evaluator_config`` (no graders, no rule checks, no judge);
- a grader whose answer key is missing: ``state_match`` without ``final_state_check``,
  ``tool_calls`` without ``expected_calls`` (or ``expected_tool_sequence`` /
  ``expected_args``), ``side_effect_policy`` without a ``side_effect_policy``,
  ``trace_rule`` without ``trace_requirement``, ``evidence_recall_at_k`` without
  ``gold_evidence``, ``citation`` without ``citation_requirement`` or ``gold_evidence``,
  ``exact_match`` without ``reference``, ``llm_rubric`` without a rubric. Such a grader
  has nothing to compare with, so it can only pass or fail by accident (a grader given
  its own options, such as ``{type: state_match, expected: ...}``, is not reported);
- expected tool arguments that no script grades: arguments are checked by scripts
  (tool arguments are checked by scripts), so a case that states arguments and grades
  with ``llm_rubric`` needs a ``tool_calls`` grader too.

Passing::

    final_state_check: {expected: {orders.ORDER_6001.refund_status: refund_submitted}}
    evaluator_config:
      graders: [{type: state_match, weight: 0.5}, {type: llm_rubric, weight: 0.5}]

Failing::

    evaluator_config:
      graders: [{type: state_match, weight: 0.5}]     # no final_state_check
"""

from collections.abc import Iterable
from typing import Any

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of, expects_arguments
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC318"
NAME = "not-judgeable"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)

# Grader -> the case fields, any one of which gives it something to grade.
NEEDS: dict[str, tuple[str, ...]] = {
    "state_match": ("final_state_check",),
    "tool_calls": ("expected_calls", "expected_tool_sequence", "expected_args"),
    "side_effect_policy": ("side_effect_policy",),
    "trace_rule": ("trace_requirement",),
    "evidence_recall_at_k": ("gold_evidence",),
    "citation": ("citation_requirement", "gold_evidence"),
    "exact_match": ("reference",),
    "llm_rubric": ("rubric",),
}
_OWN = frozenset({"type", "weight", "name", "description"})


def _present(data: dict[str, Any], field: str) -> bool:
    value = data.get(field)
    if field == "rubric" and not value:
        judge = data.get("evaluator_config", {})
        judge = judge.get("judge") if isinstance(judge, dict) else None
        value = judge.get("rubric") if isinstance(judge, dict) else None
    return value not in (None, "", [], {}, False)


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
    types = []
    for i, grader in enumerate(graders):
        if not isinstance(grader, dict) or not isinstance(grader.get("type"), str):
            continue
        kind = grader["type"]
        types.append(kind)
        needs = NEEDS.get(kind)
        if needs is None or set(grader) - _OWN or any(_present(data, f) for f in needs):
            continue
        line, col = doc.locate(("evaluator_config", "graders", i, "type"))
        yield report(
            doc.path,
            line,
            col,
            f"grader {kind!r} has nothing to grade: the case has no {' or '.join(needs)}; "
            "a grader without an answer key passes or fails by accident: add it, or remove "
            "the grader",
        )
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
