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

The gold end state can instead be computed from the case::

    final_state_check:
      from_expected_calls: true       # gold = replaying expected_calls on a fresh environment
      paths: [reservations, users]    # optional: compare only these (default: the whole state)

The grader replays the case's ``expected_calls`` (each ``any_of`` plan gives a gold state;
matching any passes) with the runner's environment, faults off and permission policies on
(``evalcase.run.gold_replay``), once per case per grading run, never reading a gold from the
run's outputs. Passing: the attempt leaves ``reservations`` and ``users`` exactly as the
expected calls do. Failing: the reason lists the differing paths, e.g. ``final state differs
from the expected calls' at 2 path(s): reservations.HAT001.status is active, gold
cancelled; ...``. No expected calls, a gold call that errors in the replay, or a grading
run without a replay is an error, never a pass. ``expected``/``unchanged``/``absent``/
``assert`` may be added; each must hold too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalcase.contract.records import Observed
from evalcase.contract.task import FinalStateCheck, StateExpectation
from evalcase.grade.context import GradeContext
from evalcase.grade.expr import MISSING, CelFailure, check, get_path, split_path, state_variables
from evalcase.grade.graders import reads_attempt
from evalcase.grade.graders._util import short, subset_match
from evalcase.grade.model import Evidence, Grade, error, failed, passed
from evalcase.grade.spec import JudgeSpec

NAME = "state_match"
VERSION = "1"


def _changed_at(attempt: Observed, path: str) -> int | None:
    step = None
    for call in attempt.calls:
        for change in call.changes:
            changed = change.path
            if changed == path or changed.startswith(path + ".") or path.startswith(changed + "."):
                step = call.step
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


def check_one(fsc: StateExpectation, attempt: Observed) -> tuple[Grade, int]:
    """Grade one alternative; the int counts the checks made (0 = nothing to check)."""
    final = attempt.final_state()
    initial = attempt.initial_state or {}
    if not isinstance(final, Mapping):
        problem = attempt.initial_state_problem
        return error(str(problem or "the attempt has no recorded final_state")), 0
    made = 0
    expected = fsc.expected or {}
    for path, want in dict(expected).items():
        made += 1
        got = get_path(final, str(path))
        if got is MISSING or not subset_match(want, got):
            shown = "absent" if got is MISSING else short(got)
            return failed(
                f"{path} is {shown}, expected {short(want)}",
                Evidence(_changed_at(attempt, str(path)), str(path)),
            ), made
    absent = [str(p) for p in fsc.absent]
    for path in absent:
        made += 1
        if get_path(final, path) is not MISSING:
            return failed(
                f"{path} should be absent but exists", Evidence(_changed_at(attempt, path), path)
            ), made
    unchanged = [str(p) for p in fsc.unchanged]
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
        final, initial=initial, calls=[c.to_json() for c in attempt.calls], output=attempt.output
    )
    rules = fsc.asserts
    for rule in rules:
        made += 1
        ok = check(str(rule), variables)
        if isinstance(ok, CelFailure):
            return error(f"assert {ok.expression!r}: {ok.message}"), made
        if not ok:
            first = split_path(str(rule).split(" ")[0])
            return failed(f"assert failed: {rule}", Evidence(None, ".".join(first))), made
    return passed(f"final state matches ({made} checks)"), made


_SHOWN = 5  # differing paths named in a failure's reason


def _differences(final: Mapping[str, Any], gold: Mapping[str, Any], paths: list[str]) -> list[str]:
    """Dotted leaf paths where ``final`` and ``gold`` differ, over ``paths`` (all when empty)."""
    out: list[str] = []
    for root in paths or sorted(set(final) | set(gold), key=str):
        got, want = get_path(final, root), get_path(gold, root)
        if got == want:
            continue
        if isinstance(got, Mapping) and isinstance(want, Mapping):
            try:
                found: set[str] = set()
                _differing(got, want, root, found)
            except _Ambiguous:  # a key with a dot: two paths may read the same
                found = _flat_differences(got, want, root)
            out += sorted(found)
        else:
            out.append(root)
    return out


class _Ambiguous(Exception):
    """A key holds a dot (or is empty at the top): dotted paths may collide."""


