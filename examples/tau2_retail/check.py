#!/usr/bin/env python3
"""The oracle checks of the tau2 retail port, against tau2's own Python code.

    python examples/tau2_retail/check.py [--cache DIR] [--repo DIR] [--select GLOB | --cover]
                                         [--json FILE]

The same checks as the airline port's (``examples/tau2_common/tau2_oracle.py``): build
the repository with a local user that answers ``###STOP###``; replay every task's expected
actions (every case must pass); compare each final database with the one tau2's own
``get_environment()`` leaves after the same actions (validated and hashed by tau2's
``RetailDB``, and as plain JSON); run the null agent and compare evalcase's verdicts with
tau2's evaluator (DB x COMMUNICATE) on the same conversation. ``--cover`` checks a covering
subset of the 114 tasks (what the test suite runs). Exit 0 when every check holds.
docs/tau2-retail.md has the results.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tau2_common"))

import tau2_oracle  # noqa: E402  (the shared checks)

PORT = tau2_oracle.Port(name="retail", build=HERE / "build.py", db_model="RetailDB")


def initial_state(repo: Path) -> dict[str, Any]:
    """The cases' initial state (the database fixture build.py wrote)."""
    return tau2_oracle.initial_state(repo, PORT.name)


def tau2_tasks() -> list[Any]:
    """tau2's retail tasks (the unzipped wheel must be on sys.path)."""
    return tau2_oracle.tau2_tasks(PORT)


def cover(tasks: list[Any], rejected: frozenset[str] = frozenset()) -> list[str]:
    """The covering subset of the tasks (``--cover``); ``rejected``: the tasks whose case
    declares expected actions tau2's tools reject (``tau2_oracle.rejected_tasks``)."""
    return tau2_oracle.cover(PORT, tasks, rejected)


def check(repo: Path, select: list[str] | None, tau2: list[Any] | None = None) -> dict[str, Any]:
    return tau2_oracle.check(PORT, repo, select, tau2)


if __name__ == "__main__":
    sys.exit(tau2_oracle.main(PORT, __doc__.split("\n\n")[0]))
