"""The case writes a ``graders`` list that leaves its ``evaluator_config.rule_checks``
unrun.

Rule checks (``no_refund_promise``, ``no_forbidden_tool``, ``no_privacy_leak``...) are run
by the ``trace_rule`` grader, and only by it. A case that writes no ``graders`` list gets
it implied by its rule checks (hard; docs/contract.md, "Graders a case implies"), so the
case contract's own form, ``rule_checks`` and ``judge`` alone, runs them. A case that
writes its own list runs that list and nothing else: without a ``{type: trace_rule}`` in
it the checks would not run, and a reviewer who sees ``rule_checks: [no_refund_promise]``
would trust a pass that never looked for a promise. The graders are read as grading reads
them (old names mapped, implied ones added), so this rule is exactly right about whether
``trace_rule`` will run. Grading does not skip them silently either: such a case's
attempts get a hard ``(rule_checks)`` result in ``error`` naming the checks, so they never
pass. Fix: add ``{type: trace_rule}`` to ``evaluator_config.graders`` (hard by default, so
a failing check fails the attempt), drop the ``graders`` list to have it implied, or drop
the checks. A ``TODO:`` placeholder among the checks is EC451's.

Passing::

    evaluator_config:
      rule_checks: [no_refund_promise]
      graders: [{type: llm_rubric, weight: 0.7}, {type: trace_rule, weight: 0.3}]

Passing (``trace_rule`` and ``llm_rubric`` implied)::

    evaluator_config:
      rule_checks: [no_privacy_leak]
      judge: {rubric: refund_policy_faithfulness_v1}

Failing::

    evaluator_config:
      rule_checks: [no_refund_promise]  # nothing runs it
      graders: [{type: llm_rubric, weight: 1.0}]
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.rules.placeholder import is_placeholder
from evalcase.lint.semantic import data_of, judge_view_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity

CODE = "EC327"
NAME = "rule-checks-not-run"
SEVERITY = Severity.ERROR
SCOPE = "file"

report = reporter(CODE, NAME, SEVERITY)


def check(doc: Document, ctx: FileContext) -> Iterable[Finding]:
    data = data_of(doc, ctx, FileKind.CASE)
    if data is None:
        return
    config = data.get("evaluator_config")
    if not isinstance(config, dict) or not config.get("rule_checks"):
        return
    # Imported here: only cases with rule checks pay for the grading modules.
    from evalcase.grade.spec import unrun_rule_checks

    spec = judge_view_of(doc, data)
    if spec is None:
        return
    # A TODO placeholder (evalcase new) names no check yet: EC451 reports it.
    checks = [c for c in unrun_rule_checks(spec) if not is_placeholder(c)]
    if not checks:
        return
    line, col = doc.locate_key(("evaluator_config", "rule_checks"))
    yield report(
        doc.path,
        line,
        col,
        f"rule check(s) {', '.join(checks)} would never run: only a trace_rule grader runs "
        "evaluator_config.rule_checks and the case's graders list has none; add "
        "{type: trace_rule} to evaluator_config.graders (or drop the graders list to have "
        "it implied), or drop the checks",
    )
