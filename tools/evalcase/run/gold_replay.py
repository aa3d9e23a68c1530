"""Replay a plan of expected calls on a fresh environment: the gold end state of a case.

``final_state_check: {from_expected_calls: true}`` says "the final state must equal the
state the expected calls produce". This module produces it with the runner's own
:class:`~evalcase.run.environment.Environment` (the same tools, responses, state changes
and permission policies an agent meets), through its public ``call`` only:

- the calls are made in the order the plan lists them (for ``any_order`` too: the listed
  order is the author's reference order), with exactly the arguments written, as JSON,
  each by its actor (``actor: user``: the user's own tools, ``user_simulator.tools``);
- **faults do not apply**: the gold is what correct calls produce on a healthy system,
  not what an injected timeout leaves behind (an attempt's final state under faults is
  compared with the state a correct, unfaulted run reaches);
- **permission policies apply**: a gold call the case's own policies refuse is an error;
- every gold call counts as confirmed by the user (``user_confirmed``), as the correct
  conversation would have it;
- a call that errors (refused, invalid arguments, no matching response, a tool error, an
  unknown tool, a budget) makes the gold an error naming the call, never a state: a gold
  built from a failed call would pass agents that fail the same way;
- CEL work is bounded (``REPLAY_SECONDS``), like an attempt's.

The grader receives this function as the ``Replayer`` of its ``GradeContext`` (see
``evalcase.grade.gold``); lint (EC617) calls it too, so a replay that cannot succeed is
reported where the expected call is written.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from evalcase.contract.gold import GoldState
from evalcase.contract.task import CallPlan, EnvSpec
from evalcase.run.environment import Environment, Recorder
from evalcase.run.expr import bounded
from evalcase.run.protocol import AgentFault

REPLAY_SECONDS = 120.0  # the whole replay's bound on CEL work (an attempt's deadline)
OPERATOR = "gold_replay"  # the audit records' operator


def configured(run: Mapping[str, Any]) -> Callable[[EnvSpec, CallPlan], GoldState]:
    """:func:`replay_expected` with each tool ``handler`` name resolved to the function the
    trusted configuration registers for it (``[run.handlers]``, entry points), as the
    runner resolves them (evalcase.run.source.with_handlers): a case whose gold calls a
    handler tool is replayed with the same code its attempts met. A name nothing
    registers stays as it is, and the replay of that call errors."""
    from evalcase.trust import registered_handlers

    registered = registered_handlers(run)

    def replay(env: EnvSpec, plan: CallPlan) -> GoldState:
        tools = {
            name: replace(b, handler=registered[b.handler])
            if b.handler and b.handler in registered
            else b
            for name, b in env.tools.items()
        }
        return replay_expected(replace(env, tools=tools), plan)

    return replay


def replay_expected(env: EnvSpec, plan: CallPlan) -> GoldState:
    """The state ``plan``'s calls leave in a fresh environment built from ``env``."""
    deadline = time.monotonic() + REPLAY_SECONDS
    environment = Environment(
        replace(env, faults=()), Recorder(), operator=OPERATOR, deadline=deadline
    )
    with bounded(deadline):
        for index, expected in enumerate(plan.calls):
            arguments = json.dumps(dict(expected.args), ensure_ascii=False, default=str)
            where = f"expected call {index + 1} ({expected.tool})"
            try:
                environment.call(
                    f"gold_{index + 1}",
                    expected.tool,
                    arguments,
                    user_confirmed=True,
                    actor=expected.actor,
                )
            except AgentFault as exc:
                return GoldState(None, f"{where}: {exc.kind}: {exc.message}", index)
            record = environment.calls[-1]
            error = record.error
            if error is not None:
                code, message = error.get("code"), error.get("message", "")
                why = f"refused by permission {record.denied_by!r}: " if record.denied_by else ""
                return GoldState(
                    None, f"{where} errored in the replay: {why}{code}: {message}", index
                )
    return GoldState(environment.state)
