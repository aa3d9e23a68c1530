"""The one reader of OpenAI chat-completions responses.

Three parties talk to models through the same OpenAI-compatible layer (docs/running.md,
docs/grading.md): the ``openai:`` agent adapter, the judge of ``llm_rubric`` and the
simulated user. Each reads the same response body: ``choices[0].message`` (its
``content`` and ``tool_calls``), ``choices[0].finish_reason``, ``usage`` and ``model``.
:func:`read` reads it once, the same way for all three; what differs is a parameter:

- ``with_tools``: the agent's reply may call tools, so its message must be there and each
  tool call must have an id and a function name (else :class:`Unreadable`, recorded as the
  attempt's ``protocol`` error); the judge and the simulator only read text.
- ``usage_default``: a ``usage`` count that is missing or not an integer is this number
  (the adapter: 0, so its record always has both counts) or left out (``None``: the
  simulator records only what the server reported).

What each party then requires (text at all, a reply not cut at ``finish_reason:
length``) stays with it: the judge answers with a problem, the simulator with a fault,
the adapter records ``truncated``. A transport error or a non-JSON body never reaches this
module (:mod:`evalcase.transport`). The response is data from a server: nothing here
raises on its shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, overload


@dataclass(frozen=True)
class ToolCall:
    """A tool call as the model wrote it (``arguments``: its JSON text, ``{}`` if none)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Completion:
    """One chat completion, read.

    ``has_message``: ``choices[0].message`` is an object; ``content``: its text (None when
    it is not text); ``usage``: ``prompt_tokens`` and ``completion_tokens`` as read (see
    ``usage_default``)."""

    has_message: bool
    content: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    finish_reason: str | None = None
    usage: Mapping[str, int] = field(default_factory=dict)
    model: str | None = None

    @property
    def cut(self) -> bool:
        """The model stopped at its token limit (``finish_reason: length``)."""
        return self.finish_reason == "length"


@dataclass(frozen=True)
class Unreadable:
    """A reply that cannot be an agent's turn (``with_tools``): why."""

    message: str


USAGE_COUNTS = ("prompt_tokens", "completion_tokens")


@overload
def read(
    response: Any, *, with_tools: Literal[False] = False, usage_default: int | None = None
) -> Completion: ...
@overload
def read(
    response: Any, *, with_tools: bool, usage_default: int | None = None
) -> Completion | Unreadable: ...
def read(
    response: Any, *, with_tools: bool = False, usage_default: int | None = None
) -> Completion | Unreadable:
    """``response`` (a parsed chat-completions body) as a :class:`Completion`."""
    body = response if isinstance(response, Mapping) else {}
    choices = body.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    choice = choice if isinstance(choice, Mapping) else {}
    message = choice.get("message")
    has_message = isinstance(message, Mapping)
    message = message if isinstance(message, Mapping) else {}
    calls: tuple[ToolCall, ...] = ()
    if with_tools:
        if not has_message:
            return Unreadable("the endpoint's reply has no choices[0].message")
        found = _tool_calls(message.get("tool_calls") or [])
        if isinstance(found, Unreadable):
            return found
        calls = found
    content = message.get("content")
    finish = choice.get("finish_reason")
    model = body.get("model")
    return Completion(
        has_message,
        content if isinstance(content, str) else None,
        calls,
        finish if isinstance(finish, str) else None,
        _usage(body.get("usage"), usage_default),
        model if isinstance(model, str) and model else None,
    )


def _tool_calls(raw: Any) -> tuple[ToolCall, ...] | Unreadable:
    if not isinstance(raw, list):
        return Unreadable("the endpoint's tool_calls is not a list")
    calls = []
    for index, call in enumerate(raw):
        function = call.get("function") if isinstance(call, Mapping) else None
        name = function.get("name") if isinstance(function, Mapping) else None
        call_id = call.get("id") if isinstance(call, Mapping) else None
        if not isinstance(name, str) or not name or not call_id:
            return Unreadable(f"tool_calls[{index}] lacks an id or a function name")
        arguments = function.get("arguments") if isinstance(function, Mapping) else None
        calls.append(
            ToolCall(str(call_id), name, arguments if isinstance(arguments, str) else "{}")
        )
    return tuple(calls)


def _usage(raw: Any, default: int | None) -> dict[str, int]:
    if not isinstance(raw, Mapping):
        return {}
    out = {}
    for key in USAGE_COUNTS:
        value = raw.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            out[key] = value
        elif default is not None:
            out[key] = default
    return out
