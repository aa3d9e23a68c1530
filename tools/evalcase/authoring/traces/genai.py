"""Spans in the OpenTelemetry GenAI semantic conventions, current and older.

Current (semconv 1.37 and later): ``gen_ai.operation.name`` ``chat`` (also
``text_completion``, ``generate_content``), ``execute_tool``, ``invoke_agent``;
``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON: ``{role, parts}`` with
parts ``text``, ``tool_call`` ``{id, name, arguments}``, ``tool_call_response``
``{id, response}``), ``gen_ai.system_instructions``, ``gen_ai.tool.name``,
``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``,
``gen_ai.conversation.id``.

Older: ``gen_ai.prompt`` / ``gen_ai.completion`` attributes (a JSON list of messages, or
flattened as ``gen_ai.prompt.0.role``, ``gen_ai.prompt.0.content``,
``gen_ai.completion.0.tool_calls.0.name``...), the ``gen_ai.content.prompt`` /
``gen_ai.content.completion`` events carrying them, and the message events
``gen_ai.system.message``, ``gen_ai.user.message``, ``gen_ai.assistant.message``,
``gen_ai.tool.message`` and ``gen_ai.choice`` (fields as attributes, or in ``body``).
"""

from __future__ import annotations

from collections.abc import Mapping
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

LLM_OPERATIONS = ("chat", "text_completion", "generate_content")
_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def recognizes(span: Span) -> bool:
    attrs = span.attributes
    return any(k.startswith("gen_ai.") for k in attrs) or any(
        e.name.startswith("gen_ai.") for e in span.events
    )


def observe(span: Span) -> Observed:
    """What the span says (``values.BadValue`` for content that cannot be read)."""
    attrs = span.attributes
    operation = attrs.get("gen_ai.operation.name")
    conversation = _str(attrs.get("gen_ai.conversation.id"))
    if operation == "execute_tool" or "gen_ai.tool.call.arguments" in attrs:
        name = _str(attrs.get("gen_ai.tool.name"))
        call = ToolCall(
            name,
            arguments(attrs.get("gen_ai.tool.call.arguments"), "gen_ai.tool.call.arguments"),
            _str(attrs.get("gen_ai.tool.call.id")),
            span.span_id,
            result(attrs.get("gen_ai.tool.call.result"), "gen_ai.tool.call.result"),
            _str(attrs.get("error.type")) or ("error" if span.error else None),
            "gen_ai.tool.call.result" in attrs or span.error,
        )
        return Observed(span, "tool", tool=call, conversation_id=conversation)
    system = _system(attrs.get("gen_ai.system_instructions"))
    inputs = _parts_messages(attrs.get("gen_ai.input.messages"), "gen_ai.input.messages")
    outputs = _parts_messages(attrs.get("gen_ai.output.messages"), "gen_ai.output.messages")
    tools = _definitions(attrs.get("gen_ai.tool.definitions"))
    system += tuple(m.content for m in inputs if m.role == "system" and m.content)
    inputs = tuple(m for m in inputs if m.role != "system")
    if operation in ("invoke_agent", "create_agent"):
        return Observed(
            span, "agent", system, inputs, outputs, conversation_id=conversation, definitions=tools
        )
    if not inputs and not outputs:
        inputs, outputs = _older(span)
    if not inputs and not outputs and operation not in LLM_OPERATIONS:
        return Observed(span, "other", conversation_id=conversation)
    if not system:
        system = tuple(m.content for m in inputs if m.role == "system" and m.content)
        inputs = tuple(m for m in inputs if m.role != "system")
    return Observed(
        span, "llm", system, inputs, outputs, conversation_id=conversation, definitions=tools
    )


def _definitions(value: Any) -> tuple[ToolDefinition, ...]:
    parsed = loads(value, "gen_ai.tool.definitions") if value is not None else None
    found = (definition(entry) for entry in parsed if isinstance(parsed, list)) if parsed else ()
    return tuple(
        ToolDefinition(name, description, parameters if isinstance(parameters, dict) else None)
        for name, description, parameters in filter(None, found)
    )


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def _system(value: Any) -> tuple[str, ...]:
    parsed = loads(value, "gen_ai.system_instructions")
    content = text(parsed)
    return (content,) if content else ()


