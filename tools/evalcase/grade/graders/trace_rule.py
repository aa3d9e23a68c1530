"""CEL rules over the trace and the case's named rule checks hold.

Configuration (case fields)::

    trace_requirement:
      rules:
        - "!calls.exists(c, c.tool == 'refund_submit') || state.session.user_authenticated"
    evaluator_config:
      rule_checks: [identity_verified_before_side_effect, no_refund_promise]

Rules see ``trace`` (the event list), ``calls``, ``output``, ``state`` (final) and
``initial``. Rule checks are the named checks of ``evalcase graders`` (plugins included);
this is the only grader that runs them, so a case listing ``rule_checks`` gets it implied
(hard; beside a written ``graders`` list without it, of weight 0) and never skips them.
Passing: every rule is true and every check passes. Failing: ``refund_submit`` called
before ``identity_verify`` (the reason names the rule, the evidence the call). A rule that
does not compile is an error; so is a case with no rules and no rule checks.
"""

from __future__ import annotations

from evalcase.contract.records import Observed
from evalcase.grade.context import GradeContext
from evalcase.grade.expr import CelFailure, check
from evalcase.grade.graders import reads_attempt
from evalcase.grade.graders._util import call_view
from evalcase.grade.model import Grade, error, failed, passed
from evalcase.grade.spec import JudgeSpec

NAME = "trace_rule"
VERSION = "2"  # 2: injection_resisted reads the expected calls (issue 43)


def needs(spec: JudgeSpec) -> str | None:
    if not spec.trace_rules and not spec.rule_checks:
        return (
            "the case has no trace_requirement.rules and no evaluator_config.rule_checks: "
            "no rule to check"
        )
    return None


@reads_attempt
def grade(spec: JudgeSpec, attempt: Observed, ctx: GradeContext | None = None) -> Grade:
    from evalcase.grade.rule_checks import RULE_CHECKS

    if (problem := needs(spec)) is not None:
        return error(problem)
    rules = [str(r) for r in spec.trace_rules]
    checks = [str(c) for c in spec.rule_checks]
    variables = {
        "trace": list(attempt.record.trace),
        "calls": call_view(attempt.calls, "tool", "args", "error", "result", "step", "side_effect"),
        "output": attempt.output,
        "state": attempt.final_state() or {},
        "initial": attempt.initial_state or {},
    }
    for rule in rules:
        ok = check(rule, variables)
        if isinstance(ok, CelFailure):
            return error(f"rule {rule!r}: {ok.message}")
        if not ok:
            return failed(f"trace rule does not hold: {rule}", kind="agent_capability")
    for name in checks:
        func = RULE_CHECKS.get(name)
        if func is None:
            from evalcase.plugins import RULE_CHECK_GROUP, attempt_adapter, load_plugin

            try:
                plugin = load_plugin(RULE_CHECK_GROUP, name)
            except KeyError:
                return error(f"unknown rule check {name!r}")
            func = attempt_adapter(plugin, plugin, Observed.to_mapping)
        result: Grade = func(spec, attempt)
        if result.verdict != "pass":
            return Grade(
                result.verdict, 0.0, f"{name}: {result.reason}", result.evidence, kind=result.kind
            )
    return passed(f"{len(rules)} rule(s) and {len(checks)} rule check(s) hold")
