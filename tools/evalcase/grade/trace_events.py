"""The attempt record's ``trace`` events and ``messages`` as grading reads them: typed
values (evalcase.grade.readers.parse) in place of the record's JSON objects.

The fields are the union of what the runner writes per event type (docs/attempts.md); a
field an event type does not have is None. Values stay as recorded (``JSONValue``): a
prompt shows them as they are, and a grader checks the kind it needs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from evalcase.grade.readers import JSONValue, parse

__all__ = ["Message", "TraceEvent", "events", "messages"]


@dataclass(frozen=True)
class TraceEvent:
    type: JSONValue = None
    step: JSONValue = None
    content: JSONValue = None
    tool_calls: JSONValue = None  # assistant: the calls it asked for (a list)
    tool: JSONValue = None
    args: JSONValue = None
    result: JSONValue = None
    error: JSONValue = None
    applied: JSONValue = None  # fault: the action still took effect
    kind: JSONValue = None  # fault, error
    policy: JSONValue = None  # permission_denied
    message: JSONValue = None  # error
    finish_reason: JSONValue = None
    reason: JSONValue = None  # conversation_end


@dataclass(frozen=True)
class Message:
    role: JSONValue = None
    content: JSONValue = None
    tool: JSONValue = None  # an assistant message's tool call


def events(raw: Iterable[object]) -> tuple[TraceEvent, ...]:
    """The objects of a trace as events (anything else in it is skipped)."""
    return tuple(e for e in (parse(TraceEvent, r) for r in raw) if isinstance(e, TraceEvent))


def messages(raw: Iterable[object]) -> tuple[Message, ...]:
    return tuple(m for m in (parse(Message, r) for r in raw) if isinstance(m, Message))
