"""OTLP/JSON export requests as instrumentations write them (GenAI conventions, current and
older; OpenInference), built here so that each test states what its trace holds."""

from __future__ import annotations

import json
from typing import Any

TRACE = "0af7651916cd43dd8448eb211c80319c"
TRACE_2 = "4bf92f3577b34da6a3ce929d0e0e4736"


def value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [value(x) for x in v]}}
    if isinstance(v, dict):
        return {"kvlistValue": {"values": [{"key": k, "value": value(x)} for k, x in v.items()]}}
    return {"stringValue": v}


def attrs(mapping: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": value(v)} for k, v in mapping.items()]


def span(
    span_id: str,
    name: str,
    attributes: dict[str, Any],
    *,
    trace: str = TRACE,
    parent: str = "",
    start: int = 0,
    events: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": trace,
        "spanId": span_id,
        "parentSpanId": parent,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + start),
        "endTimeUnixNano": str(1_700_000_000_000_000_000 + start + 1),
        "attributes": attrs(attributes),
        "status": {},
    }
    if events:
        out["events"] = [{"name": e["name"], "attributes": attrs(e["attributes"])} for e in events]
    return out


def request(spans: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": attrs({"service.name": "refund-agent"})},
                "scopeSpans": [{"scope": {"name": "test"}, "spans": spans}],
            }
        ]
    }


def jsonl(*requests: dict[str, Any]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in requests)


def _msgs(*messages: dict[str, Any]) -> str:
    return json.dumps(list(messages), ensure_ascii=False)


def genai_refund(
    trace: str = TRACE,
    question: str = "订单 ORDER_123 的耳机能退吗？我的邮箱是 zhang.san@corp.cn",
    order: str = "ORDER_123",
) -> list[dict[str, Any]]:
    """A GenAI-instrumented agent (semconv 1.37+): one agent span, two chat spans and the
    tool it ran between them."""
    user = {"role": "user", "parts": [{"type": "text", "content": question}]}
    call = {"type": "tool_call", "id": "call_1", "name": "order_lookup",
            "arguments": {"order_id": order}}  # fmt: skip
    result = {"order_id": order, "status": "signed", "contact": "zhang.san@corp.cn"}
    system = json.dumps([{"type": "text", "content": "你是退款助手。"}], ensure_ascii=False)
    return [
        span("a000000000000001", "invoke_agent refund", {"gen_ai.operation.name": "invoke_agent"},
             trace=trace),
        span("a000000000000002", "chat m", {
            "gen_ai.operation.name": "chat", "gen_ai.system_instructions": system,
            "gen_ai.input.messages": _msgs(user),
            "gen_ai.output.messages": _msgs({"role": "assistant", "parts": [call]}),
        }, trace=trace, parent="a000000000000001", start=10),
        span("a000000000000003", "execute_tool order_lookup", {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "order_lookup",
            "gen_ai.tool.call.id": "call_1",
            "gen_ai.tool.call.arguments": json.dumps({"order_id": order}),
            "gen_ai.tool.call.result": json.dumps(result, ensure_ascii=False),
        }, trace=trace, parent="a000000000000001", start=20),
        span("a000000000000004", "chat m", {
            "gen_ai.operation.name": "chat", "gen_ai.system_instructions": system,
            "gen_ai.input.messages": _msgs(
                user, {"role": "assistant", "parts": [call]},
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1",
                                            "response": result}]}),
            "gen_ai.output.messages": _msgs({"role": "assistant", "parts": [
                {"type": "text", "content": "可以退，已为您登记。"}], "finish_reason": "stop"}),
        }, trace=trace, parent="a000000000000001", start=30),
    ]  # fmt: skip


def openinference_refund(trace: str = TRACE_2, session: str = "") -> list[dict[str, Any]]:
    """An OpenInference-instrumented agent (openai-agents style): AGENT, LLM, TOOL, LLM."""
    base = {"session.id": session} if session else {}
    q = "帮我查一下 ORDER_2001 的退款进度"
    llm1 = {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": "You are a refund assistant.",
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": q,
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c1",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "refund_status",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": json.dumps(
            {"order_id": "ORDER_2001", "verbose": True}
        ),
        **base,
    }
    llm2 = {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": q,
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "退款处理中。",
        **base,
    }
    tool = {
        "openinference.span.kind": "TOOL",
        "tool.name": "refund_status",
        "input.value": json.dumps({"order_id": "ORDER_2001", "verbose": True}),
        "output.value": json.dumps({"status": "processing"}),
        **base,
    }
    return [
        span("b000000000000001", "Agent", {"openinference.span.kind": "AGENT",
             "input.value": q, **base}, trace=trace),
        span("b000000000000002", "response", llm1, trace=trace, parent="b000000000000001",
             start=10),
        span("b000000000000003", "refund_status", tool, trace=trace, parent="b000000000000001",
             start=20),
        span("b000000000000004", "response", llm2, trace=trace, parent="b000000000000001",
             start=30),
    ]  # fmt: skip
