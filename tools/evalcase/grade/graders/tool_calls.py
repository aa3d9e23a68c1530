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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalcase.grade.context import GradeContext
from evalcase.grade.graders._util import calls, short, subset_match
from evalcase.grade.model import Attempt, Evidence, Grade, error, failed, passed
from evalcase.grade.spec import JudgeSpec, as_list, field_of

NAME = "tool_calls"
VERSION = "1"


def _matches(want: Any, call: Mapping[str, Any]) -> bool:
    if field_of(want, "tool") != call.get("tool"):
        return False
    return subset_match(dict(field_of(want, "args") or {}), call.get("args") or {})


def _closest(want: Any, made: list[Mapping[str, Any]]) -> str:
    same = [c for c in made if c.get("tool") == field_of(want, "tool")]
    if not same:
        return "it was never called"
    return f"closest: step {same[0].get('step')} with args {short(same[0].get('args'))}"


def check(expected: Any, made: list[Mapping[str, Any]]) -> tuple[bool, str, list[Evidence]]:
    order = str(field_of(expected, "order", "in_order") or "in_order")
    wanted = as_list(field_of(expected, "calls"))
    if not wanted:
        if made:
            return (
                False,
                f"no call expected, but the agent called {made[0].get('tool')}",
                [Evidence(made[0].get("step"), "calls.0")],
            )
        return True, "no call expected and none made", []
    if order == "exact":
        for i, want in enumerate(wanted):
            if i >= len(made) or not _matches(want, made[i]):
                got = made[i] if i < len(made) else None
                step = got.get("step") if got else None
                shown = f"{got.get('tool')} {short(got.get('args'))}" if got else "nothing"
                return (
                    False,
                    (
                        f"call {i + 1} should be {field_of(want, 'tool')} "
                        f"{short(field_of(want, 'args') or {})}, got {shown}"
                    ),
                    [Evidence(step, f"calls.{i}")],
                )
        if len(made) > len(wanted):
            extra = made[len(wanted)]
            return (
                False,
                f"unexpected extra call {extra.get('tool')}",
                [Evidence(extra.get("step"), f"calls.{len(wanted)}")],
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
                        f"expected call {field_of(want, 'tool')} "
                        f"{short(field_of(want, 'args') or {})} not made; "
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
                    f"expected call {field_of(want, 'tool')} "
                    f"{short(field_of(want, 'args') or {})} not made in order; "
                    f"{_closest(want, made)}"
                ),
                evidence,
            )
        evidence.append(Evidence(made[position].get("step"), f"calls.{position}"))
        position += 1
    return True, f"{len(wanted)} expected calls made in order", evidence


def needs(spec: JudgeSpec) -> str | None:
    if field_of(spec, "expected_calls") is None:
        return (
            "the case has no expected_calls (or expected_tool_sequence / expected_args): "
            "nothing to compare"
        )
    return None


def grade(spec: JudgeSpec, attempt: Attempt, ctx: GradeContext | None = None) -> Grade:
    if (problem := needs(spec)) is not None:
        return error(problem)
    expected = field_of(spec, "expected_calls")
    alternatives = as_list(field_of(expected, "any_of"))
    made = [c for c in calls(attempt) if c.get("valid", True) is not False]
    reasons = []
    for i, alternative in enumerate(alternatives or [expected]):
        ok, reason, evidence = check(alternative, made)
        if ok:
            prefix = f"alternative {i + 1}: " if alternatives else ""
            return passed(prefix + reason, *evidence)
        reasons.append((reason, evidence))
    if len(reasons) == 1:
        return failed(reasons[0][0], *reasons[0][1])
    return failed("; ".join(f"alternative {i + 1}: {r}" for i, (r, _) in enumerate(reasons)))
