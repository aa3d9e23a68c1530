"""A simulated-user case's ``input``: optional, and when given the first user turn, sent
as written even when the interaction holds history (the assistant's opening); without it
the simulated user opens. The same holds for lint (no EC101 without ``input``)."""

from __future__ import annotations

from typing import Any

from evalcase.contract.build import build_task
from evalcase.contract.task import Task

OPENING = {"role": "assistant", "content": "Hi! How can I help you today?"}
SIMULATOR = {"instructions": "You want to cancel order ORDER_1.", "max_turns": 5}


def task(**fields: Any) -> Task:
    case = {"case_id": "support_order_cancel_001", "case_version": "v1", **fields}
    built = build_task(case, {}, lambda kind, target: [])
    assert isinstance(built, Task), built
    return built


def test_input_is_the_first_turn_after_the_history() -> None:
    built = task(input="Cancel ORDER_1, please.", interaction=[OPENING],
                 user_simulator=SIMULATOR)  # fmt: skip
    assert built.agent.user_turns == ("Cancel ORDER_1, please.",)
    assert [t.role for t in built.agent.history] == ["assistant"]
    assert built.env.user_simulator is not None


def test_without_input_the_simulated_user_opens() -> None:
    built = task(interaction=[OPENING], user_simulator=SIMULATOR)
    assert built.agent.user_turns == ()
    assert task(user_simulator=SIMULATOR).agent.user_turns == ()


def test_scripted_user_turns_still_come_from_the_interaction() -> None:
    built = task(input="ignored", interaction=[{"role": "user", "content": "scripted"}])
    assert built.agent.user_turns == ("scripted",)
