#!/usr/bin/env python3
"""The oracle checks of the tau2 airline port, against tau2's own Python code.

    python examples/tau2_airline/check.py [--cache DIR] [--repo DIR] [--select GLOB | --cover]
                                          [--json FILE]

1. Builds the repository (build.py) into --repo (default: a temporary folder), with
   ``[run.user_simulator]`` pointed at a local OpenAI-compatible server started here that
   ends every conversation after the scripted opening turn (it answers ``###STOP###``):
   the oracles need no model, and tau2's own oracle runs do not ask the user either.
2. **Replay**: ``evalcase run tau2_airline --agent tau2_replay``: every case must pass.
3. **Final states**: for each task, tau2's environment (``get_environment()`` from the
   unzipped wheel) replays the same expected actions (``make_tool_call``, an error goes on
   like tau2's gold replay) and its database must equal the state evalcase ended with:
   once validated by tau2's own ``FlightDB`` model and hashed with tau2's
   ``get_db_hash()``, and once as plain JSON (tau2's ``model_dump(exclude_none=True)``).
4. **Null agent**: ``evalcase run ... --agent tau2_null``; tau2's evaluator is given the same
   conversation (the opening user turn, the null answer) and computes its reward from the
   task's reward_basis (DB x COMMUNICATE by default: ``EnvironmentEvaluator`` and
   ``CommunicateEvaluator``, combined as ``evaluate_simulation`` does). evalcase's verdict
   must be ``pass`` exactly where tau2's reward is 1.

tau2's code needs pydantic, toml, addict, deepdiff, loguru, pandas, python-dotenv and
docstring-parser: ``pip install -e '.[tau2]'`` (the test extra has them too); not litellm
(the NL-assertion judge is not imported).

``--cover`` checks a covering subset instead of all 50 tasks (what the test suite runs;
about a sixth of the work): for every tool tau2's expected actions call, a task that calls
it; tasks with and without communicate_info; tasks with and without a state change; a task
with no expected action; taken greedily in task order, so the same tasks every time.

Prints one line per check and a summary; exit 0 when every check holds. The checks are
the shared ones (``examples/tau2_common/tau2_oracle.py``, which the retail port uses too).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tau2_common"))

import tau2_oracle  # noqa: E402  (the shared checks)

PORT = tau2_oracle.Port(name="airline", build=HERE / "build.py", db_model="FlightDB")


def initial_state(repo: Path) -> dict[str, Any]:
    """The cases' initial state (the database fixture build.py wrote)."""
    return tau2_oracle.initial_state(repo, PORT.name)


def tau2_tasks() -> list[Any]:
    """tau2's airline tasks (the unzipped wheel must be on sys.path)."""
    return tau2_oracle.tau2_tasks(PORT)


def cover(tasks: list[Any], rejected: frozenset[str] = frozenset()) -> list[str]:
    """The covering subset of the tasks (``--cover``); ``rejected``: the tasks whose case
    declares expected actions tau2's tools reject (``tau2_oracle.rejected_tasks``)."""
    return tau2_oracle.cover(PORT, tasks, rejected)


def check(repo: Path, select: list[str] | None, tau2: list[Any] | None = None) -> dict[str, Any]:
    return tau2_oracle.check(PORT, repo, select, tau2)


if __name__ == "__main__":
    sys.exit(tau2_oracle.main(PORT, __doc__.split("\n\n")[0]))
