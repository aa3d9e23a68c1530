"""One attempt: the agent talks, the environment answers, the runner writes down what happened.

:func:`run_attempt` is the top-level function every executor runs (it pickles by
reference). It never raises for anything an agent can do: a crash, a hang, garbage, an
oversized reply, an unknown tool or a protocol violation becomes the record's ``error``.

Multi-turn cases are played turn by turn: the first user turn is sent; every assistant
reply with tool calls is answered by the environment and the agent is asked again; a
reply without tool calls ends the turn, and the next user turn follows
(:mod:`evalcase.run.conversation` decides which: the script in order, the first scripted
turn whose ``when`` holds, the simulated user, a recorded run's turn), until the
conversation ends. A simulated user failing is the attempt's ``user_simulator`` error.

One deadline (``--timeout``) bounds everything: the agent's replies, writes to it, tool
work and every CEL evaluation (:func:`evalcase.run.expr.bounded`). A record is bounded
too: state changes are diffs, a ``cmd:`` agent's stderr is its last 64 KiB, and a record
whose JSON exceeds ``max_record_bytes`` is replaced by an error record (``record_limit``)
that keeps what identifies the attempt.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from evalcase.contract.attempt import (
    RECORD_VERSION,
    AttemptError,
    AttemptRecord,
    ConversationEnd,
    Json,
    Usage,
)
from evalcase.contract.records import dumps
from evalcase.run.adapters import open_session
from evalcase.run.conversation import Conversation, End, UserTurn
from evalcase.run.environment import Environment, Recorder, tool_message
from evalcase.run.executors.base import AttemptJob
from evalcase.run.expr import bounded
from evalcase.run.protocol import AgentFault, build_request, first_messages
from evalcase.run.user_simulator import Simulator


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _base(job: AttemptJob) -> dict[str, Any]:
    """The fields every record of ``job`` starts with."""
    return {
        "case_id": job.case_id,
        "case_version": job.case_version,
        "attempt": job.attempt,
        "seed": job.seed,
        "attempt_key": job.agent.attempt_key,
        "prompt": job.prompt or None,  # id@version (evalcase.run.prompts)
    }


def _error_record(
    job: AttemptJob, error: AttemptError, started_at: str, ended_at: str, **kept: Any
) -> AttemptRecord:
    """A record with nothing of the attempt but why it has nothing."""
    return AttemptRecord(
        **_base(job),
        status="error",
        error=error,
        output=None,
        messages=(),
        trace=(),
        calls=(),
        retrieved=(),
        initial_state_digest=kept.pop("initial_state_digest", None),
        state_diff=(),
        usage=kept.pop("usage", Usage()),
        latency_ms=kept.pop("latency_ms", 0),
        agent_version=kept.pop("agent_version", None),
        started_at=started_at,
        ended_at=ended_at,
        **kept,
    )


def lost_record(job: AttemptJob, message: str) -> AttemptRecord:
    """The record of an attempt whose worker disappeared (executors use it)."""
    now = _now()
    return _error_record(job, AttemptError("worker_lost", message), now, now, truncated=False)


def run_attempt(job: AttemptJob) -> AttemptRecord:
    """Run one attempt and return its record (evalcase.contract.attempt, docs/running.md);
    the driver writes its JSON (:meth:`AttemptRecord.to_json`)."""
    started_at = _now()
    start = time.monotonic()
    deadline = start + job.timeout_s
    with bounded(deadline, job.limits.cel_memory_mb):
        record = _run(job, started_at, start, deadline)
    return cap_record(record, job.limits.max_record_bytes, job)


def cap_record(record: AttemptRecord, limit: int, job: AttemptJob) -> AttemptRecord:
    """The record, or an error record when its JSON is longer than ``limit`` bytes."""
    size = len(dumps(record.to_json()).encode("utf-8"))
    if size <= limit:
        return record
    typed = record
    message = (
        f"the attempt's record is {size} bytes, over max_record_bytes ({limit}): "
        "its messages, trace and calls were dropped (a runaway agent or state?)"
    )
    return _error_record(
        job,
        AttemptError("record_limit", message),
        typed.started_at,
        typed.ended_at,
        initial_state_digest=typed.initial_state_digest,
        usage=typed.usage,
        latency_ms=typed.latency_ms,
        agent_version=typed.agent_version,
    )


def _run(job: AttemptJob, started_at: str, start: float, deadline: float) -> AttemptRecord:
    if job.adapter_options.get("loop") == "agent":
        return _run_owned(job, started_at, start, deadline)
    recorder = Recorder()
    env = Environment(job.env, recorder, limits=job.limits, deadline=deadline)
    view = job.agent
    messages = first_messages(view)
    for m in messages:
        recorder.event(m["role"], content=m["content"], history=True)
    usage: dict[str, Any] = {"prompt_tokens": 0, "completion_tokens": 0, "cost": None}
    output: str | None = None
    error: dict[str, Any] | None = None
    agent_version: str | None = None
    confirmations = set(job.env.confirmations)
    confirmed = False
    truncated = False  # a reply ended at the token limit (finish_reason "length")
    session = None
    spec = job.env.user_simulator
    user_usage: dict[str, Any] = {"prompt_tokens": 0, "completion_tokens": 0, "cost": None}
    conversation: Conversation | None = None
    try:
        session = open_session(job.adapter, job.adapter_options, job)
        # A replay of a simulated conversation replays its user turns too (no model).
        recorded = getattr(session, "recorded_user_turns", None)
        conversation = Conversation(
            view,
            job.env,
            simulator=(lambda: _simulator(job)) if spec else None,
            recorded=recorded if isinstance(recorded, list) else None,
            act=_user_act(env),
        )
        steps = 0
        last_text = ""  # the agent's last final reply, what a scripted turn's when reads
        while True:
            turn = conversation.next(messages, last_text, env.calls, env, deadline, steps)
            if isinstance(turn, End):
                _end_usage(recorder, user_usage, turn)
                if turn.turn is not None:  # the signalling turn: recorded, never sent
                    _add_usage(user_usage, turn.turn.usage)
                    _user_event(recorder, turn.turn, conversation.sent - 1, signal=turn.reason)
                if spec is not None or job.env.user_conditions or turn.reason != "script_end":
                    recorder.event("conversation_end", reason=turn.reason, turn=conversation.sent)
                break
            _add_usage(user_usage, turn.usage)
            if turn.index is not None:
                confirmed = confirmed or turn.index in confirmations
            _user_calls(env, job, turn)
            messages.append({"role": "user", "content": turn.content})
            _user_event(recorder, turn, conversation.sent - 1)
            while not conversation.limit(steps, env.calls):
                steps += 1
                if steps > job.limits.max_steps:
                    raise AgentFault(
                        "protocol", f"more than {job.limits.max_steps} replies in one attempt"
                    )
                if time.monotonic() >= deadline:
                    raise AgentFault("timeout", f"no final answer within {job.timeout_s:g} s")
                request = build_request(view, messages, job.attempt, job.seed)
                reply = session.reply(request, deadline)
                for event in reply.events:
                    recorder.event(str(event.get("type", "adapter")), **_fields(event))
                if reply.finish_reason == "length":
                    truncated = True
                if reply.agent_version:
                    agent_version = reply.agent_version
                _add_usage(usage, reply.usage)
                message = reply.message()
                messages.append(message)
                recorder.event(
                    "assistant",
                    content=reply.content,
                    tool_calls=[{"id": c.id, "tool": c.name} for c in reply.tool_calls],
                    finish_reason=reply.finish_reason,
                )
                if not reply.tool_calls:
                    output = reply.content
                    last_text = reply.content or ""
                    break
                for call in reply.tool_calls:
                    messages.append(
                        env.call(call.id, call.name, call.arguments, user_confirmed=confirmed)
                    )
                    if conversation.limit(steps, env.calls):
                        break  # the rest of the reply's calls are never made
                # A tool response may end the conversation (ends_conversation): its result
                # is delivered and the agent is not asked again.
                if getattr(env, "conversation_ended", None):
                    output = reply.content
                    break
    except Exception as exc:  # an adapter bug must not end the run
        error = _failed(recorder, exc)
    finally:
        if session is not None:
            with contextlib.suppress(Exception):  # closing a broken agent is best effort
                session.close()
    stderr = getattr(session, "stderr_record", None)
    return _record(
        job, env, recorder, messages, conversation, error, start, started_at, user_usage,
        output=output,
        truncated=truncated,
        usage=Usage.from_json(usage),
        agent_version=agent_version,
        agent_stderr=stderr() if callable(stderr) else None,
    )  # fmt: skip


def _run_owned(job: AttemptJob, started_at: str, start: float, deadline: float) -> AttemptRecord:
    """An agent that runs its own loop (evalcase.run.owned_loop): one request line per
    user turn, its tools over MCP and its model through the proxy while it works."""
    from evalcase.run.owned_loop import LOOP, OwnedLoop

    recorder = Recorder()
    env = Environment(job.env, recorder, limits=job.limits, deadline=deadline)
    view = job.agent
    messages = first_messages(view)
    for m in messages:
        recorder.event(m["role"], content=m["content"], history=True)
    output: str | None = None
    error: dict[str, Any] | None = None
    agent_version: str | None = None
    confirmations = set(job.env.confirmations)
    spec = job.env.user_simulator
    user_usage: dict[str, Any] = {"prompt_tokens": 0, "completion_tokens": 0, "cost": None}
    conversation: Conversation | None = None
    loop = OwnedLoop(job, env, recorder, deadline)
    try:
        loop.open()
        conversation = Conversation(
            view,
            job.env,
            simulator=(lambda: _simulator(job)) if spec else None,
            act=_user_act(env),
        )
        last_text = ""
        while True:
            turn = conversation.next(messages, last_text, env.calls, env, deadline)
            if isinstance(turn, End):
                _end_usage(recorder, user_usage, turn)
                if turn.turn is not None:
                    _add_usage(user_usage, turn.turn.usage)
                    _user_event(recorder, turn.turn, conversation.sent - 1, signal=turn.reason)
                if spec is not None or job.env.user_conditions or turn.reason != "script_end":
                    recorder.event("conversation_end", reason=turn.reason, turn=conversation.sent)
                break
            _add_usage(user_usage, turn.usage)
            if turn.index is not None and turn.index in confirmations:
                loop.confirmed = True
            _user_calls(env, job, turn)
            messages.append({"role": "user", "content": turn.content})
            _user_event(recorder, turn, conversation.sent - 1)
            if time.monotonic() >= deadline:
                raise AgentFault("timeout", f"no final answer within {job.timeout_s:g} s")
            request = {**build_request(view, messages, job.attempt, job.seed), "loop": LOOP}
            reply = loop.reply(request, deadline)
            if reply.agent_version:
                agent_version = reply.agent_version
            messages.append(reply.message())
            recorder.event("agent_reply", content=reply.content)
            output = reply.content
            last_text = reply.content or ""
    except Exception as exc:  # a bug of ours must not end the run
        error = _failed(recorder, exc)
    finally:
        with contextlib.suppress(Exception):
            loop.close()
    record = _record(
        job, env, recorder, messages, conversation, error, start, started_at, user_usage,
        output=output,
        truncated=any(c.get("finish_reason") == "length" for c in loop.ledger.model_calls),
        usage=Usage.from_json(loop.usage),
        agent_version=agent_version,
        agent_stderr=loop.stderr_record(),
    )  # fmt: skip
    return replace(
        record,
        loop=LOOP,
        model_calls=loop.ledger.model_calls,
        proposals=loop.ledger.proposals_json(),
    )


def _simulator(job: AttemptJob) -> Simulator:
    """The attempt's simulated user, offered the user's own tools when the case has them."""
    assert job.env.user_simulator is not None
    tools = list(job.env.user_tools.values())
    return Simulator(job.env.user_simulator, job.user_simulator, job.seed, tools)


def _user_act(env: Environment) -> Callable[[str, str, str], dict[str, Any]]:
    """How the simulated user's own calls are made: on the shared state as actor user,
    an unknown tool an error result to the simulator (recorded), never to the agent."""

    def act(call_id: str, name: str, arguments: str) -> dict[str, Any]:
        record = env.answer(
            call_id, name, arguments, user_confirmed=False, actor="user", unknown_ends=False
        )
        return tool_message(record)

    return act


def _end_usage(recorder: Recorder, total: dict[str, Any], end: End) -> None:
    """The simulator's usage and retries of calls it made before a limit ended it."""
    _add_usage(total, dict(end.usage))
    for event in end.events:
        recorder.event(str(event.get("type", "adapter")), **_fields(event))