def _parts_messages(value: Any, key: str) -> tuple[Message, ...]:
    if value is None:
        return ()
    parsed = loads(value, key)
    out = []
    for message in parsed if isinstance(parsed, list) else ():
        if not isinstance(message, dict):
            continue
        role = _str(message.get("role"))
        parts = message.get("parts")
        if not isinstance(parts, list):  # an OpenAI-shaped message
            out.append(_openai_message(message, key))
            continue
        texts: list[str] = []
        calls: list[ToolCall] = []
        for part in parts:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "text":
                texts.append(_str(part.get("content")))
            elif kind == "tool_call":
                calls.append(
                    ToolCall(
                        _str(part.get("name")),
                        arguments(part.get("arguments"), f"{key} tool_call arguments"),
                        _str(part.get("id")),
                        "",
                    )
                )
            elif kind == "tool_call_response":
                out.append(
                    Message(
                        "tool",
                        text(part.get("response")),
                        (
                            ToolCall(
                                "", {}, _str(part.get("id")), "", part.get("response"), None, True
                            ),
                        ),
                        _str(part.get("id")),
                    )
                )
        if texts or calls:
            out.append(Message(role, "\n".join(t for t in texts if t), tuple(calls)))
    return tuple(out)


def _openai_message(message: Mapping[str, Any], key: str) -> Message:
    """``{role, content, tool_calls: [{id, function: {name, arguments}}], tool_call_id}``."""
    calls = []
    for call in items(message.get("tool_calls")):
        if not isinstance(call, dict):
            continue
        raw = call.get("function")
        function: dict[str, Any] = raw if isinstance(raw, dict) else call
        calls.append(
            ToolCall(
                _str(function.get("name")),
                arguments(function.get("arguments"), f"{key} tool_calls arguments"),
                _str(call.get("id")),
                "",
            )
        )
    role = _str(message.get("role"))
    call_id = _str(message.get("tool_call_id") or message.get("id"))
    content = message.get("content")
    if role == "tool":
        answered = ToolCall("", {}, call_id, "", result(content, f"{key} tool content"), None, True)
        return Message("tool", text(content), (answered,), call_id)
    return Message(role, text(content), tuple(calls), call_id)


def _older(span: Span) -> tuple[tuple[Message, ...], tuple[Message, ...]]:
    attrs = span.attributes
    inputs = _old_messages(attrs, "gen_ai.prompt")
    outputs = _old_messages(attrs, "gen_ai.completion")
    for event in span.events:
        if event.name == "gen_ai.content.prompt" and not inputs:
            inputs = _old_messages(event.attributes, "gen_ai.prompt")
        elif event.name == "gen_ai.content.completion" and not outputs:
            outputs = _old_messages(event.attributes, "gen_ai.completion")
        elif event.name in _EVENT_ROLES:
            body = _body(event.attributes)
            inputs += (_openai_message({"role": _EVENT_ROLES[event.name], **body}, event.name),)
        elif event.name == "gen_ai.choice":
            body = _body(event.attributes)
            message = loads(body.get("message"), "gen_ai.choice message")
            if isinstance(message, dict):
                outputs += (_openai_message({"role": "assistant", **message}, event.name),)
    return inputs, outputs


def _body(attributes: Mapping[str, Any]) -> dict[str, Any]:
    body = loads(attributes.get("body", attributes.get("gen_ai.event.content")), "body")
    fields = dict(body) if isinstance(body, dict) else {}
    for key, value in attributes.items():
        if key in ("content", "tool_calls", "id", "tool_call_id", "message", "role"):
            fields.setdefault(key, loads(value, key))
    return fields


def _old_messages(attributes: Mapping[str, Any], prefix: str) -> tuple[Message, ...]:
    whole = attributes.get(prefix)
    if whole is not None:
        parsed = loads(whole, prefix)
        if isinstance(parsed, list):
            return tuple(_openai_message(m, prefix) for m in parsed if isinstance(m, dict))
        if isinstance(parsed, str) and parsed:
            role = "user" if prefix == "gen_ai.prompt" else "assistant"
            return (Message(role, parsed),)
    flat = nested(attributes, prefix)
    return tuple(_openai_message(m, prefix) for m in items(flat) if isinstance(m, dict))
