"""Which graders a case runs: its ``evaluator_config.graders`` list, or, when it writes
none, the graders its ``rule_checks`` and ``judge`` imply; and, beside a written list, the
``trace_rule`` its declared ``rule_checks`` imply.

The case contract's own example (docs/contract.md, "Graders a case implies") writes

    evaluator_config:
      rule_checks: [no_privacy_leak]
      judge: {rubric: refund_policy_faithfulness_v1}

with no ``graders`` list, and means that the rule checks run and the judge judges. So a
case without a ``graders`` key gets:

- ``{type: trace_rule}`` when it lists ``rule_checks`` (the one grader that runs them),
  hard: a failing check fails the attempt;
- ``{type: llm_rubric}`` when it has a ``judge`` section, hard as well.

Each of these weighs 1.0 and runs exactly as if the case had listed it (lint's grader
checks see it too: EC320 reports an implied ``llm_rubric`` with no rubric at the
``judge`` key).

A written ``graders`` list runs as written, with one addition: a team that declares rule
checks means them to run (issue 42.4), so a written list without a ``trace_rule`` gets
``{type: trace_rule, weight: 0}`` appended: hard, so a failing check fails the attempt,
and of weight 0, so the score stays what the written weights give (beside an empty list
it weighs 1.0, being all there is). It does not make written graders that are all soft
decide: without a ``pass_threshold`` such a case is still EC322's, and grading still
gives its attempts ``error`` (``added`` names what grading leaves out of that count).
A list that names
``trace_rule`` itself is not changed (its hardness and weight are the team's); lint's
EC327 reports the one contradiction left, a soft written ``trace_rule`` whose result no
``pass_threshold`` counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Old names still accepted in cases (docs/grading.md) and what they became.
RENAMED: dict[str, str] = {
    "state_unchanged": "state_match",
    "tool_sequence": "tool_calls",
    "tool_args": "tool_calls",
    "contains": "must_include",
    "evidence_recall": "evidence_recall_at_k",
    "human_review": "human",
}

__all__ = ["ADDED_WEIGHT", "IMPLIED", "added", "configured", "implied"]

# (evaluator_config key, the grader it implies), in the order they are added.
IMPLIED: tuple[tuple[str, str], ...] = (("rule_checks", "trace_rule"), ("judge", "llm_rubric"))

# The weight of the trace_rule added beside a written graders list: it decides (hard)
# without moving the score the written weights give.
ADDED_WEIGHT = 0.0


def _names(written: list[Any]) -> set[str]:
    return {str(g.get("type")) for g in written if isinstance(g, Mapping)}


def implied(evaluator: Any) -> tuple[tuple[str, str], ...]:
    """(key, grader type) of each grader ``evaluator`` implies: without a written
    ``graders`` list, ``trace_rule`` for ``rule_checks`` and ``llm_rubric`` for
    ``judge``; beside a written list (an empty one included), ``trace_rule`` for
    ``rule_checks`` when the list has none. Nothing when ``evaluator`` is not a mapping."""
    if not isinstance(evaluator, Mapping):
        return ()
    written = evaluator.get("graders")
    if written is None:
        return tuple((key, kind) for key, kind in IMPLIED if evaluator.get(key))
    if not isinstance(written, list) or not evaluator.get("rule_checks"):
        return ()
    return () if "trace_rule" in _names(written) else (("rule_checks", "trace_rule"),)


def added(evaluator: Any) -> tuple[str, ...]:
    """The grader types appended to a written ``graders`` list (``trace_rule`` for rule
    checks it leaves out); none without a written list."""
    if not isinstance(evaluator, Mapping) or evaluator.get("graders") is None:
        return ()
    return tuple(kind for _, kind in implied(evaluator))


def configured(evaluator: Any) -> list[Any]:
    """The grader entries as grading runs them: the written list (with the ``trace_rule``
    its rule checks imply, weight 0 beside other graders), else the implied ones as
    ``{type: NAME}``."""
    if not isinstance(evaluator, Mapping):
        return []
    written = evaluator.get("graders")
    if written is not None:
        if not isinstance(written, list):
            return []
        extra: dict[str, Any] = {"weight": ADDED_WEIGHT} if written else {}
        return [*written, *({"type": kind, **extra} for kind in added(evaluator))]
    return [{"type": kind} for _, kind in implied(evaluator)]