def _user_calls(env: Environment, job: AttemptJob, turn: UserTurn) -> None:
    """The calls a scripted user turn makes on the shared state before it is sent (two
    actors: ``user_simulator.tools``), recorded with ``actor: user``; their results go to
    the user only, never into the agent's messages. A call the user's tools cannot answer
    (an unknown tool) ends the attempt as a ``user_script`` error: the case is wrong."""
    if turn.index is None or turn.index >= len(job.env.user_calls):
        return
    for n, call in enumerate(job.env.user_calls[turn.index], 1):
        arguments = json.dumps(dict(call.args), ensure_ascii=False, default=str)
        env.answer(
            f"user_{turn.index + 1}_{n}", call.tool, arguments, user_confirmed=False, actor="user"
        )


def _failed(recorder: Recorder, exc: Exception) -> dict[str, Any]:
    """The attempt's error for what ended it (an AgentFault's kind, else ``adapter``), its
    events and the error recorded in the trace."""
    if isinstance(exc, AgentFault):
        for event in exc.events:
            recorder.event(str(event.get("type", "adapter")), **_fields(event))
        error = {"kind": exc.kind, "message": exc.message}
    else:
        error = {"kind": "adapter", "message": f"{type(exc).__name__}: {exc}"}
    recorder.event("error", kind=error["kind"], message=error["message"])
    return error


