"""The case's ``evaluator_config.rule_checks`` would run and decide nothing, or not run.

Rule checks (``no_refund_promise``, ``no_forbidden_tool``, ``no_privacy_leak``...) are run
by the ``trace_rule`` grader, and only by it. A team that declares rule checks means them
to run, so they always imply it: a case that writes no ``graders`` list gets
``{type: trace_rule}`` (hard, weight 1; docs/contract.md, "Graders a case implies"), and a
written list without one gets ``{type: trace_rule, weight: 0}`` added (hard: a failing
check fails the attempt; weight 0: the score stays what the written weights give).

What is left to report is a contradiction the case writes itself: its graders list names
``trace_rule`` as ``hard: false`` (a soft grader only moves the score) and either sets no
``evaluator_config.pass_threshold`` (nothing counts the score, so a failing check changes
no verdict) or gives it weight 0 (it moves no score). A reviewer who sees
``rule_checks: [no_refund_promise]`` would trust a pass that a promise could not fail.
The graders are read as grading reads them (old names mapped, duplicates merged). Fix:
make the ``trace_rule`` hard (drop ``hard: false``), set a ``pass_threshold`` and give it
a weight, or drop the checks. Grading a case with no ``trace_rule`` at all (an old
record's graders) gives its attempts a hard ``(rule_checks)`` result in ``error`` naming
the checks, so they never pass. A ``TODO:`` placeholder among the checks is EC451's.

Passing (``trace_rule`` hard, weight 0, added beside the written list)::

    evaluator_config:
      rule_checks: [no_forbidden_tool, no_cross_user_access]
      graders: [{type: tool_policy}, {type: llm_rubric}]

Passing (``trace_rule`` and ``llm_rubric`` implied)::

    evaluator_config:
      rule_checks: [no_privacy_leak]
      judge: {rubric: refund_policy_faithfulness_v1}

Passing (soft, and its score counts)::

    evaluator_config:
      rule_checks: [no_refund_promise]
      pass_threshold: 0.8
      graders: [{type: llm_rubric, weight: 0.7}, {type: trace_rule, weight: 0.3, hard: false}]

Failing::

    evaluator_config:
      rule_checks: [no_refund_promise]
      graders:
        - {type: llm_rubric}
        - {type: trace_rule, hard: false}  # no pass_threshold: a failing check decides nothing
"""

from collections.abc import Iterable

from evalcase.lint.base import FileContext, reporter
from evalcase.lint.semantic import data_of, judge_view_of
from evalcase.loader import Document
from evalcase.model import FileKind, Finding, Severity
from evalcase.placeholders import is_placeholder

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
    from evalcase.grade.spec import grader_config, unrun_rule_checks

    spec = judge_view_of(doc, data)
    if spec is None:
        return
    # A TODO placeholder (evalcase new) names no check yet: EC451 reports it.
    checks = [c for c in spec.rule_checks if not is_placeholder(c)]
    if not checks:
        return
    line, col = doc.locate_key(("evaluator_config", "rule_checks"))
    if unrun_rule_checks(spec):  # graders that are no list (the schema's EC1xx too)
        yield report(
            doc.path,
            line,
            col,
            f"rule check(s) {', '.join(checks)} would never run: no trace_rule grader runs "
            "them; add {type: trace_rule} to evaluator_config.graders, or drop the checks",
        )
        return
    found = grader_config(spec, "trace_rule")
    if found is None or found.hard:
        return
    threshold = config.get("pass_threshold")
    counted = isinstance(threshold, int | float) and not isinstance(threshold, bool)
    if counted and found.counted_weight > 0:
        return
    why = "it has weight 0" if counted else "evaluator_config sets no pass_threshold"
    graders = config.get("graders")
    index = next(
        (
            i
            for i, g in enumerate(graders if isinstance(graders, list) else ())
            if isinstance(g, dict) and g.get("type") == "trace_rule"
        ),
        None,
    )
    if index is not None:
        line, col = doc.locate(("evaluator_config", "graders", index, "type"))
    yield report(
        doc.path,
        line,
        col,
        f"rule check(s) {', '.join(checks)} run in a soft trace_rule grader (hard: false) "
        f"and {why}: a failing check would change no verdict; make the trace_rule hard, "
        "set pass_threshold and give it a weight, or drop the checks",
    )
