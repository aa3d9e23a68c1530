"""`evalcase audit`: cases that vouch for themselves (docs/audit.md).

A linter proves a case is well formed; the audit proves it can tell a good agent from a
bad one. For every counted case of a dataset it runs, through the normal runner, the
environment and the case's own graders:

- the **gold** oracle, an agent built from the answer key (the expected calls with their
  arguments, a final answer from ``reference`` and the deterministic answer checks): it
  must pass every hard grader that needs no judge;
- a **panel** of degenerate agents (``silent``, ``refuse``, ``handoff``, ``echo``,
  ``parrot``, ``flail``): none may pass, unless the case declares that behaviour right
  (``audit: {may_pass: [refuse]}``);
- **gold mutants** (:mod:`~evalcase.audit.mutants`): the gold without one expected call,
  and the gold plus one write on an entity the case does not concern: each must fail
  (a pass is a finding: ``drop_passes``, ``collateral_damage``);

and says, per case, which criteria a deterministic grader covers and which rest on the
judge alone. The results are facts keyed by the case's content digest and
:data:`AUDIT_VERSION` (:mod:`evalcase.audit_facts.store`); ``evalcase tag`` reads them.

Rooms: :mod:`~evalcase.audit.agents` (the agents, ``py:`` functions),
:mod:`~evalcase.audit.keys` (answer keys for the gold and parrot, built from the
``JudgeSpec`` by this trusted code), :mod:`~evalcase.audit.schema_values` (arguments valid
for a tool's schema), :mod:`~evalcase.audit.coverage` (criteria coverage),
:mod:`~evalcase.audit.verdicts` (graded attempts to findings),
:mod:`~evalcase.audit.runner` (runs and resumes the audit). The file store is a room below,
:mod:`evalcase.audit_facts`: what lint, tag and reports import.
"""

from __future__ import annotations

# What the stored facts' keys are made with (bump it there: evalcase.audit_facts).
from evalcase.audit_facts import AUDIT_VERSION

__all__ = ["AGENTS", "AUDIT_VERSION", "GOLD", "JUDGED_GRADERS", "MUTANTS", "PANEL"]

GOLD = "gold"
PANEL: tuple[str, ...] = ("silent", "refuse", "handoff", "echo", "parrot", "flail")
# the gold oracle on mutated answer keys (evalcase.audit.mutants): one run, one attempt each
MUTANTS = "mutants"
AGENTS: tuple[str, ...] = (GOLD, *PANEL, MUTANTS)

# Graders whose verdict needs a judge or a person: the audit never calls them, and a case
# whose only hard checks are these rests on the judge (docs/audit.md).
JUDGED_GRADERS = frozenset({"llm_rubric", "human"})
