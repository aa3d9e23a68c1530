#!/usr/bin/env python3
"""A support agent on the OpenAI Agents SDK, evaluated as it would be deployed.

The SDK runs its own tool loop. The agent reads what any deployment would give it: the
model endpoint and key from ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` (the official
client's own variables), the model from ``OPENAI_MODEL``, and its tools from an MCP
server at ``EVALCASE_MCP_URL``. Each stdin line is a user turn (the system prompt and the
conversation so far); it answers each with one line, ``{"role": "assistant", "content": ...}``.

A tool input guardrail refuses ``*_cancel`` tools until the customer's latest message
confirms: the model may propose an early cancellation; this agent never makes it.
``--stream`` runs the SDK streamed.

    [run.agents.support_sdk]
    spec = "cmd:{python} examples/support_sdk/agent.py"
    loop = "agent"
    upstream = { base_url = "http://127.0.0.1:8000/v1", api_key_env = "UPSTREAM_KEY" }
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from agents import (
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    Runner,
    ToolGuardrailFunctionOutput,
    set_tracing_disabled,
    tool_input_guardrail,
)
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI

CONFIRM = ("yes", "confirm", "go ahead", "please do", "do it")
latest_user = ""


@tool_input_guardrail
def confirmed_before_cancel(data):  # type: ignore[no-untyped-def]
    if data.context.tool_name.endswith("_cancel") and not any(
        w in latest_user.lower() for w in CONFIRM
    ):
        return ToolGuardrailFunctionOutput.reject_content(
            "Not done: ask the customer to confirm the cancellation first."
        )
    return ToolGuardrailFunctionOutput.allow()


async def main() -> None:
    global latest_user
    set_tracing_disabled(True)
    model = OpenAIChatCompletionsModel(
        model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"), openai_client=AsyncOpenAI()
    )
    stream = "--stream" in sys.argv
    tools = MCPServerStreamableHttp(
        {"url": os.environ["EVALCASE_MCP_URL"]},
        cache_tools_list=True,
        tool_input_guardrails=[confirmed_before_cancel],
    )
    async with tools:
        while line := await asyncio.to_thread(sys.stdin.readline):
            request = json.loads(line)
            messages = request["messages"]
            system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
            turns = [m for m in messages if m["role"] in ("user", "assistant")]
            latest_user = next(m["content"] for m in reversed(turns) if m["role"] == "user")
            agent = Agent(
                name="support",
                instructions=system,
                model=model,
                mcp_servers=[tools],
                model_settings=ModelSettings(temperature=0),
            )
            if stream:
                result = Runner.run_streamed(agent, input=turns, max_turns=12)
                async for _ in result.stream_events():
                    pass
            else:
                result = await Runner.run(agent, input=turns, max_turns=12)
            print(
                json.dumps({"role": "assistant", "content": str(result.final_output)}), flush=True
            )


if __name__ == "__main__":
    asyncio.run(main())
