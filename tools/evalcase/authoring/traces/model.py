"""The common model of an imported trace: spans as decoded (``otlp``), and the
conversation the conventions' readers (``genai``, ``openinference``) make of them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# Bounds of one import (docs/authoring.md, "Traces: the bounds").
MAX_FILE_BYTES = 64 * 1024 * 1024  # one trace file
MAX_SPANS = 100_000  # spans in one import, all files together
MAX_ATTRIBUTE_BYTES = 256 * 1024  # one attribute's value (a string, or an array's strings)
MAX_DEPTH = 64  # nesting of a line's JSON, and of JSON inside an attribute


@dataclass(frozen=True)
class Event:
    name: str
    attributes: Mapping[str, Any]


@dataclass(frozen=True)
class Span:
    """One span: IDs as lowercase hex, attributes as plain values, where it was read."""

    trace_id: str
    span_id: str
    parent_id: str
    name: str
    start: int
    attributes: Mapping[str, Any]
    events: tuple[Event, ...]
    where: str  # file:line (JSON) or file (protobuf)
    error: bool = False  # status code ERROR


@dataclass(frozen=True)
class Skipped:
    """A span (or a part of one) left out, and why."""

    where: str
    span_id: str
    reason: str


@dataclass(frozen=True)
class ToolCall:
    """A call the agent made, with what the tool answered (``result`` or ``error``)."""

    name: str
    arguments: Mapping[str, Any]
    call_id: str
    span_id: str
    result: Any = None
    error: str | None = None
    answered: bool = False


@dataclass(frozen=True)
class Message:
    role: str  # system, user, assistant, tool
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    call_id: str = ""  # a tool message: the call it answers


@dataclass(frozen=True)
class ToolDefinition:
    """A tool as the app declared it to the model (``gen_ai.tool.definitions``,
    OpenInference ``llm.tools`` or a TOOL span's ``tool.parameters``)."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Observed:
    """What one span says (a model call, a tool execution, an agent), in any convention."""

    span: Span
    kind: str  # llm, tool, agent, other
    system: tuple[str, ...] = ()
    inputs: tuple[Message, ...] = ()
    outputs: tuple[Message, ...] = ()
    tool: ToolCall | None = None
    conversation_id: str = ""
    definitions: tuple[ToolDefinition, ...] = ()


@dataclass(frozen=True)
class Conversation:
    """One conversation: a trace, or the traces of one session or conversation ID."""

    key: str
    trace_ids: tuple[str, ...]
    span_ids: tuple[str, ...]
    system: str | None
    user_turns: tuple[str, ...]
    calls: tuple[ToolCall, ...]
    answer: str | None
    where: str
    conversation_id: str = ""
    convention: str = ""
    definitions: Mapping[str, ToolDefinition] = field(default_factory=dict)
