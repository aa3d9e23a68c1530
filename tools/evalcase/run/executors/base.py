"""The executor interface: how attempts are handed to workers and how records come back.

A job is everything one attempt needs and nothing a judge reads (no ``JudgeSpec``): the
agent's view, the environment spec, the adapter spec, the seed, the attempt number and
the timeout. A job is plain frozen data and pickles, so an executor may ship it to another
process or machine (the Ray executor does). A worker runs it with the top-level function
:func:`evalcase.run.runner.run_attempt` and returns the attempt record (an
:class:`evalcase.contract.attempt.AttemptRecord`: frozen, it pickles; docs/running.md).
An executor yields records as they finish, in any order; the driver
(:mod:`evalcase.run.driver`) is the only writer of ``attempts.jsonl``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from evalcase.contract.attempt import AttemptRecord
from evalcase.run.spec import AgentView, EnvSpec


@dataclass(frozen=True)
class Limits:
    """Bounds on what an agent may do in one attempt; crossing one is a recorded error."""

    max_reply_bytes: int = 1_000_000
    max_steps: int = 64  # assistant replies per attempt
    max_tool_calls: int = 256  # tool calls per attempt, over all replies
    max_state_bytes: int = 32 * 1024 * 1024  # initial state JSON plus every value written
    max_record_bytes: int = 64 * 1024 * 1024  # one attempt's JSONL line
    cel_memory_mb: int = 512  # address space of a CEL worker process


@dataclass(frozen=True)
class AttemptJob:
    case_id: str
    case_version: str
    agent: AgentView
    env: EnvSpec
    adapter: str  # the agent spec, e.g. "cmd:python agent.py" or "openai:gpt-4o-mini"
    adapter_options: Mapping[str, Any] = field(default_factory=dict)  # secrets by env var name only
    seed: int = 0
    attempt: int = 1
    timeout_s: float = 60.0
    limits: Limits = field(default_factory=Limits)
    prompt: str | None = None  # "id@version" of the prompt the view was rendered with
    # [run.user_simulator] (key by variable name only), for cases with a user_simulator.
    user_simulator: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, int]:
        return (self.case_id, self.attempt)


class Executor(Protocol):
    """Runs jobs, at most ``concurrency`` at a time, yielding records as they finish.

    A job whose worker disappears yields a record with ``status: error`` and
    ``error.kind: worker_lost`` (see :func:`evalcase.run.runner.lost_record`), so every job
    yields exactly one record."""

    name: str

    def run(self, jobs: Iterable[AttemptJob], concurrency: int) -> Iterator[AttemptRecord]: ...

    def session(self) -> AbstractContextManager[None]:
        """Several runs in a row (an audit's agents) inside one: what a run sets up
        (Ray's connection, its job's worker processes) is set up once for all of them."""
        ...