def _record(
    job: AttemptJob,
    env: Environment,
    recorder: Recorder,
    messages: list[dict[str, Any]],
    conversation: Conversation | None,
    error: dict[str, Any] | None,
    start: float,
    started_at: str,
    user_usage: dict[str, Any],
    *,
    output: str | None,
    truncated: bool,
    usage: Usage,
    agent_version: str | None,
    agent_stderr: Json | None,
) -> AttemptRecord:
    """The attempt's record, whoever ran its loop: what the environment knows, how the
    conversation ended, and what the loop measured (output, usage, the agent's stderr)."""
    spec = job.env.user_simulator
    ended: ConversationEnd | None = None
    if conversation is not None and (spec is not None or job.env.user_conditions):
        # Reactive and simulated conversations say how they ended (scripts in order, as
        # before, record nothing new).
        ended = ConversationEnd(
            conversation.ended_by if error is None else "error", conversation.sent
        )
    return AttemptRecord(
        **_base(job),
        status="error" if error else "completed",
        error=AttemptError(error["kind"], error["message"]) if error else None,
        messages=messages,
        trace=recorder.trace,
        calls=tuple(env.calls),
        retrieved=env.retrieved,
        initial_state_digest=env.initial_digest,
        state_diff=env.final_diff(),
        latency_ms=round((time.monotonic() - start) * 1000, 3),
        started_at=started_at,
        ended_at=_now(),
        record_version=RECORD_VERSION,
        conversation=ended,
        user_usage=Usage.from_json(user_usage) if ended and spec is not None else None,
        output=output,
        truncated=truncated,
        usage=usage,
        agent_version=agent_version,
        agent_stderr=agent_stderr,
    )


