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

from evalcase.contract import records
from evalcase.grade.context import GradeContext
from evalcase.grade.expr import CelFailure, check
from evalcase.grade.graders._util import calls, output
from evalcase.grade.model import Attempt, Grade, error, failed, passed
from evalcase.grade.spec import JudgeSpec, as_list, field_of

NAME = "trace_rule"
VERSION = "1"


def needs(spec: JudgeSpec) -> str | None:
    if not as_list(field_of(spec, "trace_rules")) and not as_list(field_of(spec, "rule_checks")):
        return (
            "the case has no trace_requirement.rules and no evaluator_config.rule_checks: "
            "no rule to check"
        )
    return None


def grade(spec: JudgeSpec, attempt: Attempt, ctx: GradeContext | None = None) -> Grade:
    from evalcase.grade.rule_checks import RULE_CHECKS

    if (problem := needs(spec)) is not None:
        return error(problem)
    rules = [str(r) for r in as_list(field_of(spec, "trace_rules"))]
    checks = [str(c) for c in as_list(field_of(spec, "rule_checks"))]
    call_view = [
        {k: c.get(k) for k in ("tool", "args", "error", "result", "step", "side_effect")}
        | {"ok": c.get("error") is None}
        for c in calls(attempt)
    ]
    variables = {
        "trace": list(attempt.get("trace") or ()),
        "calls": call_view,
        "output": output(attempt),
        "state": records.final_state(attempt) or {},
        "initial": attempt.get("initial_state") or {},
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
            from evalcase.plugins import RULE_CHECK_GROUP, load_plugin

            try:
                func = load_plugin(RULE_CHECK_GROUP, name)
            except KeyError:
                return error(f"unknown rule check {name!r}")
        result: Grade = func(spec, attempt)
        if result.verdict != "pass":
            return Grade(
                result.verdict, 0.0, f"{name}: {result.reason}", result.evidence, kind=result.kind
            )
    return passed(f"{len(rules)} rule(s) and {len(checks)} rule check(s) hold")
