"""Which graders a case runs: its ``evaluator_config.graders`` list, or, when it writes
none, the graders its ``rule_checks`` and ``judge`` imply.

The case contract's own example (docs/contract.md, "Graders a case implies") writes

    evaluator_config:
      rule_checks: [no_privacy_leak]
      judge: {rubric: refund_policy_faithfulness_v1}

with no ``graders`` list, and means that the rule checks run and the judge judges. So a
case without a ``graders`` key gets:

- ``{type: trace_rule}`` when it lists ``rule_checks`` (the one grader that runs them),
  hard: a failing check fails the attempt;
- ``{type: llm_rubric}`` when it has a ``judge`` section, hard as well.

Each implied grader weighs 1.0 and runs exactly as if the case had listed it (lint's
grader checks see it too: EC320 reports an implied ``llm_rubric`` with no rubric at the
``judge`` key). To weigh them, make one soft (``hard: false``) or add other graders, write
the ``graders`` list: a written list is what runs, nothing is added to it, and rule checks
it leaves without a ``trace_rule`` are EC327's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["IMPLIED", "configured", "implied"]

# (evaluator_config key, the grader it implies), in the order they are added.
IMPLIED: tuple[tuple[str, str], ...] = (("rule_checks", "trace_rule"), ("judge", "llm_rubric"))


def implied(evaluator: Any) -> tuple[tuple[str, str], ...]:
    """(key, grader type) of each grader ``evaluator`` implies: none when it writes its
    own ``graders`` list (an empty one included) or is not a mapping."""
    if not isinstance(evaluator, Mapping) or evaluator.get("graders") is not None:
        return ()
    return tuple((key, kind) for key, kind in IMPLIED if evaluator.get(key))


def configured(evaluator: Any) -> list[Any]:
    """The grader entries as grading runs them: the written list, else the implied ones
    as ``{type: NAME}``."""
    if not isinstance(evaluator, Mapping):
        return []
    written = evaluator.get("graders")
    if written is not None:
        return list(written) if isinstance(written, list) else []
    return [{"type": kind} for _, kind in implied(evaluator)]