def _user_event(
    recorder: Recorder, turn: UserTurn, position: int, signal: str | None = None
) -> None:
    """A user turn in the trace: ``turn`` is the scripted turn's index, or the position of
    a simulated one; a simulated turn names the model and the prompt version."""
    for event in turn.events:  # the simulator's retries
        recorder.event(str(event.get("type", "adapter")), **_fields(event))
    fields: dict[str, Any] = dict(turn.fields)
    if turn.usage:
        fields["usage"] = dict(turn.usage)
    if signal is not None:
        fields["signal"] = signal
    recorder.event(
        "user",
        content=turn.content,
        turn=turn.index if turn.index is not None else position,
        **fields,
    )


def _fields(event: Any) -> dict[str, Any]:
    return {str(k): v for k, v in dict(event).items() if k != "type"}


def _add_usage(total: dict[str, Any], usage: Any) -> None:
    if not isinstance(usage, dict):
        return
    for key in ("prompt_tokens", "completion_tokens"):
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            total[key] += value
    cost = usage.get("cost")
    if isinstance(cost, int | float) and not isinstance(cost, bool):
        total["cost"] = (total["cost"] or 0) + cost
    for key, value in usage.items():
        if key not in {"prompt_tokens", "completion_tokens", "cost"} and isinstance(value, int):
            total[key] = total.get(key, 0) + value
