"""One attempt: the agent talks, the environment answers, the runner writes down what happened.

:func:`run_attempt` is the top-level function every executor runs (it pickles by
reference). It never raises for anything an agent can do: a crash, a hang, garbage, an
oversized reply, an unknown tool or a protocol violation becomes the record's ``error``.

Multi-turn cases are played turn by turn: the first scripted user turn is sent; every
assistant reply with tool calls is answered by the environment and the agent is asked
again; a reply without tool calls ends the turn, and the next scripted user turn follows,
until the script ends.

One deadline (``--timeout``) bounds everything: the agent's replies, writes to it, tool
work and every CEL evaluation (:func:`evalcase.run.expr.bounded`). A record is bounded
too: state changes are diffs, a ``cmd:`` agent's stderr is its last 64 KiB, and a record
whose JSON exceeds ``max_record_bytes`` is replaced by an error record (``record_limit``)
that keeps what identifies the attempt.
"""

from __future__ import annotations

import contextlib
import time
from datetime import UTC, datetime
from typing import Any

from evalcase.contract.records import dumps
from evalcase.run.adapters import open_session
from evalcase.run.environment import Environment, Recorder, state_diff
from evalcase.run.executors.base import AttemptJob
from evalcase.run.expr import bounded
from evalcase.run.protocol import AgentFault, build_request, first_messages

# 2: no final_state and no per-call state_before (rebuilt from initial_state and the
# calls' changes: evalcase.contract.records); agent_stderr for cmd: agents.
RECORD_VERSION = 2


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _base(job: AttemptJob) -> dict[str, Any]:
    out: dict[str, Any] = {
        "case_id": job.case_id,
        "case_version": job.case_version,
        "attempt": job.attempt,
        "seed": job.seed,
        "attempt_key": job.agent.attempt_key,
    }
    if job.prompt:
        out["prompt"] = job.prompt  # id@version (evalcase.run.prompts)
    return out


def lost_record(job: AttemptJob, message: str) -> dict[str, Any]:
    """The record of an attempt whose worker disappeared (executors use it)."""
    now = _now()
    return {
        **_base(job),
        "status": "error",
        "error": {"kind": "worker_lost", "message": message},
        "output": None, "truncated": False, "messages": [], "trace": [], "calls": [],
        "retrieved": [], "initial_state": None, "state_diff": [],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "cost": None},
        "latency_ms": 0, "agent_version": None, "started_at": now, "ended_at": now,
        "record_version": RECORD_VERSION,
    }  # fmt: skip


def run_attempt(job: AttemptJob) -> dict[str, Any]:
    """Run one attempt and return its record (design section 7)."""
    started_at = _now()
    start = time.monotonic()
    deadline = start + job.timeout_s
    with bounded(deadline, job.limits.cel_memory_mb):
        record = _run(job, started_at, start, deadline)
    return cap_record(record, job.limits.max_record_bytes)


def cap_record(record: dict[str, Any], limit: int) -> dict[str, Any]:
    """The record, or an error record when its JSON is longer than ``limit`` bytes."""
    size = len(dumps(record).encode("utf-8"))
    if size <= limit:
        return record
    kept = {k: record.get(k) for k in ("started_at", "ended_at", "latency_ms", "usage")}
    return {
        **{k: record[k] for k in ("case_id", "case_version", "attempt", "seed", "attempt_key")},
        "status": "error",
        "error": {
            "kind": "record_limit",
            "message": f"the attempt's record is {size} bytes, over max_record_bytes ({limit}): "
            "its messages, trace and calls were dropped (a runaway agent or state?)",
        },
        "output": None, "messages": [], "trace": [], "calls": [], "retrieved": [],
        "initial_state": None, "state_diff": [],
        "agent_version": record.get("agent_version"),
        **kept,
        "record_version": RECORD_VERSION,
    }  # fmt: skip


def _run(job: AttemptJob, started_at: str, start: float, deadline: float) -> dict[str, Any]:
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
    try:
        session = open_session(job.adapter, job.adapter_options, job)
        steps = 0
        for turn_index, user_text in enumerate(view.user_turns):
            confirmed = confirmed or turn_index in confirmations
            messages.append({"role": "user", "content": user_text})
            recorder.event("user", content=user_text, turn=turn_index)
            while True:
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
                    break
                for call in reply.tool_calls:
                    messages.append(
                        env.call(call.id, call.name, call.arguments, user_confirmed=confirmed)
                    )
                if env.conversation_ended:  # a response with ends_conversation: true
                    output = reply.content
                    break
            if env.conversation_ended:
                recorder.event("conversation_end", reason="ends_conversation", turn=turn_index)
                break
    except AgentFault as fault:
        for event in fault.events:
            recorder.event(str(event.get("type", "adapter")), **_fields(event))
        error = {"kind": fault.kind, "message": fault.message}
        recorder.event("error", kind=fault.kind, message=fault.message)
    except Exception as exc:  # an adapter bug must not end the run
        error = {"kind": "adapter", "message": f"{type(exc).__name__}: {exc}"}
        recorder.event("error", kind="adapter", message=error["message"])
    finally:
        if session is not None:
            with contextlib.suppress(Exception):  # closing a broken agent is best effort
                session.close()
    stderr = getattr(session, "stderr_record", None)
    extra: dict[str, Any] = {"agent_stderr": stderr()} if callable(stderr) else {}
    return {
        **_base(job),
        "status": "error" if error else "completed",
        "error": error,
        "output": output,
        "truncated": truncated,
        "messages": messages,
        "trace": recorder.trace,
        "calls": env.calls,
        "retrieved": env.retrieved,
        "initial_state": env.initial_state,
        "state_diff": state_diff(env.initial_state, env.state),
        "usage": usage,
        "latency_ms": round((time.monotonic() - start) * 1000, 3),
        "agent_version": agent_version,
        "started_at": started_at,
        "ended_at": _now(),
        "record_version": RECORD_VERSION,
        **extra,
    }


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
