"""The agent made the expected tool calls, in the expected order.

Configuration (case fields)::

    expected_calls:
      order: in_order            # exact | in_order (a subsequence) | any_order
      calls:
        - {tool: refund_eligibility_check, args: {order_id: ORDER_6001}}
        - {tool: refund_submit, args: {order_id: ORDER_6001, user_confirmed: true}}
      # or any_of: [{order: ..., calls: [...]}, ...]   (one alternative must match)

``expected_tool_sequence`` + ``expected_args`` are read as ``order: in_order``. Arguments are
compared on the named fields only. Passing: the agent called ``refund_eligibility_check``
then ``refund_submit`` with those arguments (other calls in between are fine for
``in_order``). Failing: ``refund_submit`` never called with ``order_id: ORDER_6001`` (the
reason names the missing call and the closest call the agent did make). No expected calls
is an error.

In a case with two actors (``user_simulator.tools``) an expected call names its actor:
``{tool: toggle_airplane_mode, actor: user}`` is matched by the user's call only, and a
call without ``actor`` by the agent's only (the same tool name made by the other actor
is not the expected call).
"""

from __future__ import annotations

from evalcase.contract.attempt import ToolCallRecord
from evalcase.contract.records import Observed
from evalcase.contract.task import CallPlan, ExpectedCall, Order
from evalcase.grade.context import GradeContext
from evalcase.grade.graders import reads_attempt
from evalcase.grade.graders._util import short, subset_match
from evalcase.grade.model import Evidence, Grade, error, failed, passed
from evalcase.grade.spec import JudgeSpec

NAME = "tool_calls"
_IN_ORDER: Order = "in_order"
VERSION = "1"


def _matches(want: ExpectedCall, call: ToolCallRecord) -> bool:
    if want.tool != call.tool or want.actor != call.actor:
        return False
    return subset_match(dict(want.args or {}), call.args or {})


def _closest(want: ExpectedCall, made: list[ToolCallRecord]) -> str:
    same = [c for c in made if c.tool == want.tool]
    if not same:
        return "it was never called"
    return f"closest: step {same[0].step} with args {short(same[0].args)}"


def check(expected: CallPlan, made: list[ToolCallRecord]) -> tuple[bool, str, list[Evidence]]:
    order = str(expected.order or "in_order")
    wanted = expected.calls
    if not wanted:
        if made:
            return (
                False,
                f"no call expected, but the agent called {made[0].tool}",
                [Evidence(made[0].step, "calls.0")],
            )
        return True, "no call expected and none made", []
    if order == "exact":
        for i, want in enumerate(wanted):
            if i >= len(made) or not _matches(want, made[i]):
                got = made[i] if i < len(made) else None
                step = got.step if got else None
                shown = f"{got.tool} {short(got.args)}" if got else "nothing"
                return (
                    False,
                    (f"call {i + 1} should be {want.tool} {short(want.args or {})}, got {shown}"),
                    [Evidence(step, f"calls.{i}")],
                )
        if len(made) > len(wanted):
            extra = made[len(wanted)]
            return (
                False,
                f"unexpected extra call {extra.tool}",
                [Evidence(extra.step, f"calls.{len(wanted)}")],
            )
        return True, f"{len(wanted)} calls exactly as expected", []
    if order == "any_order":
        used: set[int] = set()
        for want in wanted:
            hit = next((i for i, c in enumerate(made) if i not in used and _matches(want, c)), None)
            if hit is None:
                return (
                    False,
                    (
                        f"expected call {want.tool} "
                        f"{short(want.args or {})} not made; "
                        f"{_closest(want, made)}"
                    ),
                    [],
                )
            used.add(hit)
        return True, f"{len(wanted)} expected calls made (any order)", []
    position = 0
    evidence: list[Evidence] = []
    for want in wanted:
        while position < len(made) and not _matches(want, made[position]):
            position += 1
        if position >= len(made):
            return (
                False,
                (
                    f"expected call {want.tool} "
                    f"{short(want.args or {})} not made in order; "
                    f"{_closest(want, made)}"
                ),
                evidence,
            )
        evidence.append(Evidence(made[position].step, f"calls.{position}"))
        position += 1
    return True, f"{len(wanted)} expected calls made in order", evidence


def needs(spec: JudgeSpec) -> str | None:
    if spec.expected_calls is None:
        return (
            "the case has no expected_calls (or expected_tool_sequence / expected_args): "
            "nothing to compare"
        )
    return None


@reads_attempt
def grade(spec: JudgeSpec, attempt: Observed, ctx: GradeContext | None = None) -> Grade:
    if (problem := needs(spec)) is not None:
        return error(problem)
    expected = spec.expected_calls
    assert expected is not None  # needs() said so
    alternatives = expected.any_of
    made = [c for c in attempt.calls if c.valid]
    reasons = []
    # No alternative at all: no call is expected.
    for i, alternative in enumerate(alternatives or (CallPlan(_IN_ORDER, ()),)):
        ok, reason, evidence = check(alternative, made)
        if ok:
            prefix = f"alternative {i + 1}: " if alternatives else ""
            return passed(prefix + reason, *evidence)
        reasons.append((reason, evidence))
    if len(reasons) == 1:
        return failed(reasons[0][0], *reasons[0][1])
    return failed("; ".join(f"alternative {i + 1}: {r}" for i, (r, _) in enumerate(reasons)))