def _differing(got: Any, want: Any, prefix: str, out: set[str]) -> None:
    """The leaf paths of :func:`_flat_differences`, found by walking only the subtrees
    that differ (``==`` prunes the rest in C): the same set, without flattening two whole
    3 MB states when one reservation differs. Raises :class:`_Ambiguous` where flattening
    could map two places to one path (then the caller flattens, as before)."""
    if got is want or got == want:
        return
    mine = isinstance(got, Mapping) and bool(got)
    theirs = isinstance(want, Mapping) and bool(want)
    if not (mine and theirs):
        # A leaf against a leaf or a subtree: every leaf on either side differs (a leaf
        # path and the paths below it never coincide).
        for side, deep in ((got, mine), (want, theirs)):
            if deep:
                _check_keys(side, prefix)
            out.update(_leaves(side, prefix))
        return
    _check_keys(got, prefix)
    _check_keys(want, prefix)
    for key in got.keys() | want.keys():
        path = f"{prefix}.{key}" if prefix else str(key)
        if key not in want:
            out.update(_leaves(got[key], path))
        elif key not in got:
            out.update(_leaves(want[key], path))
        else:
            _differing(got[key], want[key], path, out)


def _check_keys(doc: Mapping[str, Any], prefix: str) -> None:
    for key in doc:
        text = str(key)
        if "." in text or (not prefix and not text):
            raise _Ambiguous


def _flat_differences(got: Mapping[str, Any], want: Mapping[str, Any], root: str) -> set[str]:
    mine, theirs = _leaves(got, root), _leaves(want, root)
    return {p for p in set(mine) | set(theirs) if mine.get(p, MISSING) != theirs.get(p, MISSING)}


def _describe(path: str, final: Mapping[str, Any], gold: Mapping[str, Any]) -> str:
    got, want = get_path(final, path), get_path(gold, path)
    shown = "absent" if got is MISSING else short(got)
    return f"{path} is {shown}, gold {'absent' if want is MISSING else short(want)}"


def check_gold(
    fsc: FinalStateCheck, spec: JudgeSpec, attempt: Observed, ctx: GradeContext | None
) -> Grade:
    """The attempt's final state against the expected calls' (see the module doc)."""
    final = attempt.final_state()
    if not isinstance(final, Mapping):
        return error("the attempt has no recorded final_state")
    if ctx is None or ctx.gold is None:
        return error(
            "from_expected_calls: this grading run cannot replay the expected calls "
            "(no replay in the grading context; evalcase grade and evalcase run provide one)"
        )
    golds = ctx.gold.states(spec)
    paths = [str(p) for p in fsc.paths]
    reasons = []
    for i, gold in enumerate(golds):
        label = f"plan {i + 1}: " if len(golds) > 1 else ""
        if gold.state is None:
            return error(
                f"from_expected_calls: {label}the gold state cannot be computed: {gold.error}"
            )
        differ = _differences(final, gold.state, paths)
        if not differ:
            over = f"over {', '.join(paths)}" if paths else "as a whole"
            return passed(f"{label}final state equals the expected calls' ({over})")
        listed = "; ".join(_describe(p, final, gold.state) for p in differ[:_SHOWN])
        more = f"; and {len(differ) - _SHOWN} more" if len(differ) > _SHOWN else ""
        reasons.append(
            (
                f"{label}final state differs from the expected calls' at {len(differ)} "
                f"path(s): {listed}{more}",
                Evidence(_changed_at(attempt, differ[0]), differ[0]),
            )
        )
    return failed("; ".join(r for r, _ in reasons), reasons[0][1])


def _names_something(fsc: StateExpectation) -> bool:
    return bool(fsc.expected or fsc.absent or fsc.unchanged or fsc.asserts)


def _alternatives(fsc: FinalStateCheck) -> tuple[StateExpectation, ...]:
    """The state expectations of ``fsc``, any one of which passes (none: one naming nothing)."""
    return fsc.any_of or (StateExpectation(),)


def needs(spec: JudgeSpec) -> str | None:
    fsc = spec.final_state_check
    if not fsc:
        return "the case has no final_state_check: nothing to compare"
    if fsc.from_expected_calls:
        if spec.expected_calls is None or not spec.expected_calls.any_of:
            return "final_state_check.from_expected_calls, but the case has no expected_calls"
        return None
    if not any(_names_something(a) for a in _alternatives(fsc)):
        return "final_state_check names no expected, unchanged, absent or assert"
    return None


@reads_attempt
def grade(spec: JudgeSpec, attempt: Observed, ctx: GradeContext | None = None) -> Grade:
    if (problem := needs(spec)) is not None:
        return error(problem)
    fsc = spec.final_state_check
    assert fsc is not None  # needs() said so
    alternatives = _alternatives(fsc)
    if fsc.from_expected_calls:
        gold = check_gold(fsc, spec, attempt, ctx)
        if gold.verdict != "pass" or not any(_names_something(a) for a in alternatives):
            return gold
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
