"""The final business state matches final_state_check.

Configuration (case fields)::

    final_state_check:
      expected: {orders.ORDER_6001.refund_status: refund_submitted}  # named fields only
      unchanged: [session, users]        # "*" = everything not named in expected/absent
      absent: [carts.CART_1]
      assert: ["size(orders.ORDER_6001.refunds) <= 1"]   # CEL: state keys, initial, calls, output
      # or any_of: [{expected: ...}, {expected: ...}]

Passing: the attempt's ``final_state`` has ``refund_status: refund_submitted`` and the
other paths are as required. Failing: the reason names the first differing path and the
call (trace step) that last changed it, e.g. ``orders.ORDER_6001.refund_status is
'not_started', expected 'refund_submitted'``. Like tau-bench, only named fields are
compared: a mapping in ``expected`` checks its own keys, not extra keys in the state.
No final_state_check, or an attempt without a recorded final state, is an error, never a
pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalcase.contract import records
from evalcase.grade.context import GradeContext
from evalcase.grade.expr import MISSING, CelFailure, check, get_path, split_path, state_variables
from evalcase.grade.graders._util import calls, output, short, subset_match
from evalcase.grade.model import Attempt, Evidence, Grade, error, failed, passed
from evalcase.grade.spec import JudgeSpec, as_list, field_of

NAME = "state_match"
VERSION = "1"


def _changed_at(attempt: Attempt, path: str) -> int | None:
    step = None
    for call in calls(attempt):
        for change in call.get("changes") or ():
            changed = str(change.get("path", ""))
            if changed == path or changed.startswith(path + ".") or path.startswith(changed + "."):
                step = call.get("step")
    return step


def _leaves(doc: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(doc, Mapping) and doc:
        out: dict[str, Any] = {}
        for k, v in doc.items():
            out.update(_leaves(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: doc}


def _covered(path: str, named: list[str]) -> bool:
    return any(path == n or path.startswith(n + ".") or n.startswith(path + ".") for n in named)


def check_one(fsc: Any, attempt: Attempt) -> tuple[Grade, int]:
    """Grade one alternative; the int counts the checks made (0 = nothing to check)."""
    final = records.final_state(attempt)
    initial = attempt.get("initial_state") or {}
    if not isinstance(final, Mapping):
        problem = attempt.get("initial_state_problem")
        return error(str(problem or "the attempt has no recorded final_state")), 0
    made = 0
    expected = field_of(fsc, "expected") or {}
    for path, want in dict(expected).items():
        made += 1
        got = get_path(final, str(path))
        if got is MISSING or not subset_match(want, got):
            shown = "absent" if got is MISSING else short(got)
            return failed(
                f"{path} is {shown}, expected {short(want)}",
                Evidence(_changed_at(attempt, str(path)), str(path)),
            ), made
    absent = [str(p) for p in as_list(field_of(fsc, "absent"))]
    for path in absent:
        made += 1
        if get_path(final, path) is not MISSING:
            return failed(
                f"{path} should be absent but exists", Evidence(_changed_at(attempt, path), path)
            ), made
    unchanged = [str(p) for p in as_list(field_of(fsc, "unchanged"))]
    if "*" in unchanged:
        named = [str(p) for p in dict(expected)] + absent
        before, after = _leaves(initial), _leaves(final)
        made += 1
        for path in sorted(set(before) | set(after)):
            if (
                path
                and not _covered(path, named)
                and before.get(path, MISSING) != after.get(path, MISSING)
            ):
                return failed(
                    f"{path} changed from {short(before.get(path, 'absent'))} to "
                    f"{short(after.get(path, 'absent'))} but the state must stay unchanged",
                    Evidence(_changed_at(attempt, path), path),
                ), made
        unchanged = [p for p in unchanged if p != "*"]
    for path in unchanged:
        made += 1
        if get_path(initial, path) != get_path(final, path):
            return failed(
                f"{path} changed but must stay unchanged",
                Evidence(_changed_at(attempt, path), path),
            ), made
    variables = state_variables(
        final, initial=initial, calls=calls(attempt), output=output(attempt)
    )
    rules = as_list(field_of(fsc, "asserts")) or as_list(field_of(fsc, "assert"))
    for rule in rules:
        made += 1
        ok = check(str(rule), variables)
        if isinstance(ok, CelFailure):
            return error(f"assert {ok.expression!r}: {ok.message}"), made
        if not ok:
            first = split_path(str(rule).split(" ")[0])
            return failed(f"assert failed: {rule}", Evidence(None, ".".join(first))), made
    return passed(f"final state matches ({made} checks)"), made


def _names_something(fsc: Any) -> bool:
    return bool(
        field_of(fsc, "expected")
        or as_list(field_of(fsc, "absent"))
        or as_list(field_of(fsc, "unchanged"))
        or as_list(field_of(fsc, "asserts"))
        or as_list(field_of(fsc, "assert"))
    )


def needs(spec: JudgeSpec) -> str | None:
    fsc = field_of(spec, "final_state_check")
    if not fsc:
        return "the case has no final_state_check: nothing to compare"
    alternatives = as_list(field_of(fsc, "any_of")) or [fsc]
    if not any(_names_something(a) for a in alternatives):
        return "final_state_check names no expected, unchanged, absent or assert"
    return None


def grade(spec: JudgeSpec, attempt: Attempt, ctx: GradeContext | None = None) -> Grade:
    if (problem := needs(spec)) is not None:
        return error(problem)
    fsc = field_of(spec, "final_state_check")
    alternatives = as_list(field_of(fsc, "any_of")) or [fsc]
    reasons = []
    checked = 0
    for i, alternative in enumerate(alternatives):
        result, made = check_one(alternative, attempt)
        if result.verdict == "error":
            return result
        if not made:
            continue
        checked += 1
        if result.verdict == "pass":
            prefix = f"alternative {i + 1}: " if len(alternatives) > 1 else ""
            return passed(prefix + result.reason)
        reasons.append((i, result))
    if not checked:
        return error("final_state_check names no expected, unchanged, absent or assert")
    if len(alternatives) == 1:
        return reasons[0][1]
    return failed(
        "; ".join(f"alternative {i + 1}: {r.reason}" for i, r in reasons), *reasons[0][1].evidence
    )
