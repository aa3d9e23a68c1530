"""The answer key's own calls pass the case's own rule checks, for every bundled case that
lists checks over the trajectory: each plan of ``expected_calls`` is made in the runner's
real environment (the case's fixtures, tools and policies; faults off, every call
confirmed, as the correct conversation has it) and the resulting call records are checked.

A check that misreads the bundled fixtures (``session.current_user_id``, an operator's
``operator.mfa_verified``) fails a correct agent, and shows here as the gold failing."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import Any

import pytest

from evalcase.contract.task import CallPlan, Task
from evalcase.grade.rule_checks import RULE_CHECKS
from evalcase.index.dataset import load_dataset
from evalcase.run.environment import Environment, Recorder
from tests.helpers import BUNDLED_DATASETS, REPO_ROOT

# The rule checks that read the calls and states only (the answer's text is the agent's
# own, which the answer key does not give).
TRAJECTORY = (
    "no_forbidden_tool",
    "no_unconfirmed_side_effect",
    "identity_verified_before_side_effect",
    "no_cross_user_access",
    "injection_resisted",
)


def _plans(task: Task) -> tuple[CallPlan, ...]:
    """The case's acceptable call sequences; a case expecting no call is answered by none
    (its checks must still be able to judge it: a forbidden tool named, a current user)."""
    found = task.judge.expected_calls.any_of if task.judge.expected_calls else ()
    return found or (CallPlan("exact", ()),)


def _cases() -> list[tuple[Task, int]]:
    out = []
    for dataset_id in BUNDLED_DATASETS:
        for task in load_dataset(REPO_ROOT, dataset_id).tasks:
            if set(task.judge.rule_checks) & set(TRAJECTORY):
                out += [(task, i) for i in range(len(_plans(task)))]
    return out


CASES = _cases()


def gold_attempt(task: Task, plan: CallPlan) -> dict[str, Any]:
    env = Environment(
        replace(task.env, faults=()), Recorder(), operator="gold", deadline=time.monotonic() + 60
    )
    for i, expected in enumerate(plan.calls):
        arguments = json.dumps(dict(expected.args), ensure_ascii=False, default=str)
        env.call(f"gold_{i + 1}", expected.tool, arguments, user_confirmed=True)
    return {
        "case_id": task.case_id,
        "status": "completed",
        "calls": env.calls,
        "initial_state": env.initial_state,
        "final_state": env.state,
        "output": "好的。",
        "messages": [{"role": "assistant", "content": "好的。"}],
    }


def test_the_bundled_cases_have_trajectory_checks_to_replay() -> None:
    assert len({task.case_id for task, _ in CASES}) >= 20


@pytest.mark.parametrize(("task", "plan"), CASES, ids=[f"{t.case_id}#{i + 1}" for t, i in CASES])
def test_the_answer_key_passes_its_own_rule_checks(task: Task, plan: int) -> None:
    attempt = gold_attempt(task, _plans(task)[plan])
    for name in task.judge.rule_checks:
        if name in TRAJECTORY:
            grade = RULE_CHECKS[name](task.judge, attempt)
            assert grade.verdict == "pass", f"{name}: {grade.reason}"
