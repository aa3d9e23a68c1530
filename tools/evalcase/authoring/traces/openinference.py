"""Spans in the OpenInference conventions (Phoenix, Arize; the openinference-instrumentation-*
packages).

``openinference.span.kind`` ``LLM``, ``TOOL``, ``AGENT`` (others, ``CHAIN`` and the rest,
carry nothing a case needs); ``llm.input_messages.N.message.role`` / ``.content`` (or
``.contents.M.message_content.text``), ``.message.tool_calls.M.tool_call.id`` /
``.function.name`` / ``.function.arguments``, ``.message.tool_call_id``;
``llm.output_messages`` the same; a TOOL span's ``tool.name``, its arguments in
``input.value`` and its result in ``output.value`` (``tool.parameters`` is the tool's JSON
Schema, as the openai-agents instrumentation writes it); an AGENT span's ``input.value``
and ``output.value``; ``session.id`` the conversation.
"""

from __future__ import annotations

from typing import Any

from evalcase.authoring.traces.model import Message, Observed, Span, ToolCall, ToolDefinition
from evalcase.authoring.traces.values import (
    arguments,
    definition,
    items,
    loads,
    nested,
    result,
    text,
)

KIND = "openinference.span.kind"


def recognizes(span: Span) -> bool:
    return KIND in span.attributes


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def observe(span: Span) -> Observed:
    attrs = span.attributes
    kind = _str(attrs.get(KIND)).upper()
    session = _str(attrs.get("session.id"))
    if kind == "TOOL":
        call = ToolCall(
            _str(attrs.get("tool.name")),
            arguments(attrs.get("input.value"), "input.value"),
            _str(attrs.get("tool_call.id") or attrs.get("tool.id")),
            span.span_id,
            result(attrs.get("output.value"), "output.value"),
            "error" if span.error else None,
            "output.value" in attrs or span.error,
        )
        schema = loads(attrs.get("tool.parameters"), "tool.parameters")
        declared = ToolDefinition(
            call.name,
            _str(attrs.get("tool.description")),
            schema if isinstance(schema, dict) else None,
        )
        return Observed(span, "tool", tool=call, conversation_id=session, definitions=(declared,))
    if kind == "AGENT":
        user = text(loads(attrs.get("input.value"), "input.value"))
        answer = text(loads(attrs.get("output.value"), "output.value"))
        return Observed(
            span,
            "agent",
            inputs=(Message("user", user),) if user else (),
            outputs=(Message("assistant", answer),) if answer else (),
            conversation_id=session,
        )
    if kind != "LLM":
        return Observed(span, "other", conversation_id=session)
    inputs = _messages(nested(attrs, "llm.input_messages"), "llm.input_messages")
    outputs = _messages(nested(attrs, "llm.output_messages"), "llm.output_messages")
    system = tuple(m.content for m in inputs if m.role == "system" and m.content)
    inputs = tuple(m for m in inputs if m.role != "system")
    tools = []
    for entry in items(nested(attrs, "llm.tools")):
        schema = entry.get("tool", {}).get("json_schema") if isinstance(entry, dict) else None
        found = definition(loads(schema, "llm.tools json_schema"))
        if found is not None:
            name, description, parameters = found
            tools.append(
                ToolDefinition(
                    name, description, parameters if isinstance(parameters, dict) else None
                )
            )
    return Observed(
        span, "llm", system, inputs, outputs, conversation_id=session, definitions=tuple(tools)
    )


def _messages(flat: dict[str, Any], key: str) -> tuple[Message, ...]:
    out = []
    for entry in items(flat):
        message = entry.get("message") if isinstance(entry, dict) else None
        if not isinstance(message, dict):
            continue
        role = _str(message.get("role"))
        content = message.get("content")
        if content is None:
            parts = [
                p.get("message_content", {}).get("text")
                for p in items(message.get("contents"))
                if isinstance(p, dict) and isinstance(p.get("message_content"), dict)
            ]
            content = "\n".join(p for p in parts if isinstance(p, str))
        calls = []
        for wrapper in items(message.get("tool_calls")):
            call = wrapper.get("tool_call") if isinstance(wrapper, dict) else None
            if not isinstance(call, dict):
                continue
            raw = call.get("function")
            function: dict[str, Any] = raw if isinstance(raw, dict) else {}
            calls.append(
                ToolCall(
                    _str(function.get("name")),
                    arguments(function.get("arguments"), f"{key} tool_call arguments"),
                    _str(call.get("id")),
                    "",
                )
            )
        call_id = _str(message.get("tool_call_id"))
        if role == "tool":
            answered = ToolCall("", {}, call_id, "", result(content, key), None, True)
            out.append(Message("tool", text(content), (answered,), call_id))
        else:
            out.append(Message(role, text(content), tuple(calls), call_id))
    return tuple(out)
