"""The gold end states of one grading run, computed once per case and kept in memory.

A ``final_state_check: {from_expected_calls: true}`` compares every attempt of a case
with the state its expected calls produce. That state is computed by the grader from the
case (its ``JudgeSpec.replay_env`` and ``expected_calls``), never read from the run's
outputs (outputs are untrusted: an agent, or anyone with a pull request, writes them),
and only once per case and plan per grading run: :class:`GoldStates` holds them for as
long as the run's ``GradeContext`` lives. The replay itself is the runner's
(``evalcase.run.gold_replay.replay_expected``), handed in by the command that grades
(``evalcase grade``, ``evalcase run``): the grading layer does not import the runner.
"""

from __future__ import annotations

import threading
from typing import Any

from evalcase.contract.gold import GoldState, Replayer
from evalcase.contract.task import JudgeSpec


class GoldStates:
    """Gold states by case: ``states(spec)`` gives one per expected-call plan."""

    def __init__(self, replayer: Replayer) -> None:
        self._replayer = replayer
        self._lock = threading.Lock()
        # id(replay_env) -> (the env, its plans' gold states): the env is kept so that its
        # id is never reused by another object while the entry lives.
        self._memo: dict[int, tuple[Any, tuple[GoldState, ...]]] = {}
        self.replays = 0  # how many plans were replayed (tests check the cache with it)

    def states(self, spec: JudgeSpec) -> tuple[GoldState, ...]:
        env = spec.replay_env
        if env is None:
            return (GoldState(None, "the case's environment is not known to the grader"),)
        plans = spec.expected_calls.any_of if spec.expected_calls is not None else ()
        if not plans:
            return (GoldState(None, "the case has no expected_calls to replay"),)
        with self._lock:  # graders may run on threads; one replay per case
            hit = self._memo.get(id(env))
            if hit is not None and hit[0] is env:
                return hit[1]
            made = []
            for plan in plans:
                self.replays += 1
                try:
                    made.append(self._replayer(env, plan))
                except Exception as exc:  # a broken replay is this grader's error
                    made.append(GoldState(None, f"the replay failed: {type(exc).__name__}: {exc}"))
            out = tuple(made)
            self._memo[id(env)] = (env, out)
            return out
