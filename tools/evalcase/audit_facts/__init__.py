"""The audit's facts on disk (``.git/evalcase/audit/``, never the tree): what lint
(EC420), ``evalcase tag`` and reports read of `evalcase audit`'s results, without the audit itself.

A room of its own, below the versioning, lint and report rooms that read it, so that
reading an audit never imports the runner, the agents or the graders the audit runs
(:mod:`evalcase.audit`, which writes these facts, stands above them all).

- :mod:`~evalcase.audit_facts.store`: one JSON file per case content and audit version,
  the keys, the statuses;
- :mod:`~evalcase.audit_facts.release`: what a release records of the audit.
"""

from __future__ import annotations

# Bump when the panel, the oracle or the analysis changes what a finding means: every
# stored audit then reads as stale (lint EC420) and `evalcase audit` runs again.
# 2: gold mutants (drop-one, foreign write); 3: foreign writes for tools the gold never calls;
# 4: two actors (the user's gold calls played by a scripted user, drop-one mutants of them,
# entities the user's own state names concerned), placeholders for free text and amounts.
AUDIT_VERSION = "4"
