"""The agent protocol: what the runner sends an agent and what it accepts back.

Every adapter speaks the same exchange (schema: ``schemas/agent_protocol.schema.json``,
worked transcript: ``docs/running.md``). A *request* is the whole conversation so far in
the shape of OpenAI-style chat APIs::

    {"protocol": "evalcase-agent/1", "attempt_key": "...", "attempt": 1, "seed": 7,
     "tools": [{"type": "function", "function": {"name", "description", "parameters"}}],
     "context": {...}, "params": {...},
     "messages": [{"role": "system"|"user"|"assistant"|"tool", ...}]}

A *reply* is one assistant message, optionally with ``usage`` and ``agent_version``::

    {"role": "assistant", "content": "...",
     "tool_calls": [{"id": "call_1", "type": "function", "function":
                     {"name": "order_lookup", "arguments": "{\\"order_id\\": \\"O1\\"}"}}],
     "usage": {"prompt_tokens": 10, "completion_tokens": 5}, "agent_version": "1.2",
     "finish_reason": "stop"}

``finish_reason`` is optional; ``"length"`` says the reply was cut at the token limit.

A reply that breaks these rules is the attempt's recorded ``protocol`` error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalcase.contract.records import OutOfRange, dumps, loads_strict
from evalcase.run.spec import AgentView

PROTOCOL = "evalcase-agent/1"
ERROR_KINDS = (
    "agent_exit", "timeout", "bad_json", "oversized", "unknown_tool", "protocol", "adapter",
    "worker_lost", "budget", "record_limit", "interrupted", "user_simulator", "user_script",
    "case_expression",
)  # fmt: skip


def dumps_strict(value: Any) -> str:
    """A request or record as one line of strict JSON (no NaN or Infinity)."""
    return dumps(value)


class AgentFault(Exception):
    """The agent misbehaved (or could not be reached): becomes the attempt's recorded error."""

    def __init__(self, kind: str, message: str, events: Sequence[Mapping[str, Any]] = ()) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        # What the adapter did before giving up (retries...): recorded in the trace.
        self.events = tuple(events)


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # the JSON text as the agent sent it


@dataclass(frozen=True)
class Reply:
    content: str | None
    tool_calls: tuple[ToolCall, ...]
    usage: Mapping[str, Any] = field(default_factory=dict)
    agent_version: str | None = None
    # Why the model stopped, as the endpoint said: "stop", "tool_calls", "length" (cut at
    # the token limit: the attempt is marked truncated)...; None when the agent did not say.
    finish_reason: str | None = None
    # What the adapter did to get this reply (retries...): trace events, in order.
    events: tuple[Mapping[str, Any], ...] = ()

    def message(self) -> dict[str, Any]:
        """The assistant message as recorded and sent back in later requests."""
        out: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in self.tool_calls
            ]
        return out


def tool_specs(view: AgentView) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters),
            },
        }
        for t in view.tools
    ]


def first_messages(view: AgentView) -> list[dict[str, Any]]:
    """System prompt and history: what precedes the first scripted user turn."""
    messages: list[dict[str, Any]] = []
    if view.system:
        messages.append({"role": "system", "content": view.system})
    messages.extend({"role": t.role, "content": t.content} for t in view.history)
    return messages


def build_request(
    view: AgentView, messages: Sequence[Mapping[str, Any]], attempt: int, seed: int
) -> dict[str, Any]:
    return {
        "protocol": PROTOCOL,
        "attempt_key": view.attempt_key,
        "attempt": attempt,
        "seed": seed,
        "tools": tool_specs(view),
        "context": dict(view.context),
        "params": dict(view.params),
        "messages": list(messages),
    }


def parse_reply_text(text: str | bytes, limit: int) -> Reply:
    """One reply line/body -> Reply, or AgentFault (oversized, bad_json, protocol)."""
    if len(text) > limit:
        raise AgentFault("oversized", f"reply of {len(text)} bytes exceeds the limit of {limit}")
    try:
        obj = loads_strict(text)
    except OutOfRange as exc:
        raise AgentFault("protocol", f"reply holds a number JSON records cannot: {exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        shown = text[:80] if isinstance(text, str) else text[:80].decode("utf-8", "replace")
        raise AgentFault("bad_json", f"reply is not JSON ({exc}): {shown!r}") from None
    return parse_reply(obj)


def parse_reply(obj: Any) -> Reply:
    if not isinstance(obj, dict):
        raise AgentFault("protocol", f"reply must be a JSON object, got {type(obj).__name__}")
    role = obj.get("role", "assistant")
    if role != "assistant":
        raise AgentFault("protocol", f"reply role must be 'assistant', got {role!r}")
    content = obj.get("content")
    if content is not None and not isinstance(content, str):
        raise AgentFault("protocol", "reply 'content' must be a string or null")
    raw_calls = obj.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise AgentFault("protocol", "reply 'tool_calls' must be a list")
    calls = tuple(_tool_call(c, i) for i, c in enumerate(raw_calls))
    if content is None and not calls:
        raise AgentFault("protocol", "reply has neither 'content' nor 'tool_calls'")
    seen: set[str] = set()
    for call in calls:
        if call.id in seen:
            raise AgentFault("protocol", f"tool call id {call.id!r} used twice in one reply")
        seen.add(call.id)
    usage = obj.get("usage") or {}
    if not isinstance(usage, dict):
        raise AgentFault("protocol", "reply 'usage' must be an object")
    version = obj.get("agent_version")
    finish = obj.get("finish_reason")
    if finish is not None and not isinstance(finish, str):
        raise AgentFault("protocol", "reply 'finish_reason' must be a string")
    return Reply(content, calls, usage, None if version is None else str(version), finish)


def _tool_call(raw: Any, index: int) -> ToolCall:
    if not isinstance(raw, dict):
        raise AgentFault("protocol", f"tool_calls[{index}] must be an object")
    function = raw.get("function", raw)
    if not isinstance(function, dict):
        raise AgentFault("protocol", f"tool_calls[{index}].function must be an object")
    call_id, name, arguments = raw.get("id"), function.get("name"), function.get("arguments", "{}")
    if not isinstance(call_id, str) or not call_id:
        raise AgentFault("protocol", f"tool_calls[{index}] needs a string 'id'")
    if not isinstance(name, str) or not name:
        raise AgentFault("protocol", f"tool_calls[{index}] needs a string function 'name'")
    if isinstance(arguments, dict):  # tolerated: some agents send the object itself
        arguments = json.dumps(arguments, ensure_ascii=False)
    if not isinstance(arguments, str):
        raise AgentFault("protocol", f"tool_calls[{index}] 'arguments' must be a JSON string")
    return ToolCall(call_id, name, arguments)
