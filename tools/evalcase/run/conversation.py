"""Who speaks next for the user: the script, the simulated user, or a recorded run.

Before the first agent turn and after every final reply (a reply without tool calls),
:meth:`Conversation.next` decides the next user turn, or why the conversation ends:

1. the environment ended it (a tool response with ``ends_conversation``: the environment
   sets ``conversation_ended``): ``ends_conversation``; or a limit of the case's
   ``user_simulator`` was reached while the agent worked (:meth:`Conversation.limit`):
   ``max_steps`` (user turns, agent replies and tool calls of either actor together, over
   ``max_steps``) or ``max_tool_errors`` (that many calls answered with an error);
2. a simulated case sent ``user_simulator.max_turns`` user turns: ``max_turns``;
3. a replay (``replay:RUN_ID``) of a simulated case: the recorded run's next user turn,
   scripted or simulated, as it was sent (no model is asked), the calls a simulated user
   made with its own tools before it made again first; none left is the attempt's
   ``user_simulator`` error, as a replayed agent without replies is a ``protocol`` one;
4. the script: the first unused scripted user turn whose ``when`` holds (a turn without
   ``when`` always holds). ``when`` is CEL over ``message`` (the agent's last reply text,
   ``""`` before the first), ``calls`` (the calls so far, as permissions see them) and
   ``turn`` (user turns sent so far). A script without any ``when`` is played in order, as
   it always was. A ``when`` that cannot be evaluated is the attempt's ``user_script``
   error;
5. no scripted turn holds: the simulated user writes the turn, or, in a case without one,
   the conversation ends (``script_end``). A simulated user with tools of its own
   (``user_simulator.tools``) may first answer with tool calls: each is made on the shared
   state as actor ``user`` (``act``), its result goes back to the simulator only, and the
   simulator is asked again, until it writes a message. A limit of ``user_simulator``
   (``max_steps``, ``max_tool_errors``) reached by its calls ends the conversation there;
   the attempt's deadline passing is the attempt's ``user_simulator`` error (``timeout``
   when it passes during a call).

A simulated (or replayed) turn carrying ``###STOP###``, ``###TRANSFER###`` or
``###OUT-OF-SCOPE###`` ends the conversation (``user_stop``, ``user_transfer``,
``user_out_of_scope``): it is recorded in the trace and never sent to the agent.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalcase.contract.attempt import ToolCallRecord
from evalcase.contract.task import USER_SIGNALS
from evalcase.run.expr import ExprError, evaluate
from evalcase.run.protocol import AgentFault
from evalcase.run.spec import AgentView, EnvSpec
from evalcase.run.user_simulator import Simulator, UserSimulatorFault


@dataclass(frozen=True)
class UserTurn:
    """The next user turn: its text, the scripted turn it is (None: simulated or
    replayed) and the trace fields it is recorded with."""

    content: str
    index: int | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)
    usage: Mapping[str, Any] = field(default_factory=dict)
    events: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True)
class End:
    """Why the conversation ends; ``turn``: the signalling user turn, for the trace."""

    reason: str
    turn: UserTurn | None = None
    # The simulator's usage and events of calls made before a limit ended it here.
    usage: Mapping[str, Any] = field(default_factory=dict)
    events: tuple[Mapping[str, Any], ...] = ()


def signal_of(text: str) -> str | None:
    for token, reason in USER_SIGNALS.items():
        if token in text:
            return reason
    return None


def call_view(calls: Sequence[ToolCallRecord]) -> list[dict[str, Any]]:
    """The calls as a ``when`` sees them (the fields permissions see)."""
    return [c.view() for c in calls]


class Conversation:
    def __init__(
        self,
        view: AgentView,
        env: EnvSpec,
        simulator: Callable[[], Simulator] | None = None,
        recorded: Sequence[Mapping[str, Any]] | None = None,
        act: Callable[[str, str, str], Mapping[str, Any]] | None = None,
    ) -> None:
        # Makes one of the simulated user's own calls (id, tool, arguments JSON) on the
        # shared state as actor user; returns the tool message for the simulator.
        self._act = act
        self.turns = view.user_turns
        self.conditions = env.user_conditions
        self.spec = env.user_simulator
        self._make_simulator = simulator
        self._simulator: Simulator | None = None
        # A replay of a simulated conversation: the recorded user turns, in order.
        self.recorded = list(recorded) if recorded is not None and self.spec else None
        self.used: set[int] = set()
        self.sent = 0
        self.ended_by: str | None = None
        self.stopped: str | None = None  # a limit reached: the next turn is the end

    def limit(self, replies: int, calls: Sequence[ToolCallRecord]) -> bool:
        """Whether a limit of ``user_simulator`` ends the conversation now (``replies``:
        the agent's replies so far; ``calls``: every call, of either actor)."""
        spec = self.spec
        if spec is None or self.stopped is not None:
            return self.stopped is not None
        errors = sum(1 for c in calls if c.error is not None)
        if spec.max_tool_errors is not None and errors >= spec.max_tool_errors:
            self.stopped = "max_tool_errors"
        elif spec.max_steps is not None and self.sent + replies + len(calls) > spec.max_steps:
            self.stopped = "max_steps"
        return self.stopped is not None

    def _when(self, index: int, message: str, calls: Sequence[ToolCallRecord]) -> bool:
        source = self.conditions[index] if index < len(self.conditions) else None
        if source is None:
            return True
        variables = {"message": message, "calls": call_view(calls), "turn": self.sent}
        try:
            return evaluate(source, variables) is True
        except ExprError as exc:
            raise AgentFault("user_script", f"user turn {index + 1}'s when: {exc}") from None

    def next(
        self,
        messages: Sequence[Mapping[str, Any]],
        message: str,
        calls: Sequence[ToolCallRecord],
        environment: Any,
        deadline: float,
        replies: int = 0,
    ) -> UserTurn | End:
        if getattr(environment, "conversation_ended", None):
            return self._end("ends_conversation")
        if self.stopped is not None:
            return self._end(self.stopped)
        if self.spec is not None and self.sent >= self.spec.max_turns:
            return self._end("max_turns")
        if self.recorded is not None:
            return self._replayed(replies, calls)
        for index in range(len(self.turns)):
            if index not in self.used and self._when(index, message, calls):
                self.used.add(index)
                return self._send(UserTurn(self.turns[index], index))
        if self.spec is None or self._make_simulator is None:
            return self._end("script_end")
        if self._simulator is None:
            self._simulator = self._make_simulator()
        simulator = self._simulator
        usage: dict[str, Any] = {}
        events: list[Mapping[str, Any]] = []
        while True:
            if time.monotonic() >= deadline:
                raise UserSimulatorFault(
                    "the attempt's deadline passed while the user simulator acted", events
                )
            simulated = simulator.next_turn(messages, deadline)
            _add(usage, simulated.usage)
            events += simulated.events
            if not simulated.tool_calls:
                break
            results: list[Mapping[str, Any]] = []
            for call in simulated.tool_calls:
                if self._act is None:  # never: a simulator with tools has an act
                    raise UserSimulatorFault("the user simulator's calls cannot be made here")
                results.append(self._act(call.id, call.name, call.arguments))
                if self.limit(replies, calls):
                    return self._end(self.stopped or "max_steps", usage=usage, events=events)
            simulator.answered(simulated, results)
        turn = UserTurn(simulated.content, None, simulator.trace_fields, usage, tuple(events))
        return self._signalled(turn)

    def _replayed(self, replies: int, calls: Sequence[ToolCallRecord]) -> UserTurn | End:
        assert self.recorded is not None
        none_left = "replay: the recorded run has no further user turn here"
        if not self.recorded:
            raise UserSimulatorFault(none_left)
        event = self.recorded.pop(0)
        for call in event.get("user_calls") or ():  # the simulated user's own calls, again
            if self._act is not None:
                args = call.get("args")
                text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
                self._act(str(call.get("id")), str(call.get("tool")), text)
            if self.limit(replies, calls):
                return self._end(self.stopped or "max_steps")
        if event.get("calls_only"):  # calls a limit ended, yet no limit was reached here
            raise UserSimulatorFault(none_left)
        fields = {k: v for k, v in event.items() if k in ("simulated", "model", "prompt_version")}
        index = event.get("turn")
        scripted = not event.get("simulated") and isinstance(index, int) and index >= 0
        turn = UserTurn(
            str(event.get("content") or ""),
            index if scripted else None,
            {**fields, "replayed": True},
        )
        return self._signalled(turn)

    def _signalled(self, turn: UserTurn) -> UserTurn | End:
        reason = signal_of(turn.content)
        if reason is not None:
            self.sent += 1
            return self._end(reason, turn)
        return self._send(turn)

    def _send(self, turn: UserTurn) -> UserTurn:
        self.sent += 1
        return turn

    def _end(
        self,
        reason: str,
        turn: UserTurn | None = None,
        usage: Mapping[str, Any] | None = None,
        events: Sequence[Mapping[str, Any]] = (),
    ) -> End:
        self.ended_by = reason
        return End(reason, turn, dict(usage or {}), tuple(events))


def _add(total: dict[str, Any], usage: Mapping[str, Any]) -> None:
    """Token counts summed over the simulator's calls for one turn."""
    for key, value in usage.items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            total[key] = total.get(key, 0) + value
        elif key not in total:
            total[key] = value


def recorded_user_turns(trace: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The user turns of a recorded attempt's trace, in order (for a replay)."""
    return [dict(e) for e in trace if isinstance(e, Mapping) and e.get("type") == "user"]
