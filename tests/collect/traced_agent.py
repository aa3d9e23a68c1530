"""An OpenAI Agents SDK agent instrumented with OpenTelemetry from PyPI (OpenInference's
instrumentation, the SDK's BatchSpanProcessor and the OTLP/HTTP protobuf exporter), run
as its own process: ``python traced_agent.py MODEL_URL OTLP_URL MESSAGE FEEDBACK
[MESSAGE FEEDBACK ...]``, one conversation per pair, in turn (a service's process serves
many).

It answers each user message with two tools (``order_lookup``, ``refund_policy``) and a
model at MODEL_URL; each conversation is under one span ``conversation`` (a trace of its
own) that carries ``user.feedback`` = FEEDBACK when it is not empty (the marking
``collect --only-marked`` keeps), and its spans are exported before the next one starts."""

from __future__ import annotations

import asyncio
import json
import sys

ORDERS = {"A-1001": {"status": "delayed", "eta": "2026-12-12"}}


def main(model_url: str, otlp_url: str, conversations: list[tuple[str, str]]) -> None:
    import agents
    from openai import AsyncOpenAI
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider(resource=Resource.create({"service.name": "shop-assistant"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=otlp_url)))
    trace.set_tracer_provider(provider)
    agents.set_trace_processors([])  # nothing to OpenAI's own trace backend
    OpenAIAgentsInstrumentor().instrument(tracer_provider=provider)

    @agents.function_tool
    def order_lookup(order_id: str) -> str:
        """The status of an order."""
        return json.dumps({"order_id": order_id, **ORDERS.get(order_id, {"status": "unknown"})})

    @agents.function_tool
    def refund_policy(reason: str) -> str:
        """Whether a refund is possible for a reason."""
        return json.dumps({"refundable": reason == "delayed", "reason": reason})

    client = AsyncOpenAI(base_url=model_url, api_key="not-a-key", max_retries=0)
    agent = agents.Agent(
        name="shop-assistant",
        instructions="You help customers with their orders.",
        tools=[order_lookup, refund_policy],
        model=agents.OpenAIChatCompletionsModel(model="scripted", openai_client=client),
    )
    tracer = provider.get_tracer("shop-assistant")
    for message, feedback in conversations:
        with tracer.start_as_current_span("conversation") as span:
            if feedback:
                span.set_attribute("user.feedback", feedback)
            result = asyncio.run(agents.Runner.run(agent, message))
        print(result.final_output)
        provider.force_flush()
    provider.shutdown()


if __name__ == "__main__":
    rest = sys.argv[3:]
    main(sys.argv[1], sys.argv[2], list(zip(rest[::2], rest[1::2], strict=True)))
