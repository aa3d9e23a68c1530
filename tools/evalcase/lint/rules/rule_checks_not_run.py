"""The case lists ``evaluator_config.rule_checks`` but no grader runs them.

Rule checks (``no_refund_promise``, ``no_forbidden_tool``, ``no_privacy_leak``...) are run
by the ``trace_rule`` grader, and only by it. A case that lists them without a
``{type: trace_rule}`` among its graders reads as if its verdict covered them, but none
would run: a reviewer sees ``rule_checks: [no_refund_promise]`` and trusts a pass that
never looked for a promise. The graders are read as grading reads them (old names mapped;
a case without ``graders`` gets none by default), so this rule is exactly right about
whether ``trace_rule`` will run. Grading does not skip them silently either: such a case's
attempts get a hard ``(rule_checks)`` result in ``error`` naming the checks, so they never
pass. Fix: add ``{type: trace_rule}`` to ``evaluator_config.graders`` (hard by default, so
a failing check fails the attempt), or drop the list. A ``TODO:`` placeholder among the
checks is EC451's.

Passing::

    evaluator_config:
      rule_checks: [no_refund_promise]
      graders: [{type: llm_rubric, weight: 0.7}, {type: trace_rule, weight: 0.3}]

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
        "evaluator_config.rule_checks and the case configures none; add {type: trace_rule} "
        "to evaluator_config.graders, or drop the list",
    )
