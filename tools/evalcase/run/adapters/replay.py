"""``replay:RUN_ID``: an earlier run's recorded replies, replayed without calling anything.

The replies of the attempt with the same ``attempt_key`` and attempt number are sent
again in order, so an unchanged case under the deterministic environment reproduces its
trace exactly (for re-grading, for tests, for bisecting the environment). A case or
attempt the earlier run did not have is the recorded error ``adapter``; running out of
recorded replies is ``protocol``.

Both sides: the session offers the recorded attempt's user turns
(``recorded_user_turns``, from its trace), and the runner sends those instead of asking
the simulated user of a case with ``user_simulator`` (evalcase.run.conversation): a
simulated conversation is re-run and re-graded without any model. A scripted case keeps
its script, as before.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalcase.contract import attempt
from evalcase.run.protocol import AgentFault, Reply, first_messages, parse_reply

if TYPE_CHECKING:
    from evalcase.run.executors.base import AttemptJob


@lru_cache(maxsize=8)
def recorded(outputs: str, run_id: str) -> dict[tuple[str, int], tuple[dict[str, Any], ...]]:
    runs = list(Path(outputs).glob(f"*/{run_id}/attempts.jsonl"))
    if not runs:
        raise AgentFault("adapter", f"replay: no run {run_id!r} under {outputs}")
    out: dict[tuple[str, int], tuple[dict[str, Any], ...]] = {}
    with runs[0].open(encoding="utf-8") as handle:
        for line in handle:
            try:
                raw = json.loads(line)
            except ValueError:
                continue  # a torn last line of a killed run
            if not isinstance(raw, dict):
                continue
            record = attempt.read(raw)
            messages = [dict(m) for m in record.messages]
            if record.agent_version:
                messages.append({"role": "_version", "agent_version": record.agent_version})
            # The user turns as the trace has them (the one that ended it included).
            messages += [{"role": "_user", "event": e} for e in _user_turns(record.trace)]
            out[(record.attempt_key, record.attempt or 1)] = tuple(messages)
    return out


def _user_turns(trace: Any) -> list[dict[str, Any]]:
    """The trace's user turns; a simulated one carries ``user_calls``, the calls the
    simulated user made with its own tools before writing it (made again in the replay)."""
    turns: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for event in trace:
        if event.get("type") == "tool_call" and event.get("actor") == "user":
            calls.append({k: event.get(k) for k in ("id", "tool", "args")})
        elif event.get("type") == "user":
            turns.append({**event, "user_calls": calls} if event.get("simulated") else event)
            calls = []
    if calls:  # made before a limit ended the conversation: no turn followed them
        turns.append({"type": "user", "simulated": True, "calls_only": True, "user_calls": calls})
    return turns


class ReplaySession:
    def __init__(
        self, replies: tuple[dict[str, Any], ...], user_turns: list[dict[str, Any]] | None = None
    ) -> None:
        self.replies = list(replies)
        self.position = 0
        # The recorded user turns, for a case with a simulated user (see the module doc).
        self.recorded_user_turns = user_turns

    def reply(self, request: Mapping[str, Any], deadline: float) -> Reply:
        if self.position >= len(self.replies):
            raise AgentFault("protocol", "the recorded run has no further reply here")
        message = self.replies[self.position]
        self.position += 1
        return parse_reply(message)

    def close(self) -> None:
        return None


def preflight(target: str, options: Mapping[str, Any]) -> str | None:
    """Before the run: the run to replay exists."""
    outputs = str(options.get("outputs_dir") or "outputs")
    if not target:
        return "replay: needs a run ID, as in replay:20261130T214501Z-3fa9c1"
    if not any(Path(outputs).glob(f"*/{target}/attempts.jsonl")):
        return f"replay: no run {target!r} under {outputs}"
    return None


def open(target: str, options: Mapping[str, Any], job: AttemptJob) -> ReplaySession:
    outputs = str(options.get("outputs_dir") or "outputs")
    replies = recorded(outputs, target).get((job.agent.attempt_key, job.attempt))
    if replies is None:
        raise AgentFault(
            "adapter", f"replay: run {target} has no attempt {job.attempt} of this case"
        )
    # Skip the system prompt and history the runner itself sent before the first turn.
    messages = replies[len(first_messages(job.agent)) :]
    version = next((m["agent_version"] for m in messages if m.get("role") == "_version"), None)
    answers = tuple(
        {**m, "agent_version": version} if version else m
        for m in messages
        if m.get("role") == "assistant"
    )
    users = [dict(m["event"]) for m in replies if m.get("role") == "_user"]
    return ReplaySession(answers, users)
